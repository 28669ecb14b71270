#pragma once
// Small text helpers for user-facing messages.
#include <cstddef>
#include <string_view>

namespace kforge {

/// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
/// swaps each cost 1 (so a typo "alpah" is 1 from "alpha"). For "did you mean" hints.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// `s` without leading and trailing whitespace (std::isspace): a view into `s`.
[[nodiscard]] std::string_view trim(std::string_view s);

} // namespace kforge
