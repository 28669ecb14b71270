#include "worker/launch_guard.hpp"
#include "worker/cupti.hpp"

#include <fmt/format.h>

// CUPTI's headers ship with the CUDA toolkit; a build without them watches nothing and says so.
#if defined(KFORGE_WITH_CUDA) && __has_include(<cupti_callbacks.h>)
#define KFORGE_WITH_CUPTI 1
#endif

#ifdef KFORGE_WITH_CUPTI
#include <cuda.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_result.h>
#include <dlfcn.h>
#endif

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

namespace kforge::worker {

#ifdef KFORGE_WITH_CUPTI
namespace {

// The parameters CUPTI passes for the watched calls, as cuda's generated_cuda_meta.h lays
// them out (that header does not compile on its own: it needs the driver's v1 types).
struct launch_kernel_params { // cuLaunchKernel, cuLaunchCooperativeKernel (the latter lacks `extra`)
  CUfunction f;
  unsigned int grid[3], block[3], shared_bytes;
  CUstream hStream;
};
struct launch_kernel_ex_params {
  const CUlaunchConfig* config;
  CUfunction f;
};
struct graph_launch_params {
  CUgraphExec exec;
  CUstream hStream;
};

// One guard per process (CUPTI allows one subscriber); the callback reads these.
std::atomic<CUstream> g_stream{nullptr};
// The call's stream is a blocking one (cuda_backend creates it so): the legacy default stream
// is then ordered with it both ways (CUDA's implicit synchronisation: a legacy launch waits for
// earlier work on every blocking stream, later blocking work waits for it), so a legacy launch
// is timed and judged as the call's. The per-thread default stream is not: it orders only with
// the legacy stream, never with args->stream.
std::atomic<bool> g_legacy_is_call{false};
std::thread::id g_main;               // the thread that makes the calls
std::atomic<bool> g_in_call{false};   // it is inside kf_forward
std::mutex g_mutex;
std::optional<launch_guard::violation> g_violation; // the first since the last take

struct cupti_api {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enable = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};
cupti_api g_api;

const char* stream_name(CUstream s) {
  if (s == nullptr) return "the legacy default stream (0)";
  if (s == CU_STREAM_PER_THREAD) return "the per-thread default stream";
  if (s == CU_STREAM_LEGACY) return "the legacy default stream";
  return nullptr;
}

// "kernel <name> (cuLaunchKernel)": the kernel, so a reader knows whose launch it was (a
// library's own stream shows as its kernel's name). cuFuncGetName is CUDA 12.3's; looked up at
// run time, the API's name alone where the driver lacks it.
using func_get_name_t = CUresult (*)(const char**, CUfunction);
std::atomic<func_get_name_t> g_func_get_name{nullptr};
// A library-loaded kernel (cuLibraryGetKernel, as cuDNN 9 loads its own) reaches cuLaunchKernel
// as a CUkernel, which cuFuncGetName does not know: cuKernelGetName (CUDA 12.3) does.
using kernel_get_name_t = CUresult (*)(const char**, CUkernel);
std::atomic<kernel_get_name_t> g_kernel_get_name{nullptr};

std::string launch_name(CUpti_CallbackId cbid, const void* params, const char* api) {
  CUfunction f = nullptr;
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    f = static_cast<const launch_kernel_params*>(params)->f;
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    f = static_cast<const launch_kernel_ex_params*>(params)->f;
    break;
  default: break;
  }
  const char* name = nullptr;
  if (auto get = g_func_get_name.load(); get && f && get(&name, f) != CUDA_SUCCESS) name = nullptr;
  if (auto get = g_kernel_get_name.load(); !name && get && f && get(&name, reinterpret_cast<CUkernel>(f)) != CUDA_SUCCESS)
    name = nullptr;
  const std::string call = api ? api : "a launch";
  if (!name) return call;
  std::string n = name;
  if (n.size() > 120) n = n.substr(0, 117) + "...";
  return fmt::format("kernel {} ({})", n, call);
}

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  const bool main = std::this_thread::get_id() == g_main;
  if (main && !g_in_call.load()) return; // kforge's own work between calls
  CUstream s = nullptr;
  switch (cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    s = static_cast<const launch_kernel_params*>(cb->functionParams)->hStream;
    break;
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
    const auto* cfg = static_cast<const launch_kernel_ex_params*>(cb->functionParams)->config;
    s = cfg ? cfg->hStream : nullptr;
    break;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
  case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    s = static_cast<const graph_launch_params*>(cb->functionParams)->hStream;
    break;
  default: return;
  }
  // The per-thread default stream of the calling thread is args->stream only if args->stream is it.
  // On args->stream, a launch is the call's while a call runs; another thread's launch between
  // calls is work that outlives the call, after the timer stopped (or before it started).
  const bool between_calls = !main && !g_in_call.load();
  const bool legacy = s == nullptr || s == CU_STREAM_LEGACY;
  const bool on_call = s == g_stream.load() || (legacy && g_legacy_is_call.load());
  if (on_call && !between_calls) return;
  std::lock_guard lock(g_mutex);
  if (g_violation) return;
  const std::string what = launch_name(cbid, cb->functionParams, cb->functionName);
  if (on_call) {
    g_violation = launch_guard::violation{"deferred_work", fmt::format("{} launched on {} from a thread other than the call's while no call was "
                              "running: work that outlives kf_forward is outside the timed interval; finish it "
                              "(join the thread) before returning",
                              what, legacy ? "the legacy default stream (ordered with args->stream)" : "args->stream")};
    return;
  }
  const char* named = stream_name(s);
  g_violation = launch_guard::violation{
      "side_stream", fmt::format("{} launched on {}{}, not on args->stream{}", what,
                                 named ? named : "stream ", named ? "" : fmt::format("{}", static_cast<void*>(s)),
                                 main ? "" : " (from a thread other than the call's)")};
  // A default stream is what a bare <<<grid, block>>> gets: say what to write instead.
  if (named)
    g_violation->message += "; a launch without a stream argument goes there: pass args->stream (in a Python candidate, "
                   "torch.cuda.current_stream(), or at::cuda::getCurrentCUDAStream() in a load_inline source: kforge "
                   "sets it to args->stream)";
}

constexpr CUpti_CallbackId watched[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};

} // namespace

std::unique_ptr<launch_guard> launch_guard::start(void* call_stream, std::string* why_not) {
  void* lib = load_cupti(why_not);
  if (!lib) return nullptr;
  g_api.subscribe = reinterpret_cast<decltype(g_api.subscribe)>(::dlsym(lib, "cuptiSubscribe"));
  g_api.enable = reinterpret_cast<decltype(g_api.enable)>(::dlsym(lib, "cuptiEnableCallback"));
  g_api.unsubscribe = reinterpret_cast<decltype(g_api.unsubscribe)>(::dlsym(lib, "cuptiUnsubscribe"));
  g_api.result_string = reinterpret_cast<decltype(g_api.result_string)>(::dlsym(lib, "cuptiGetResultString"));
  if (!g_api.subscribe || !g_api.enable || !g_api.unsubscribe) {
    *why_not = "libcupti lacks the callback API";
    return nullptr;
  }
  g_stream = static_cast<CUstream>(call_stream);
  // The driver is loaded already (the backend made the stream), but the runtime opened it
  // RTLD_LOCAL: its symbols are found through its own handle (seen on the H100: RTLD_DEFAULT
  // finds none), which RTLD_NOLOAD takes without loading anything new.
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto sym = [driver](const char* name) { return driver ? ::dlsym(driver, name) : nullptr; };
  using stream_flags_t = CUresult (*)(CUstream, unsigned int*);
  unsigned int flags = CU_STREAM_NON_BLOCKING;
  if (auto get_flags = reinterpret_cast<stream_flags_t>(sym("cuStreamGetFlags")))
    if (get_flags(static_cast<CUstream>(call_stream), &flags) != CUDA_SUCCESS) flags = CU_STREAM_NON_BLOCKING;
  g_legacy_is_call = call_stream != nullptr && (flags & CU_STREAM_NON_BLOCKING) == 0;
  g_func_get_name = reinterpret_cast<func_get_name_t>(sym("cuFuncGetName"));
  g_kernel_get_name = reinterpret_cast<kernel_get_name_t>(sym("cuKernelGetName"));
  g_main = std::this_thread::get_id();
  CUpti_SubscriberHandle sub = nullptr;
  if (CUptiResult r = g_api.subscribe(&sub, on_launch, nullptr); r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    if (g_api.result_string) g_api.result_string(r, &s);
    *why_not = fmt::format("CUPTI refused a subscriber ({}): another tool may hold it", s ? s : "error");
    return nullptr;
  }
  for (auto id : watched)
    if (g_api.enable(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id) != CUPTI_SUCCESS) {
      g_api.unsubscribe(sub);
      *why_not = "CUPTI refused a launch callback";
      return nullptr;
    }
  std::unique_ptr<launch_guard> g(new launch_guard());
  g->m_subscriber = sub;
  return g;
}

launch_guard::~launch_guard() {
  if (m_subscriber) g_api.unsubscribe(static_cast<CUpti_SubscriberHandle>(m_subscriber));
}
void launch_guard::begin_call() { g_in_call = true; }
void launch_guard::end_call() { g_in_call = false; }
std::optional<launch_guard::violation> launch_guard::take_violation() {
  std::lock_guard lock(g_mutex);
  return std::exchange(g_violation, std::nullopt);
}

#else

std::unique_ptr<launch_guard> launch_guard::start(void*, std::string* why_not) {
  *why_not = "this kforge was built without CUDA's CUPTI headers";
  return nullptr;
}
launch_guard::~launch_guard() = default;
void launch_guard::begin_call() {}
void launch_guard::end_call() {}
std::optional<launch_guard::violation> launch_guard::take_violation() { return std::nullopt; }

#endif

} // namespace kforge::worker
