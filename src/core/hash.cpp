#include "core/hash.hpp"

#include "core/error.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <memory>

namespace kforge {

namespace {
std::string hex_of(const unsigned char* md, unsigned n) {
  std::string out;
  out.reserve(2 * n);
  char buf[3];
  for (unsigned i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}
} // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return hex_of(md, n);
}

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) KFORGE_THROW(build, "{}: cannot read file to hash it", path.string());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    KFORGE_THROW(internal, "OpenSSL: cannot start a SHA-256 digest");
  std::string buf(1 << 16, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) KFORGE_THROW(build, "{}: read error while hashing", path.string());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  return hex_of(md, n);
}

hasher& hasher::add(std::string_view part) {
  m_buf += std::to_string(part.size());
  m_buf += ':';
  m_buf += part;
  return *this;
}

} // namespace kforge
