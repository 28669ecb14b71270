// The CUDA backend: plain cudaMalloc allocations, one stream per evaluation (passed to
// candidates in kf_args.stream), CUDA events for time, an L2 scrub before cold samples.
// Every CUDA call is checked; a fault (illegal address, launch failure) is sticky for the
// process, so it surfaces as device::fault and ends the worker, never the run.
#ifdef KFORGE_WITH_CUDA
#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/cuda_backend.hpp"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <chrono>

namespace kforge::device {
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const bool sticky = e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction ||
                      e == cudaErrorMisalignedAddress || e == cudaErrorInvalidAddressSpace ||
                      e == cudaErrorInvalidPc || e == cudaErrorHardwareStackError || e == cudaErrorAssert ||
                      e == cudaErrorLaunchTimeout || e == cudaErrorUnknown;
  std::string msg = fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e));
  if (sticky) throw fault(msg);
  throw kforge::error(error_kind::worker, msg);
}

std::string describe(const cudaDeviceProp& p) {
  return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB, L2 {} MiB)", p.name, p.major, p.minor, p.multiProcessorCount,
                     p.totalGlobalMem / 1073741824.0, p.l2CacheSize >> 20);
}

class cuda_backend final : public backend {
public:
  explicit cuda_backend(int ordinal) : m_ordinal(ordinal) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
      KFORGE_THROW(usage, "no CUDA device is visible on this machine; a backend = \"cuda\" problem needs one");
    if (ordinal >= n) KFORGE_THROW(usage, "CUDA device {} requested, {} visible", ordinal, n);
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    check(cudaGetDeviceProperties(&m_props, ordinal), "cudaGetDeviceProperties");
    // A blocking stream: the legacy default stream (a bare <<<grid, block>>>, the stream of most
    // published load_inline kernels) then waits for every earlier launch on it and every later
    // one waits for the legacy stream's work, so such a kernel is inside the events that time
    // args->stream (launch_guard.cpp accepts it on these grounds and checks the flag).
    check(cudaStreamCreateWithFlags(&m_stream, cudaStreamDefault), "cudaStreamCreate");
    // The stream's own attributes as created, restored after every timed call.
    for (auto& [id, value, known] : m_stream_attrs) {
      known = cudaStreamGetAttribute(m_stream, id, &value) == cudaSuccess;
      // A new stream reads back policy 0 ("none set"), which cannot be set again (seen on the
      // H100: a Spin policy set in a call then stayed); Auto is what an unset policy means.
      if (known && id == cudaStreamAttributeSynchronizationPolicy && value.syncPolicy < cudaSyncPolicyAuto)
        value.syncPolicy = cudaSyncPolicyAuto;
    }
    (void)cudaGetLastError();
    check(cudaEventCreate(&m_start), "cudaEventCreate");
    check(cudaEventCreate(&m_stop), "cudaEventCreate");
    // Twice the L2: writing it evicts every line a previous call left there.
    m_scrub_bytes = 2 * static_cast<std::size_t>(m_props.l2CacheSize);
    check(cudaMalloc(&m_scrub, m_scrub_bytes), "cudaMalloc (L2 scrub buffer)");
  }
  ~cuda_backend() override {
    cudaFree(m_scrub);
    cudaEventDestroy(m_start);
    cudaEventDestroy(m_stop);
    cudaStreamDestroy(m_stream);
  }

  std::string name() const override { return fmt::format("cuda:{}", m_ordinal); }
  std::string description() const override { return describe(m_props); }
  void profiler_range(bool collect) override {
    check(collect ? cudaProfilerStart() : cudaProfilerStop(), collect ? "cudaProfilerStart" : "cudaProfilerStop");
  }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }
  void upload(void* dst, const void* src, std::size_t n) override {
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, m_stream), "cudaMemcpy H2D");
    synchronize();
  }
  void download(void* dst, const void* src, std::size_t n) override {
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, m_stream), "cudaMemcpy D2H");
    synchronize();
  }
  void fill(void* dst, std::uint8_t byte, std::size_t n) override {
    check(cudaMemsetAsync(dst, byte, n, m_stream), "cudaMemset");
  }
  void copy(void* dst, const void* src, std::size_t n) override {
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, m_stream), "cudaMemcpy");
  }
  void* stream() override { return m_stream; }
  void synchronize() override {
    check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize");
    // Work a candidate put on other streams counts too.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  void synchronize_stream() override { check(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize"); }
  void flush_caches(std::span<const memory_region>) override {
    check(cudaMemsetAsync(m_scrub, ++m_scrub_byte, m_scrub_bytes, m_stream), "cudaMemset (L2 scrub)");
  }

  double time_call(const std::function<int()>& fn, int* rc) override {
    // Nothing earlier (poison, L2 scrub) may overlap the call, even one that ignores our stream.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    reset_left_state();
    // The host clock starts before the start event is recorded and stops after the stop event
    // completed, so it brackets the events' interval: read after the record instead, a thread
    // descheduled between the two (seen on an H100: 60-85 us) made an honest call fail the check below.
    const auto h0 = std::chrono::steady_clock::now();
    check(cudaEventRecord(m_start, m_stream), "cudaEventRecord");
    *rc = fn();
    // A device-wide sync before the stop event: work enqueued on any other stream, or
    // still running, lands inside the measured interval.
    check(cudaDeviceSynchronize(), "kernel execution");
    check(cudaEventRecord(m_stop, m_stream), "cudaEventRecord");
    check(cudaEventSynchronize(m_stop), "cudaEventSynchronize");
    const auto h1 = std::chrono::steady_clock::now();
    float ms = 0;
    check(cudaEventElapsedTime(&ms, m_start, m_stop), "cudaEventElapsedTime");
    const double ev = ms * 1e-3, host = std::chrono::duration<double>(h1 - h0).count();
    // Cross-check: the events cannot have seen more time pass than the host clock did.
    if (ev > host * 1.05 + 50e-6)
      throw kforge::error(error_kind::worker,
                          fmt::format("CUDA events measured {:.6g} s but the host clock only {:.6g} s", ev, host));
    m_last_host_s = host;
    reset_left_state();
    return ev;
  }

  /// Device state a call can leave behind for the next sample, and for the reference timed
  /// between its samples in another process: the persisting-L2 set-aside (a carve-out of the
  /// device's L2, so it shrinks everyone's cache) with its persisting lines, and an access-policy
  /// window on our stream, and the stream's other attributes (priority, synchronization policy,
  /// memory-sync domain), back to what they were at creation. Undone before and after every
  /// timed call, outside the timed interval.
  void reset_left_state() {
    cudaStreamAttrValue none{}; // num_bytes 0: no window
    (void)cudaStreamSetAttribute(m_stream, cudaStreamAttributeAccessPolicyWindow, &none);
    for (const auto& [id, value, known] : m_stream_attrs)
      if (known) (void)cudaStreamSetAttribute(m_stream, id, &value);
    (void)cudaCtxResetPersistingL2Cache();
    (void)cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    (void)cudaGetLastError(); // a device without persisting L2 refuses these: not a fault of the call
  }

private:
  int m_ordinal;
  cudaDeviceProp m_props{};
  cudaStream_t m_stream = nullptr;
  struct stream_attr {
    cudaStreamAttrID id;
    cudaStreamAttrValue value;
    bool known;
  };
  stream_attr m_stream_attrs[4] = {{cudaStreamAttributePriority, {}, false},
                                   {cudaStreamAttributeSynchronizationPolicy, {}, false},
                                   {cudaStreamAttributeMemSyncDomain, {}, false},
                                   {cudaStreamAttributeMemSyncDomainMap, {}, false}};
  cudaEvent_t m_start = nullptr, m_stop = nullptr;
  void* m_scrub = nullptr;
  std::size_t m_scrub_bytes = 0;
  std::uint8_t m_scrub_byte = 0;
  double m_last_host_s = 0;
};

} // namespace

std::unique_ptr<backend> make_cuda_backend(int ordinal) { return std::make_unique<cuda_backend>(ordinal); }

int cuda_device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

std::string cuda_device_description(int ordinal) {
  const int n = cuda_device_count();
  if (n == 0) KFORGE_THROW(usage, "no CUDA device is visible on this machine; a backend = \"cuda\" problem needs one");
  if (ordinal < 0 || ordinal >= n) KFORGE_THROW(usage, "CUDA device {} requested, {} visible", ordinal, n);
  cudaDeviceProp props{};
  check(cudaGetDeviceProperties(&props, ordinal), "cudaGetDeviceProperties");
  return describe(props);
}

} // namespace kforge::device
#endif
