#include "report/torch_export.hpp"

#include "build/compiler.hpp"
#include "build/launch_plan.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>

namespace kforge::report {

namespace {

using problem::backend_kind;
using problem::tensor_role;
using problem::tensor_spec;

/// A Python (and C++) string literal: JSON's escapes are valid in both languages.
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

std::string at_scalar_type(kf_dtype t) {
  switch (t) {
  case KF_F16: return "at::kHalf";
  case KF_BF16: return "at::kBFloat16";
  case KF_F32: return "at::kFloat";
  case KF_F64: return "at::kDouble";
  case KF_I8: return "at::kChar";
  case KF_I32: return "at::kInt";
  case KF_I64: return "at::kLong";
  case KF_U8: return "at::kByte";
  case KF_BOOL: return "at::kBool";
  }
  KFORGE_THROW(internal, "unknown kf_dtype {}", static_cast<int>(t));
}

// The enumerator's name: "KF_" and kforge's dtype name in capitals (f32 -> KF_F32).
std::string abi_dtype(kf_dtype t) {
  std::string s = "KF_";
  for (char c : dtype_name(t)) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string role_name(tensor_role r) {
  switch (r) {
  case tensor_role::input: return "input";
  case tensor_role::param: return "param";
  case tensor_role::output: return "output";
  }
  return "input";
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  return fmt::format("{}", fmt::join(items, sep));
}

std::string names_of(const std::vector<const tensor_spec*>& ts) {
  std::vector<std::string> n;
  for (auto* t : ts) n.push_back(t->name);
  return join(n, ", ");
}

std::string cpp_shape(const std::vector<int64_t>& shape) {
  std::vector<std::string> d;
  for (auto v : shape) d.push_back(std::to_string(v));
  return "{" + join(d, ", ") + "}";
}

std::string py_shape(const std::vector<int64_t>& shape) {
  std::vector<std::string> d;
  for (auto v : shape) d.push_back(std::to_string(v));
  return shape.size() == 1 ? "(" + d[0] + ",)" : "(" + join(d, ", ") + ")";
}

std::string py_list(const std::vector<std::string>& items) {
  std::vector<std::string> q;
  for (auto& s : items) q.push_back(quoted(s));
  return "[" + join(q, ", ") + "]";
}

/// A double as Python reads it back exactly (fmt's shortest round-trip form).
std::string py_number(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  return fmt::format("{}", v);
}

/// The distribution the problem's first case draws `t` from, as the loader resolves it:
/// the case's own entry, else the case named "default", else none (the test's default).
const problem::distribution* first_case_distribution(const problem::problem& p, const tensor_spec& t) {
  if (p.cases.empty()) return nullptr;
  if (auto it = p.cases.front().inputs.find(t.name); it != p.cases.front().inputs.end()) return &it->second;
  for (auto& c : p.cases)
    if (c.name == "default")
      if (auto it = c.inputs.find(t.name); it != c.inputs.end()) return &it->second;
  return nullptr;
}

/// The build flags, mirroring kforge's own (build/compiler.cpp) so the kernel compiles as it
/// did when it was measured, minus what only the harness needs (-Xptxas -v, -lineinfo).
struct flags {
  std::vector<std::string> cflags, cuda_cflags, ldflags;
};

flags build_flags(const problem::problem& p, const std::string& source) {
  flags f;
  const bool cuda = p.backend == backend_kind::cuda;
  const std::string real = fmt::format("-DKF_REAL={}", dtype_c_name(p.dtype));
  if (cuda) {
    f.cflags = {"-O3", real, "-DKF_BACKEND_CUDA=1"};
    // The arch flag is added by kforge_module.py from CUDA_ARCH (one place to change it); any
    // flag naming an arch also stops torch from adding its own -gencode list. torch defines
    // __CUDA_NO_HALF_OPERATORS__ and friends for extensions; kforge's nvcc build does not, and
    // a kernel using half arithmetic needs them undefined. No fast-math flag: the kernel was
    // verified without one.
    f.cuda_cflags = {"-O3",
                     "-std=c++17",
                     "--expt-relaxed-constexpr",
                     real,
                     "-DKF_BACKEND_CUDA=1",
                     "-include",
                     "cuda_fp16.h",
                     "-include",
                     "cuda_bf16.h",
                     "-U__CUDA_NO_HALF_OPERATORS__",
                     "-U__CUDA_NO_HALF_CONVERSIONS__",
                     "-U__CUDA_NO_HALF2_OPERATORS__",
                     "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
                     "-U__CUDA_NO_BFLOAT16_OPERATORS__"};
    f.ldflags = build::vendor_link_flags(source);
  } else {
    // -march=native as kforge built it: a kernel with AVX intrinsics does not compile without.
    f.cflags = {"-O3", "-march=native", "-fopenmp", real, "-DKF_BACKEND_CPU=1"};
    f.ldflags = {"-fopenmp"};
  }
  return f;
}

std::string ext_cpp(const problem::problem& p, const std::string& kernel_file) {
  const bool cuda = p.backend == backend_kind::cuda;
  const auto ins = p.inputs();
  const auto outs = p.outputs();
  std::string s = fmt::format(
      "// kforge_ext.cpp: a PyTorch extension around {},\n"
      "// the best kernel kforge found for problem '{}' ({} backend).\n"
      "// Written by `kforge export --torch`; TORCH.md says how to build and use it.\n"
      "// forward() takes the problem's inputs and params in ABI order and returns its outputs. The\n"
      "// kernel was verified for exactly these shapes and dtypes, so every tensor is checked first.\n",
      kernel_file, p.name, problem::backend_name(p.backend));
  s += "#include <torch/extension.h>\n";
  if (cuda) s += "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n";
  s += "#include <kforge/kernel.h>\n\n#include <cstdint>\n#include <stdexcept>\n#include <string>\n#include <type_traits>\n"
       "#include <vector>\n\n";
  s += "extern \"C\" int kf_forward(const kf_args*);\n";
  s += "// Optional in the ABI: weak, so that a kernel without it still links (and the address is null).\n";
  s += "extern \"C\" size_t kf_workspace_bytes(const kf_args*) __attribute__((weak));\n\n";
  s += "namespace {\n\n";
  // Not TORCH_CHECK, nor c10::str: on the GPU machine this was tried on (torch 2.11 in a venv),
  // a std::ostringstream in a JIT-built extension crashed the process (SIGSEGV), and both
  // format with one. Plain string concatenation and standard exceptions reached Python fine.
  s += R"~(// Errors are standard exceptions: ValueError (std::invalid_argument) for a wrong argument,
// RuntimeError for a failed call. Messages are concatenated strings rather than TORCH_CHECK or
// c10::str, whose std::ostringstream crashed JIT-built extensions where this was tried.
std::string text(const char* s) { return s; }
std::string text(const std::string& s) { return s; }
template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
std::string text(T v) { return std::to_string(v); }
std::string text(at::ScalarType t) { return c10::toString(t); }
std::string text(const at::Device& d) { return d.str(); }
std::string text(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

template <typename E, typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::string message;
  ((message += text(parts)), ...);
  throw E(message);
}
#define KF_CHECK_ARG(cond, ...) \
  do { \
    if (!(cond)) fail<std::invalid_argument>(__VA_ARGS__); \
  } while (0)

)~";
  s += "struct tensor_spec {\n  const char* name;\n  kf_dtype dtype;\n  at::ScalarType scalar_type;\n"
       "  std::vector<int64_t> shape;\n};\n\n";
  s += "// Inputs and params in ABI order: what forward() takes.\nconst std::vector<tensor_spec> k_inputs = {\n";
  for (auto* t : ins) {
    s += fmt::format("    {{{}, {}, {}, {}}}, // {}", quoted(t->name), abi_dtype(t->dtype), at_scalar_type(t->dtype),
                     cpp_shape(t->shape), role_name(t->role));
    if (!t->torch_name.empty()) s += fmt::format(" (module state '{}')", t->torch_name);
    s += "\n";
  }
  s += "};\n// Outputs in ABI order: what forward() returns.\nconst std::vector<tensor_spec> k_outputs = {\n";
  for (auto* t : outs)
    s += fmt::format("    {{{}, {}, {}, {}}},\n", quoted(t->name), abi_dtype(t->dtype), at_scalar_type(t->dtype),
                     cpp_shape(t->shape));
  s += "};\n\n";
  s += R"~(kf_tensor view(const at::Tensor& t, kf_dtype dtype, const char* name) {
  KF_CHECK_ARG(t.dim() <= 8, "kforge_ext: tensor '", name, "' has ", t.dim(), " dimensions; the ABI holds 8");
  kf_tensor v{};
  v.data = t.data_ptr();
  v.dtype = dtype;
  v.ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    v.shape[d] = t.size(d);
    v.strides[d] = t.stride(d); // torch's strides are in elements, as the ABI's
  }
  return v;
}

} // namespace

)~";
  s += fmt::format("std::vector<at::Tensor> kforge_forward(std::vector<at::Tensor> inputs) {{\n"
                   "  KF_CHECK_ARG(inputs.size() == k_inputs.size(), \"kforge_ext.forward: expected \", k_inputs.size(),\n"
                   "               \" tensors ({}: inputs and params in ABI order), got \", inputs.size());\n",
                   names_of(ins));
  if (cuda) {
    s += "  const at::Device device = inputs.empty() ? at::Device(at::kCUDA, c10::cuda::current_device()) : inputs[0].device();\n"
         "  KF_CHECK_ARG(device.is_cuda(), \"kforge_ext.forward: this is a CUDA kernel; the tensors are on \", device);\n"
         "  // The kernel launches on the current device and stream: make them the tensors'.\n"
         "  const c10::cuda::CUDAGuard guard(device);\n";
  } else {
    s += "  const at::Device device = inputs.empty() ? at::Device(at::kCPU) : inputs[0].device();\n"
         "  KF_CHECK_ARG(device.is_cpu(), \"kforge_ext.forward: this is a CPU kernel; the tensors are on \", device);\n";
  }
  s += R"~(  std::vector<at::Tensor> in(inputs.size());
  std::vector<kf_tensor> in_views(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const tensor_spec& s = k_inputs[i];
    const at::Tensor& t = inputs[i];
    KF_CHECK_ARG(t.device() == device, "kforge_ext.forward: tensor '", s.name, "' is on ", t.device(),
                 "; expected ", device, ", where the first tensor is");
    KF_CHECK_ARG(t.scalar_type() == s.scalar_type, "kforge_ext.forward: tensor '", s.name, "': expected dtype ",
                 s.scalar_type, ", got ", t.scalar_type());
    KF_CHECK_ARG(t.sizes().equals(s.shape), "kforge_ext.forward: tensor '", s.name, "': expected shape ",
                 at::IntArrayRef(s.shape), ", got ", t.sizes());
    in[i] = t.contiguous(); // the kernel may assume the row-major layout kforge verified it with
    in_views[i] = view(in[i], s.dtype, s.name);
  }
  const auto options = at::TensorOptions().device(device);
  std::vector<at::Tensor> out(k_outputs.size());
  std::vector<kf_tensor> out_views(k_outputs.size());
  for (size_t i = 0; i < k_outputs.size(); ++i) {
    out[i] = at::empty(k_outputs[i].shape, options.dtype(k_outputs[i].scalar_type));
    out_views[i] = view(out[i], k_outputs[i].dtype, k_outputs[i].name);
  }
  kf_args args{};
  args.inputs = in_views.data();
  args.num_inputs = static_cast<int32_t>(in_views.size());
  args.outputs = out_views.data();
  args.num_outputs = static_cast<int32_t>(out_views.size());
)~";
  if (cuda) s += "  args.stream = at::cuda::getCurrentCUDAStream().stream(); // all work is enqueued here\n";
  else s += "  args.stream = nullptr; // the CPU backend has no stream\n";
  s += R"~(  // Held until the call returns; on CUDA, the caching allocator orders its reuse on the stream.
  at::Tensor workspace;
  if (kf_workspace_bytes) {
    const size_t bytes = kf_workspace_bytes(&args);
    if (bytes > 0) {
      workspace = at::empty({static_cast<int64_t>(bytes)}, options.dtype(at::kByte));
      args.workspace = workspace.data_ptr();
      args.workspace_bytes = bytes;
    }
  }
  const int rc = kf_forward(&args);
  if (rc != 0)
    fail<std::runtime_error>("kforge_ext.forward: kf_forward returned ", rc, " (nonzero: the kernel reported a failure)");
)~";
  if (cuda)
    s += "  // A failed launch surfaces here, naming the call, rather than in some later torch op.\n"
         "  if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess)\n"
         "    fail<std::runtime_error>(\"kforge_ext.forward: kf_forward left a CUDA error: \", cudaGetErrorName(err), \": \",\n"
         "                             cudaGetErrorString(err));\n";
  s += "  return out;\n}\n\n";
  s += fmt::format("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n"
                   "  m.doc() = {};\n"
                   "  m.def(\"forward\", &kforge_forward, {}, pybind11::arg(\"inputs\"));\n"
                   "  m.attr(\"abi_version\") = KF_ABI_VERSION;\n"
                   "}}\n",
                   quoted(fmt::format("kforge's best kernel for problem '{}' ({})", p.name, kernel_file)),
                   quoted(fmt::format("forward([{}]) -> [{}]: inputs and params in ABI order, outputs in ABI order",
                                      names_of(ins), names_of(outs))));
  return s;
}

std::string py_tensors(const problem::problem& p) {
  std::string s = "[\n";
  for (auto& t : p.tensors)
    s += fmt::format("    {{\"name\": {}, \"role\": \"{}\", \"dtype\": \"{}\", \"shape\": {}, \"torch_name\": {}}},\n",
                     quoted(t.name), role_name(t.role), dtype_name(t.dtype), py_shape(t.shape),
                     t.torch_name.empty() ? std::string("None") : quoted(t.torch_name));
  return s + "]";
}

std::string module_py(const problem::problem& p, const std::string& kernel_file, const flags& f) {
  const bool cuda = p.backend == backend_kind::cuda;
  std::string s = fmt::format(R"~(# Written by `kforge export --torch`; TORCH.md says how to build and use it.
"""PyTorch binding of the best kernel kforge found for problem '{name}' ({backend} backend).

load() builds kforge_ext.cpp and {kernel} with torch.utils.cpp_extension (JIT, cached in
./torch_build beside this file); KforgeModule wraps the result as an nn.Module. The kernel was
verified by kforge for exactly the shapes and dtypes in TENSORS: the extension refuses others.
"""
import os

import torch
from torch.utils import cpp_extension

HERE = os.path.dirname(os.path.abspath(__file__))

PROBLEM = {name_q}
BACKEND = "{backend}"
DTYPE = "{dtype}"  # the problem's real type (KF_REAL)
KERNEL_FILE = {kernel_q}
EXTENSION_NAME = {ext_q}

# Inputs and params in ABI order, then outputs in ABI order. A param's torch_name is its key in
# the reference module's state_dict() (None for a problem not imported from PyTorch).
TENSORS = {tensors}
ABI_INPUTS = [t for t in TENSORS if t["role"] != "output"]  # what the extension's forward() takes
INPUTS = [t for t in TENSORS if t["role"] == "input"]  # what KforgeModule.forward() takes
PARAMS = [t for t in TENSORS if t["role"] == "param"]
OUTPUTS = [t for t in TENSORS if t["role"] == "output"]

TORCH_DTYPES = {{
    "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
    "i8": torch.int8, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8, "bool": torch.bool,
}}

)~",
                              fmt::arg("name", p.name), fmt::arg("backend", problem::backend_name(p.backend)),
                              fmt::arg("kernel", kernel_file), fmt::arg("name_q", quoted(p.name)),
                              fmt::arg("dtype", dtype_name(p.dtype)), fmt::arg("kernel_q", quoted(kernel_file)),
                              fmt::arg("ext_q", quoted(torch_extension_name(p.name))),
                              fmt::arg("tensors", py_tensors(p)));
  if (cuda)
    s += "# kforge built and measured the kernel for sm_90a (Hopper: H100, H200); code for an 'a' target runs\n"
         "# on that architecture only. Change it here to build for another GPU, at your own risk: the\n"
         "# kernel was verified on this one.\n"
         "CUDA_ARCH = \"90a\"\n\n";
  s += fmt::format("# kforge's own build flags for this kernel, and no fast-math flag: it was verified without one.\n"
                   "EXTRA_CFLAGS = {}\n",
                   py_list(f.cflags));
  if (cuda)
    s += fmt::format("EXTRA_CUDA_CFLAGS = {} + [\"-gencode=arch=compute_{{0}},code=sm_{{0}}\".format(CUDA_ARCH)]\n",
                     py_list(f.cuda_cflags));
  s += fmt::format("EXTRA_LDFLAGS = {}\n", py_list(f.ldflags));
  s += R"~(
_ext = None


def load(verbose=False):
    """Builds the extension (the first time; later calls and processes reuse ./torch_build) and
    returns it: ext.forward(list of tensors in ABI order) -> list of output tensors."""
    global _ext
    if _ext is None:
        build_dir = os.path.join(HERE, "torch_build")
        os.makedirs(build_dir, exist_ok=True)
        include_paths = [HERE]
        # A kernel using CUTLASS/CuTe needs its headers: kforge reads the same variable.
        if os.environ.get("KFORGE_CUTLASS"):
            include_paths.append(os.environ["KFORGE_CUTLASS"])
        options = dict(
            name=EXTENSION_NAME,
            sources=[os.path.join(HERE, "kforge_ext.cpp"), os.path.join(HERE, KERNEL_FILE)],
            extra_include_paths=include_paths,
            extra_cflags=EXTRA_CFLAGS,
            extra_ldflags=EXTRA_LDFLAGS,
            build_directory=build_dir,
            verbose=verbose,
        )
)~";
  if (cuda) s += "        options[\"extra_cuda_cflags\"] = EXTRA_CUDA_CFLAGS\n";
  s += R"~(        _ext = cpp_extension.load(**options)
    return _ext


class KforgeModule(torch.nn.Module):
    """The kernel as an nn.Module: forward(*inputs) takes the problem's inputs (not its params) in
    ABI order and returns its output, or a tuple of them when there are several.

    The params come from `reference`, a module holding them as parameters or buffers named by
    their torch_name (for a problem not imported from PyTorch, by their name), as kforge's bridge
    loads them, or from `params`, a dict name -> tensor, which wins; each is reshaped to its
    declared shape. They are buffers: .to(device) moves them. The extension checks every
    tensor's dtype, shape and device; it computes no gradients.
    """

    def __init__(self, reference=None, params=None):
        super().__init__()
        self._ext = load()
        params = dict(params or {})
        state = {}
        if reference is not None:
            state = reference.state_dict()
            state.update(dict(reference.named_parameters()))
            state.update(dict(reference.named_buffers()))
        for i, t in enumerate(PARAMS):
            key = t["torch_name"] or t["name"]
            if t["name"] in params:
                value = params[t["name"]]
            elif key in state:
                value = state[key]
            elif reference is not None:
                raise KeyError(
                    "KforgeModule: param '%s' is '%s' in the reference module, which has no such parameter or "
                    "buffer (it has: %s)" % (t["name"], key, ", ".join(state.keys())))
            else:
                raise ValueError(
                    "KforgeModule: param '%s' needs a value: pass reference=<the module> or params={'%s': tensor}"
                    % (t["name"], t["name"]))
            self.register_buffer("_kf_param_%d" % i, torch.as_tensor(value).detach().reshape(t["shape"]))

    def forward(self, *inputs):
        if len(inputs) != len(INPUTS):
            raise TypeError("KforgeModule.forward takes %d inputs (%s), got %d"
                            % (len(INPUTS), ", ".join(t["name"] for t in INPUTS), len(inputs)))
        given = iter(inputs)
        params = iter(getattr(self, "_kf_param_%d" % i) for i in range(len(PARAMS)))
        args = [next(params) if t["role"] == "param" else next(given) for t in ABI_INPUTS]
        outputs = self._ext.forward(args)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def extra_repr(self):
        return "problem=%s, kernel=%s" % (PROBLEM, KERNEL_FILE)
)~";
  return s;
}

std::string test_py(const problem::problem& p) {
  const bool reference = p.torch.has_value();
  const bool low = p.dtype == KF_F16 || p.dtype == KF_BF16;
  std::string dists = "{\n";
  for (auto* t : p.inputs())
    if (auto* d = first_case_distribution(p, *t))
      dists += fmt::format("    {}: (\"{}\", {}, {}),  # {}\n", quoted(t->name), problem::distribution_name(d->kind),
                           py_number(d->a), py_number(d->b), d->text);
  dists += "}";

  std::string s = fmt::format(R"~(#!/usr/bin/env python3
# Written by `kforge export --torch`.
"""Smoke check of the PyTorch binding of kforge's best kernel for problem '{name}': builds the
extension and runs it {what}.

    python3 test_kforge_ext.py [-v]      (-v shows the build)

Prints "kforge_ext: OK" and exits 0 when it passes; exits 77 with "SKIP: ..." when torch is not
installed{skip_cuda}; exits 1 with the reason otherwise.
"""
import json
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch
except Exception as e:  # not installed, or an install that fails to import
    print("SKIP: torch is not installed (%s)" % e)
    sys.exit(77)

import kforge_module as km

HAS_REFERENCE = {has_reference}
INIT_INPUTS_JSON = {init_inputs}  # Model(*init_inputs)
# kforge's own verifier is far stricter (a float64 oracle, an error budget relative to the
# reference's own error, several input distributions, poisoned outputs): this tolerance only
# checks the binding (argument order, params, dtypes, streams), not the kernel's accuracy.
RTOL = ATOL = {tol}
# The first case's input distributions in problem.toml (others: normal(0, 1), or int_range(0, 9)
# for integers), for the check on random inputs.
DISTRIBUTIONS = {dists}


def device():
    return "cuda" if km.BACKEND == "cuda" else "cpu"


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def draw(t, dev):
    """Random values for tensor spec t, from its distribution, at its dtype."""
    real = t["dtype"] in ("f16", "bf16", "f32", "f64")
    kind, a, b = DISTRIBUTIONS.get(t["name"], ("normal", 0, 1) if real else ("int_range", 0, 9))
    shape = tuple(t["shape"])
    f64 = dict(dtype=torch.float64, device=dev)
    if kind == "int_range":
        x = torch.randint(int(a), int(b) + 1, shape, dtype=torch.int64, device=dev)
    elif kind == "uniform":
        x = a + (b - a) * torch.rand(shape, **f64)
    elif kind == "log_uniform":
        mag = torch.exp(math.log(a) + (math.log(b) - math.log(a)) * torch.rand(shape, **f64))
        x = torch.where(torch.rand(shape, **f64) < 0.5, -mag, mag)
    elif kind == "logits":
        x = a * torch.randn(shape, **f64)
    elif kind == "sparse":
        x = b * torch.randn(shape, **f64) * (torch.rand(shape, **f64) < a)
    else:  # normal(mean, std), offset(mean, std)
        x = a + b * torch.randn(shape, **f64)
    return x.to(km.TORCH_DTYPES[t["dtype"]])


def check_reference():
    """Our outputs against the reference module's, on its own get_inputs()."""
    import reference_model

    # As kforge's bridge runs the reference: fp32 means fp32, no TF32 in matmul or cuDNN.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    torch.manual_seed(0)
    dev = device()
    model = reference_model.Model(*json.loads(INIT_INPUTS_JSON))
    inputs = list(reference_model.get_inputs())
    if len(inputs) != len(km.INPUTS):
        raise RuntimeError("get_inputs() gave %d values; the problem has %d inputs (%s)"
                           % (len(inputs), len(km.INPUTS), ", ".join(t["name"] for t in km.INPUTS)))
    # The problem's dtype for the module's state and for each input (as declared in problem.toml).
    model = model.to(device=dev, dtype=km.TORCH_DTYPES[km.DTYPE])
    inputs = [x.to(device=dev, dtype=km.TORCH_DTYPES[t["dtype"]]) if torch.is_tensor(x) else x
              for x, t in zip(inputs, km.INPUTS)]
    with torch.no_grad():
        reference = as_tuple(model(*inputs))
        ours = as_tuple(km.KforgeModule(model)(*inputs))
    if len(reference) != len(ours):
        raise RuntimeError("the reference module returned %d outputs, the kernel %d" % (len(reference), len(ours)))
    for t, r, o in zip(km.OUTPUTS, reference, ours):
        try:
            torch.testing.assert_close(o, r, rtol=RTOL, atol=ATOL, check_dtype=False)
        except AssertionError as e:
            raise AssertionError("output '%s' differs from the reference module's:\n%s" % (t["name"], e)) from None


def check_native():
    """No reference module: the outputs have the declared shapes and dtypes and are finite."""
    print("no reference module exists for a native kforge problem: checking shapes, dtypes and finiteness only")
    torch.manual_seed(0)
    dev = device()
    drawn = {{t["name"]: draw(t, dev) for t in km.ABI_INPUTS}}
    module = km.KforgeModule(params={{t["name"]: drawn[t["name"]] for t in km.PARAMS}})
    with torch.no_grad():
        outputs = as_tuple(module(*[drawn[t["name"]] for t in km.INPUTS]))
    if len(outputs) != len(km.OUTPUTS):
        raise RuntimeError("got %d outputs, expected %d" % (len(outputs), len(km.OUTPUTS)))
    for t, o in zip(km.OUTPUTS, outputs):
        if tuple(o.shape) != tuple(t["shape"]) or o.dtype != km.TORCH_DTYPES[t["dtype"]]:
            raise RuntimeError("output '%s' is %s %s, expected %s %s" % (
                t["name"], o.dtype, tuple(o.shape), km.TORCH_DTYPES[t["dtype"]], tuple(t["shape"])))
        if o.is_floating_point() and not bool(torch.isfinite(o).all()):
            raise RuntimeError("output '%s' has %d non-finite values" % (t["name"], int((~torch.isfinite(o)).sum())))


def main():
    if km.BACKEND == "cuda" and not torch.cuda.is_available():
        print("SKIP: this is a CUDA kernel and torch sees no CUDA device")
        return 77
    try:
        km.load(verbose="-v" in sys.argv[1:])
        if HAS_REFERENCE:
            check_reference()
        else:
            check_native()
    except Exception as e:
        traceback.print_exc()
        print("kforge_ext: FAILED: %s: %s" % (type(e).__name__, e))
        return 1
    print("kforge_ext: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
)~",
                              fmt::arg("name", p.name),
                              fmt::arg("what", reference ? "against the reference module (reference_model.py)"
                                                         : "on random inputs of the declared shapes"),
                              fmt::arg("skip_cuda", p.backend == backend_kind::cuda ? " or sees no CUDA device" : ""),
                              fmt::arg("has_reference", reference ? "True" : "False"),
                              fmt::arg("init_inputs", quoted(reference ? p.torch->init_inputs : std::string("[]"))),
                              fmt::arg("tol", low ? "2e-2" : "1e-3"), fmt::arg("dists", dists));
  return s;
}

std::string torch_md(const problem::problem& p, const std::string& kernel_file, const std::string& ext_name) {
  const bool cuda = p.backend == backend_kind::cuda;
  std::string usage_inputs;
  for (auto* t : p.inputs())
    if (t->role == tensor_role::input) usage_inputs += (usage_inputs.empty() ? "" : ", ") + t->name;
  std::string s = "# PyTorch extension\n\n";
  s += fmt::format("`kforge export --torch` wrapped `{}` as a PyTorch C++ extension, `{}`:\n\n", kernel_file, ext_name);
  s += "| file | |\n|---|---|\n";
  s += "| `kforge_ext.cpp` | `forward(list of tensors)`: checks each tensor's dtype, shape and device, calls "
       "`kf_forward` and returns the outputs |\n";
  s += "| `kforge_module.py` | `load()` builds it; `KforgeModule` wraps it as an `nn.Module` |\n";
  s += "| `test_kforge_ext.py` | a smoke check of the binding |\n";
  if (p.torch) s += "| `reference_model.py` | the PyTorch module the problem was imported from |\n";
  s += "\n## Build and test\n\n";
  s += "It needs PyTorch, ninja and a C++ compiler";
  if (cuda) s += ", and nvcc from a CUDA toolkit that matches torch's (`torch.version.cuda`) on a Hopper GPU";
  s += ". The first `load()` compiles it (about a minute) into `torch_build/` here; later ones reuse it.\n\n";
  s += "```sh\npython3 test_kforge_ext.py      # prints kforge_ext: OK (77 and SKIP: without torch";
  if (cuda) s += " or a GPU";
  s += ")\npython3 test_kforge_ext.py -v   # the same, showing the build commands\n```\n\n";
  if (p.torch)
    s += "The test runs the reference module (`Model(*init_inputs)`, `get_inputs()`, seed 0) and the kernel on the "
         "same inputs, and compares them with `torch.testing.assert_close` at a loose tolerance: kforge's own "
         "verifier, which accepted the kernel, is far stricter. This checks the binding.\n\n";
  else
    s += "The problem was written for kforge, so there is no reference module: the test draws inputs from the "
         "first case's distributions and checks the outputs' shapes, dtypes and finiteness.\n\n";
  s += "## Use\n\n```python\nimport kforge_module  # with this folder on sys.path\n\n";
  if (p.torch)
    s += fmt::format("kernel = kforge_module.KforgeModule(model)  # params from the model by torch_name\n"
                     "y = kernel({})\n",
                     usage_inputs);
  else {
    std::string params;
    for (auto* t : p.inputs())
      if (t->role == tensor_role::param) params += fmt::format("{}\"{}\": {}", params.empty() ? "" : ", ", t->name, t->name);
    s += fmt::format("kernel = kforge_module.KforgeModule(params={{{}}})\ny = kernel({})\n", params, usage_inputs);
  }
  s += "\n# or, without the module: tensors (inputs and params) in ABI order, a list of outputs back\n";
  s += fmt::format("outputs = kforge_module.load().forward([{}])\n```\n\n", names_of(p.inputs()));
  s += "The tensors, in ABI order:\n\n| tensor | role | dtype | shape | module state |\n|---|---|---|---|---|\n";
  for (auto& t : p.tensors) {
    std::vector<std::string> d;
    for (auto v : t.shape) d.push_back(std::to_string(v));
    s += fmt::format("| `{}` | {} | {} | [{}] | {} |\n", t.name, role_name(t.role), dtype_name(t.dtype), join(d, ", "),
                     t.torch_name.empty() ? std::string("-") : "`" + t.torch_name + "`");
  }
  s += "\nWhat to know:\n\n";
  s += "- Only these shapes and dtypes: kforge verified the kernel for them, so the extension refuses any other "
       "(a `ValueError` naming the tensor, what it expected and what it got). Non-contiguous inputs are copied "
       "to contiguous ones first. A nonzero return from `kf_forward` is a `RuntimeError`.\n";
  if (cuda)
    s += "- It runs on the tensors' device and torch's current stream there, so it is ordered with the torch work "
         "around it like any torch op. It was built for `sm_90a` (`CUDA_ARCH` in `kforge_module.py`).\n";
  else
    s += "- It runs on the CPU with OpenMP (`OMP_NUM_THREADS` sets the threads), built with `-march=native`: build it "
         "on the machine that runs it.\n";
  s += "- Forward only: the outputs carry no gradient.\n";
  if (cuda)
    s += "- A kernel that includes CUTLASS/CuTe headers needs `KFORGE_CUTLASS` set to their include folder before "
         "`load()`.\n";
  return s;
}

} // namespace

std::string torch_extension_name(const std::string& problem_name) {
  std::string s = "kforge_" + problem_name;
  for (auto& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  return s;
}

std::vector<std::filesystem::path> write_torch_extension(const problem::problem& p, const std::filesystem::path& dir,
                                                         const std::string& kernel_file) {
  const auto kernel_path = dir / kernel_file;
  if (!std::filesystem::is_regular_file(kernel_path))
    KFORGE_THROW(usage, "{}: no such file: the torch extension wraps the exported candidate, so export it first",
                 kernel_path.string());
  const std::string source = read_file(kernel_path);
  if (build::declares_launches(source))
    KFORGE_THROW(usage,
                 "{}: a kernel-only candidate (`// kforge: launch` directives) cannot be wrapped for PyTorch: it has "
                 "no kf_forward, its kernels are launched by kforge's own host shim; launch them from your own host "
                 "code (README.md shows how)",
                 kernel_path.string());
  if (!std::filesystem::is_regular_file(dir / "kforge" / "kernel.h"))
    KFORGE_THROW(usage, "{}: missing; the extension compiles with -I{} (kforge export writes it)",
                 (dir / "kforge" / "kernel.h").string(), dir.string());

  std::vector<std::filesystem::path> files;
  auto put = [&](const std::filesystem::path& path, const std::string& text) {
    write_file_atomic(path, text);
    files.push_back(path);
  };
  const std::string ext_name = torch_extension_name(p.name);
  put(dir / "kforge_ext.cpp", ext_cpp(p, kernel_file));
  put(dir / "kforge_module.py", module_py(p, kernel_file, build_flags(p, source)));
  put(dir / "test_kforge_ext.py", test_py(p));
  std::filesystem::permissions(dir / "test_kforge_ext.py", std::filesystem::perms::owner_exec | std::filesystem::perms::group_exec |
                                                               std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  if (p.torch) put(dir / "reference_model.py", read_file(p.torch->module));
  put(dir / "TORCH.md", torch_md(p, kernel_file, ext_name));

  // A pointer from the README export_best wrote, once (a second --torch export rewrites the
  // README first, so this never stacks).
  const auto readme = dir / "README.md";
  if (std::filesystem::is_regular_file(readme)) {
    std::string text = read_file(readme);
    if (text.find("TORCH.md") == std::string::npos) {
      if (!text.empty() && text.back() != '\n') text += "\n";
      text += "\n## PyTorch\n\n`kforge_module.py` wraps this kernel as a PyTorch extension (`KforgeModule`, an "
              "`nn.Module`); `python3 test_kforge_ext.py` builds and checks it. `TORCH.md` says more.\n";
      put(readme, text);
    }
  }
  return files;
}

} // namespace kforge::report
