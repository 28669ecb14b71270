#pragma once
// Content hashes: build-cache keys and candidate identities.
#include <filesystem>
#include <string>
#include <string_view>

namespace kforge {

/// @return lowercase hex SHA-256 of `data`.
[[nodiscard]] std::string sha256_hex(std::string_view data);

/// @return lowercase hex SHA-256 of the file's bytes, read in pieces.
/// @throws kforge::error (build) naming the file when it cannot be read.
[[nodiscard]] std::string sha256_file(const std::filesystem::path& path);

/// Incremental form: feed parts with explicit lengths so ("ab","c") != ("a","bc").
class hasher {
public:
  hasher& add(std::string_view part);
  [[nodiscard]] std::string hex() const { return sha256_hex(m_buf); }

private:
  std::string m_buf;
};

} // namespace kforge
