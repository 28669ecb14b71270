#pragma once
// kforge's exception: every infrastructure or user-input failure carries a message a
// user can act on, prefixed with the source location that raised it.
//   KFORGE_THROW(problem_error, "{}: key '{}': {}", file, key, reason);
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace kforge {

enum class error_kind { usage, problem, build, worker, store, internal };

class error : public std::runtime_error {
public:
  error(error_kind k, std::string msg) : std::runtime_error(std::move(msg)), m_kind(k) {}
  [[nodiscard]] error_kind kind() const { return m_kind; }

private:
  error_kind m_kind;
};

} // namespace kforge

// Throws kforge::error of kind KIND with a fmt-formatted message. User-facing errors
// (bad problem.toml, missing file) keep the message clean; the location goes to
// internal errors only, where it helps a developer and confuses nobody else.
#define KFORGE_THROW(KIND, ...)                                                          \
  throw ::kforge::error(::kforge::error_kind::KIND, ::fmt::format(__VA_ARGS__))

#define KFORGE_ASSERT(cond)                                                              \
  do {                                                                                   \
    if (!(cond))                                                                         \
      throw ::kforge::error(::kforge::error_kind::internal,                              \
                            ::fmt::format("{}:{}: assertion failed: {}", __FILE__,       \
                                          __LINE__, #cond));                             \
  } while (0)
