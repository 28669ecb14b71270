#pragma once
// Small text helpers for user-facing messages, and for text that came from a candidate:
// secrets scrubbed out of it, bytes that are not UTF-8 made showable.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
/// swaps each cost 1 (so a typo "alpah" is 1 from "alpha"). For "did you mean" hints.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// `s` without leading and trailing whitespace (std::isspace): a view into `s`.
[[nodiscard]] std::string_view trim(std::string_view s);

/// The lines of `s`, split at '\n' (kept out), as views into `s`; a final newline makes no
/// empty last line. A '\r' before the newline stays in the line.
[[nodiscard]] std::vector<std::string_view> lines_of(std::string_view s);

// ------------------------------------------------------------------------- secrets
// A candidate that reads a key from its environment (or a file) and prints it must not
// get it into the database, a report or a terminal log. Secret values are those of the
// environment variables whose names look secret, and of any variable named with
// add_secret_variable (an LLM config's key_env), when at least secret_min_length long.

inline constexpr std::size_t secret_min_length = 8;

/// True when the name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, in any case.
[[nodiscard]] bool looks_secret(std::string_view env_name);

/// Treats the value of `env_name` as a secret from now on, whatever its name (process-wide).
void add_secret_variable(std::string_view env_name);

/// `text` with every secret value replaced by "[redacted:NAME]" (the value as it is, and
/// as a JSON string escapes it). Reads the environment on each call, so a key set later
/// is covered too.
///   MY_API_KEY=sk-abcdef123  ->  scrub_secrets("key=sk-abcdef123") == "key=[redacted:MY_API_KEY]"
[[nodiscard]] std::string scrub_secrets(std::string_view text);

/// The same for a JSON document: only inside its strings (keys and values), so the result
/// stays valid JSON with its formatting kept. Text that is not JSON is scrubbed as text.
[[nodiscard]] std::string scrub_secrets_json(std::string_view json_text);

// --------------------------------------------------------------------------- UTF-8
// Candidate output, compiler diagnostics and file names are bytes; JSON and terminals want
// UTF-8. These say whether text is, and make it so for display (never for storage: the
// store keeps a candidate's source byte-exact).

/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
[[nodiscard]] bool is_valid_utf8(std::string_view s);

/// `s` with each byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD.
[[nodiscard]] std::string to_valid_utf8(std::string_view s);

/// A file name for a message: valid UTF-8 as is, else each stray byte as \xHH, so two
/// different names never print the same.  "\xff.cpp" -> "\\xff.cpp"
[[nodiscard]] std::string printable_path(std::string_view path);

} // namespace kforge
