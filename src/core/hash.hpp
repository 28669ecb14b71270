#pragma once
// Content hashes: build-cache keys and candidate identities.
#include <string>
#include <string_view>

namespace kforge {

/// @return lowercase hex SHA-256 of `data`.
[[nodiscard]] std::string sha256_hex(std::string_view data);

/// Incremental form: feed parts with explicit lengths so ("ab","c") != ("a","bc").
class hasher {
public:
  hasher& add(std::string_view part);
  [[nodiscard]] std::string hex() const { return sha256_hex(m_buf); }

private:
  std::string m_buf;
};

} // namespace kforge
