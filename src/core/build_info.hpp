#pragma once
// What this kforge was built from, for reports and reproduction notes.
#include <string_view>

namespace kforge {

/// `git describe --always --dirty` of the source tree at build time (e.g. "e04e3b8a1c2d" or
/// "e04e3b8a1c2d-dirty"); empty when it was not built from a git checkout.
[[nodiscard]] std::string_view build_commit();

} // namespace kforge
