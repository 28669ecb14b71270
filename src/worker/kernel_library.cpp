#include "worker/kernel_library.hpp"

#include "build/compiler.hpp"
#include "build/launch_plan.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "device/cuda_module.hpp"
#include "worker/python_library.hpp"

#include <dlfcn.h>

namespace kforge::worker {
namespace {

std::variant<kernel_library, std::string> load_shared_object(const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return std::string("dlopen failed: ") + ::dlerror();
  using forward_fn = int (*)(const kf_args*);
  using workspace_fn = size_t (*)(const kf_args*);
  auto forward = reinterpret_cast<forward_fn>(::dlsym(handle, "kf_forward"));
  if (!forward)
    return std::string("the shared object exports no kf_forward (declare it with KF_EXPORT, extern \"C\")");
  kernel_library k;
  k.forward = forward;
  if (auto ws = reinterpret_cast<workspace_fn>(::dlsym(handle, "kf_workspace_bytes"))) k.workspace = ws;
  // Never dlclose: a candidate may have left threads or destructors behind in the library.
  k.keep_alive = std::shared_ptr<void>(handle, [](void*) {});
  return k;
}

// The generic host shim of a kernel-only candidate: evaluate the plan for the call's
// shapes, then launch each kernel in order on the call's stream.
struct cubin_kernel {
  build::launch_plan plan;
  device::cuda_module module;
  std::vector<device::cuda_module::kernel_handle> kernels;
  std::string last_error;

  cubin_kernel(build::launch_plan pl, const std::string& image) : plan(std::move(pl)), module(image) {}

  int forward(const kf_args* a) {
    last_error.clear();
    std::vector<build::resolved_launch> calls;
    try {
      calls = plan.evaluate(*a);
    } catch (const kforge::error& e) {
      last_error = e.what();
      return 1;
    }
    for (std::size_t i = 0; i < calls.size(); ++i) {
      auto& c = calls[i];
      const auto& sizes = kernels[i].param_sizes;
      for (std::size_t j = 0; j < sizes.size(); ++j)
        if (sizes[j] == 4 && static_cast<std::int64_t>(c.params[j]) != static_cast<std::int32_t>(c.params[j])) {
          last_error = fmt::format("{}:{}: argument {} of {} is {}, too large for its 32-bit parameter", plan.file,
                                   plan.launches[i].line, j + 1, plan.launches[i].kernel,
                                   static_cast<std::int64_t>(c.params[j]));
          return 1;
        }
      std::string why;
      if (int rc = module.launch(kernels[i], c.grid, c.block, c.smem, a->stream, c.params, &why); rc != 0) {
        last_error = fmt::format("{}:{}: launch {}: {}", plan.file, plan.launches[i].line, plan.launches[i].kernel, why);
        return rc;
      }
    }
    return 0;
  }
};

std::variant<kernel_library, std::string> load_cubin(const std::string& path, const problem::problem& p) {
  std::shared_ptr<cubin_kernel> ck;
  try {
    auto plan = build::launch_plan::from_json(nlohmann::json::parse(read_file(build::launch_plan_path(path))));
    std::vector<std::string> ins, outs;
    for (auto* t : p.inputs()) ins.push_back(t->name);
    for (auto* t : p.outputs()) outs.push_back(t->name);
    plan.bind(ins, outs);
    ck = std::make_shared<cubin_kernel>(std::move(plan), read_file(path));
    for (auto& l : ck->plan.launches) {
      auto h = ck->module.kernel(l.lowered);
      // The parameter list must match the directive: a mismatch would hand the kernel garbage.
      if (h.param_sizes.size() != l.args.size())
        return fmt::format("{}:{}: {} takes {} parameters but the launch directive passes {}", ck->plan.file, l.line,
                           l.kernel, h.param_sizes.size(), l.args.size());
      for (std::size_t j = 0; j < l.args.size(); ++j) {
        const bool pointer = l.args[j].what != build::launch_arg::kind::integer;
        const auto sz = h.param_sizes[j];
        if ((pointer && sz != 8) || (!pointer && sz != 4 && sz != 8))
          return fmt::format("{}:{}: parameter {} of {} is {} bytes; the directive passes {} (8 bytes){}", ck->plan.file,
                             l.line, j + 1, l.kernel, sz, pointer ? "a pointer" : "an integer",
                             pointer ? "" : "; integer parameters are int or long long");
      }
      ck->kernels.push_back(std::move(h));
    }
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  kernel_library k;
  k.forward = [ck](const kf_args* a) { return ck->forward(a); };
  if (ck->plan.has_workspace) k.workspace = [ck](const kf_args* a) { return ck->plan.workspace_bytes(*a); };
  k.last_error = [ck] { return ck->last_error; };
  k.keep_alive = ck;
  return k;
}

} // namespace

std::variant<kernel_library, std::string> load_kernel(const std::string& path, const problem::problem& p,
                                                     device::backend& dev) {
  if (path.size() > 6 && path.ends_with(".cubin")) return load_cubin(path, p);
  if (path.ends_with(".py")) return load_python(path, p, dev);
  return load_shared_object(path);
}

} // namespace kforge::worker
