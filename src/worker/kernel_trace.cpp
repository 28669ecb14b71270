#include "worker/kernel_trace.hpp"
#include "worker/cupti.hpp"

#include "profile/sass.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#if defined(KFORGE_WITH_CUDA) && __has_include(<cupti_activity.h>)
#define KFORGE_WITH_CUPTI_ACTIVITY 1
#include <cupti_activity.h>
#include <dlfcn.h>
#endif

namespace kforge::worker {

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

} // namespace

std::string library_of(const std::string& n) {
  if (has(n, "cudnn") || has(n, "implicit_convolve") || has(n, "fprop") || has(n, "dgrad") || has(n, "wgrad") ||
      has(n, "fft2d"))
    return "cuDNN";
  if (has(n, "cutlass")) return "CUTLASS";
  // cuBLAS's own kernels: nvjet (Hopper), {ampere,sm80,sm90}_{s,h,xmma_}gemm_*, gemv, gemmSN
  if (has(n, "cublas") || has(n, "nvjet") || has(n, "gemv2") || has(n, "gemmSN") || has(n, "gemmk1") ||
      has(n, "sgemm") || has(n, "hgemm") || has(n, "xmma_gemm") || has(n, "splitKreduce"))
    return "cuBLAS";
  if (has(n, "xmma_")) return "cuDNN";
  if (has(n, "at::native") || has(n, "at_cuda_detail") || has(n, "c10::")) return "ATen";
  if (has(n, "cub::") || has(n, "thrust::")) return "CUB/Thrust";
  if (has(n, "cufft") || has(n, "regular_fft") || has(n, "vector_fft")) return "cuFFT";
  if (has(n, "curand")) return "cuRAND";
  return "";
}

nlohmann::json summarize_kernels(const std::vector<kernel_record>& records, int calls) {
  struct total {
    int launches = 0;
    double gpu_s = 0;
  };
  std::map<std::string, total> by_name;
  for (auto& r : records) {
    auto& t = by_name[r.name];
    ++t.launches;
    t.gpu_s += r.gpu_s;
  }
  const double per = calls > 0 ? 1.0 / calls : 1.0;
  nlohmann::json out = nlohmann::json::array();
  for (auto& [name, t] : by_name)
    out.push_back({{"name", name}, {"launches", t.launches * per}, {"gpu_s", t.gpu_s * per}, {"library", library_of(name)}});
  std::sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) { return a["gpu_s"].get<double>() > b["gpu_s"].get<double>(); });
  return out;
}

#ifdef KFORGE_WITH_CUPTI_ACTIVITY
namespace {

struct activity_api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
};
activity_api g_api;
std::mutex g_mutex;
std::vector<kernel_record> g_records;
bool g_registered = false;

constexpr std::size_t buffer_bytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard lock(g_mutex);
  while (g_api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    // The fields read here sit at the same place in every CUpti_ActivityKernelN.
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    g_records.push_back({k->name ? profile::demangle(k->name) : "?", k->end > k->start ? (k->end - k->start) * 1e-9 : 0.0});
  }
  std::free(buffer);
}

} // namespace

std::unique_ptr<kernel_trace> kernel_trace::start(std::string* why_not) {
  if (!g_registered) {
    void* lib = load_cupti(why_not);
    if (!lib) return nullptr;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      return fn != nullptr;
    };
    if (!get(g_api.register_callbacks, "cuptiActivityRegisterCallbacks") || !get(g_api.enable, "cuptiActivityEnable") ||
        !get(g_api.disable, "cuptiActivityDisable") || !get(g_api.flush_all, "cuptiActivityFlushAll") ||
        !get(g_api.next_record, "cuptiActivityGetNextRecord")) {
      *why_not = "libcupti lacks the activity API";
      return nullptr;
    }
    if (g_api.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
      *why_not = "CUPTI refused the activity buffers (another tool may hold it)";
      return nullptr;
    }
    g_registered = true;
  }
  {
    std::lock_guard lock(g_mutex);
    g_records.clear();
  }
  if (g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    *why_not = "CUPTI refused kernel activity records";
    return nullptr;
  }
  std::unique_ptr<kernel_trace> t(new kernel_trace());
  t->m_on = true;
  return t;
}

nlohmann::json kernel_trace::finish(int calls) {
  if (m_on) {
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    m_on = false;
  }
  std::lock_guard lock(g_mutex);
  auto out = summarize_kernels(g_records, calls);
  g_records.clear();
  return out;
}

kernel_trace::~kernel_trace() {
  if (m_on) (void)finish(1);
}

#else

std::unique_ptr<kernel_trace> kernel_trace::start(std::string* why_not) {
  *why_not = "this kforge was built without CUDA's CUPTI headers";
  return nullptr;
}
nlohmann::json kernel_trace::finish(int) { return nlohmann::json::array(); }
kernel_trace::~kernel_trace() = default;

#endif

} // namespace kforge::worker
