#include "worker/protocol.hpp"

#include "core/error.hpp"
#include "core/subprocess.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace kforge::worker {
namespace {
constexpr char magic[4] = {'K', 'F', 'W', '1'};
constexpr std::size_t max_header = 16u << 20;
constexpr std::uint64_t max_payload = std::uint64_t{64} << 30; // larger than any output kforge allocates

void write_or_throw(int fd, const void* p, std::size_t n) {
  if (!write_all(fd, std::string_view(static_cast<const char*>(p), n)))
    KFORGE_THROW(worker, "result channel closed: {}", std::strerror(errno));
}
} // namespace

nonce make_nonce() {
  std::random_device rd;
  nonce n;
  for (auto& b : n) b = static_cast<std::uint8_t>(rd());
  return n;
}

std::string nonce_hex(const nonce& n) {
  static const char* hexd = "0123456789abcdef";
  std::string s;
  for (auto b : n) {
    s += hexd[b >> 4];
    s += hexd[b & 15];
  }
  return s;
}

std::optional<nonce> nonce_from_hex(const std::string& s) {
  if (s.size() != 32) return std::nullopt;
  nonce n;
  for (std::size_t i = 0; i < 16; ++i) {
    unsigned v = 0;
    if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return std::nullopt;
    n[i] = static_cast<std::uint8_t>(v);
  }
  return n;
}

void channel_writer::send(const nlohmann::json& header, const void* payload, std::size_t bytes) {
  const std::string h = header.dump();
  std::vector<char> frame;
  frame.reserve(4 + 16 + 4 + h.size() + 8);
  frame.insert(frame.end(), magic, magic + 4);
  frame.insert(frame.end(), m_nonce.begin(), m_nonce.end());
  const auto hl = static_cast<std::uint32_t>(h.size());
  frame.insert(frame.end(), reinterpret_cast<const char*>(&hl), reinterpret_cast<const char*>(&hl) + 4);
  frame.insert(frame.end(), h.begin(), h.end());
  const std::uint64_t pl = bytes;
  frame.insert(frame.end(), reinterpret_cast<const char*>(&pl), reinterpret_cast<const char*>(&pl) + 8);
  write_or_throw(m_fd, frame.data(), frame.size());
  if (bytes) write_or_throw(m_fd, payload, bytes);
}

void channel_reader::feed(const char* data, std::size_t n) { m_buf.insert(m_buf.end(), data, data + n); }

std::optional<message> channel_reader::next() {
  if (!m_error.empty() || m_buf.size() < 24) {
    if (m_error.empty() && !m_buf.empty() && std::memcmp(m_buf.data(), magic, std::min<std::size_t>(4, m_buf.size())) != 0)
      m_error = "bytes on the result channel that are not a kforge frame";
    return std::nullopt;
  }
  if (std::memcmp(m_buf.data(), magic, 4) != 0) {
    m_error = "bytes on the result channel that are not a kforge frame";
    return std::nullopt;
  }
  if (std::memcmp(m_buf.data() + 4, m_nonce.data(), 16) != 0) {
    m_error = "a frame on the result channel without this worker's nonce (forged)";
    return std::nullopt;
  }
  std::uint32_t hl;
  std::memcpy(&hl, m_buf.data() + 20, 4);
  if (hl > max_header) {
    m_error = "oversized frame header on the result channel";
    return std::nullopt;
  }
  if (m_buf.size() < 24 + hl + 8) return std::nullopt;
  std::uint64_t pl;
  std::memcpy(&pl, m_buf.data() + 24 + hl, 8);
  if (pl > max_payload) {
    m_error = "a frame on the result channel claiming an impossible payload size";
    return std::nullopt;
  }
  if (m_buf.size() < 24 + hl + 8 + pl) {
    m_buf.reserve(24 + hl + 8 + pl); // one allocation for a large frame, not a doubling series
    return std::nullopt;
  }
  message m;
  m.header = nlohmann::json::parse(m_buf.begin() + 24, m_buf.begin() + 24 + hl, nullptr, false);
  if (m.header.is_discarded() || !m.header.is_object() || !m.header.contains("type")) {
    m_error = "a frame on the result channel whose header is not a JSON message";
    return std::nullopt;
  }
  m.payload.assign(m_buf.begin() + 24 + hl + 8, m_buf.begin() + 24 + hl + 8 + static_cast<std::ptrdiff_t>(pl));
  m_buf.erase(m_buf.begin(), m_buf.begin() + 24 + hl + 8 + static_cast<std::ptrdiff_t>(pl));
  return m;
}

} // namespace kforge::worker
