#include "core/hash.hpp"

#include <openssl/evp.h>

#include <cstdio>

namespace kforge {

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  std::string out;
  out.reserve(2 * n);
  char buf[3];
  for (unsigned i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

hasher& hasher::add(std::string_view part) {
  m_buf += std::to_string(part.size());
  m_buf += ':';
  m_buf += part;
  return *this;
}

} // namespace kforge
