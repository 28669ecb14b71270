#pragma once
// Short human-readable renderings for the terminal. --json output never goes through here.
#include "worker/evaluate.hpp"

#include <string>

namespace kforge::cli {

/// `j` as printed by --json: indented, with any byte that is not UTF-8 (a candidate's
/// output, a file name) replaced by U+FFFD instead of throwing.
[[nodiscard]] std::string json_text(const nlohmann::json& j, int indent = 2);
/// 1.234e-3 -> "1.234 ms"; 5.6e-6 -> "5.6 us"
[[nodiscard]] std::string format_seconds(double s);
/// "0.8ms", "120us", "35ns", "1.5s" or a plain number of seconds. @throws kforge::error (usage).
[[nodiscard]] double parse_seconds(const std::string& text);
/// The few lines `kforge eval` prints: verdict, where it failed, timing and speedup.
[[nodiscard]] std::string format_evaluation(const worker::evaluation& ev, const problem::problem& p, int64_t evaluation_id,
                                            const std::string& candidate_label);

} // namespace kforge::cli
