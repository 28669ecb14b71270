// The CPU backend: host memory and the steady clock. Candidates run in the worker's
// own threads (OpenMP), so "device work" is complete when kf_forward returns.
#include "core/error.hpp"
#include "core/fs.hpp"
#include "device/backend.hpp"
#include "device/cpu_backend.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <immintrin.h>

namespace kforge::device {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown CPU";
}

class cpu_backend final : public backend {
public:

  std::string name() const override { return "cpu"; }
  std::string description() const override { return cpu_model(); }

  void* allocate(std::size_t bytes) override {
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!p) KFORGE_THROW(worker, "cpu backend: out of memory allocating {} bytes", bytes);
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void download(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void fill(void* dst, std::uint8_t byte, std::size_t n) override { std::memset(dst, byte, n); }
  void copy(void* dst, const void* src, std::size_t n) override { std::memcpy(dst, src, n); }
  void* stream() override { return nullptr; }
  void synchronize() override {}
  void synchronize_stream() override {}

  void flush_caches(std::span<const memory_region> touched) override {
    // Evict exactly what the call can touch, line by line, from every cache level:
    // cheaper and more exact than sweeping a buffer larger than the LLC (which on a
    // big server part is hundreds of MB per sample).
    for (auto& r : touched)
      for (std::size_t off = 0; off < r.bytes; off += 64) _mm_clflush(static_cast<const char*>(r.data) + off);
    _mm_mfence();
  }

  double time_call(const std::function<int()>& fn, int* rc) override {
    const auto t0 = std::chrono::steady_clock::now();
    *rc = fn();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count();
  }
};

} // namespace

std::unique_ptr<backend> make_cpu_backend() { return std::make_unique<cpu_backend>(); }

} // namespace kforge::device
