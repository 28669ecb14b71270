// `kforge export --torch`: the extension, module and test script generated for small problems
// written in a temp dir (a native CPU one and a KernelBench-style CUDA one), and the refusal of
// a kernel-only candidate. The generated Python is not run here (that needs torch).
#include "report/torch_export.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace kforge;
namespace fs = std::filesystem;

namespace {

#define EXPECT_HAS(haystack, needle)                                                                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" << (haystack)
#define EXPECT_LACKS(haystack, needle)                                                                  \
  EXPECT_EQ((haystack).find(needle), std::string::npos) << "unexpected '" << (needle) << "' in:\n" << (haystack)

// A CPU problem with params between inputs (ABI order x, gamma, idx, beta), an integer input
// and two outputs of different dtypes.
const char* k_native_toml = R"toml(name = "norm-2"
backend = "cpu"
dtype = "f64"

[[inputs]]
name = "x"
shape = [16, 32]

[[inputs]]
name = "gamma"
shape = [32]
param = true

[[inputs]]
name = "idx"
shape = [16]
dtype = "i32"

[[inputs]]
name = "beta"
shape = [32]
param = true

[[outputs]]
name = "y"
shape = [16, 32]

[[outputs]]
name = "count"
shape = [1]
dtype = "i64"

[[cases]]
name = "standard"
x = "uniform(-2, 2)"
idx = "int_range(0, 15)"
)toml";

// A problem imported from KernelBench: the reference is a PyTorch module.
const char* k_torch_toml = R"toml(name = "conv_bias"
backend = "cuda"
dtype = "f16"

[torch]
module = "model.py"
init_inputs = "[3, 8, 3]"

[[inputs]]
name = "x"
shape = [2, 3, 16, 16]

[[inputs]]
name = "w"
shape = [8, 3, 3, 3]
param = true
torch_name = "conv.weight"

[[inputs]]
name = "b"
shape = [8]
param = true
torch_name = "conv.bias"

[[outputs]]
name = "y"
shape = [2, 8, 14, 14]
)toml";

const char* k_model_py = R"py(import torch

class Model(torch.nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, k)

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.randn(2, 3, 16, 16)]

def get_init_inputs():
    return [3, 8, 3]
)py";

/// A problem dir and an export dir holding a candidate and kforge/kernel.h, as export_best leaves it.
struct exported {
  test::temp_dir tmp;
  problem::problem p;
  fs::path dir;
  std::string kernel_file;

  exported(const std::string& toml, bool cuda, const std::string& candidate = "") {
    const fs::path pdir = tmp / "problem";
    fs::create_directories(pdir);
    test::write(pdir / "problem.toml", toml);
    if (toml.find("[torch]") != std::string::npos) test::write(pdir / "model.py", k_model_py);
    else test::write(pdir / (cuda ? "reference.cu" : "reference.cpp"), "// reference\n");
    p = problem::load(pdir);
    dir = tmp / "export";
    fs::create_directories(dir / "kforge");
    test::write(dir / "kforge" / "kernel.h", read_file(test::source_dir() / "include" / "kforge" / "kernel.h"));
    test::write(dir / "README.md", "# best\n\nHow it measured.\n");
    kernel_file = p.name + std::string("_best") + (cuda ? ".cu" : ".cpp");
    test::write(dir / kernel_file,
                candidate.empty() ? std::string("#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args*) { return 0; }\n")
                                  : candidate);
  }
  [[nodiscard]] std::string file(const std::string& name) const { return read_file(dir / name); }
};

bool contains(const std::vector<fs::path>& files, const fs::path& p) {
  return std::find(files.begin(), files.end(), p) != files.end();
}

/// The text of `hay` from the first `from` on, to check what follows a marker.
std::string after(const std::string& hay, const std::string& from) {
  auto at = hay.find(from);
  return at == std::string::npos ? std::string() : hay.substr(at);
}

} // namespace

TEST(torch_export, extension_name_is_an_identifier) {
  EXPECT_EQ(report::torch_extension_name("softmax"), "kforge_softmax");
  EXPECT_EQ(report::torch_extension_name("norm-2.v1"), "kforge_norm_2_v1");
}

TEST(torch_export, a_native_cpu_problem_gets_every_file) {
  exported e(k_native_toml, false);
  const auto files = report::write_torch_extension(e.p, e.dir, e.kernel_file);
  for (const char* f : {"kforge_ext.cpp", "kforge_module.py", "test_kforge_ext.py", "TORCH.md", "README.md"}) {
    EXPECT_TRUE(fs::is_regular_file(e.dir / f)) << f;
    EXPECT_TRUE(contains(files, e.dir / f)) << f;
  }
  EXPECT_FALSE(fs::exists(e.dir / "reference_model.py")); // a native problem has no module
  EXPECT_EQ(files.back(), e.dir / "README.md");
  EXPECT_TRUE((fs::status(e.dir / "test_kforge_ext.py").permissions() & fs::perms::owner_exec) != fs::perms::none);
}

TEST(torch_export, the_binding_checks_every_tensor_in_abi_order) {
  exported e(k_native_toml, false);
  (void)report::write_torch_extension(e.p, e.dir, e.kernel_file);
  const std::string cpp = e.file("kforge_ext.cpp");
  EXPECT_HAS(cpp, "#include <torch/extension.h>");
  EXPECT_HAS(cpp, "#include <kforge/kernel.h>");
  EXPECT_LACKS(cpp, "ATen/cuda"); // a CPU problem needs no CUDA headers
  EXPECT_HAS(cpp, "extern \"C\" int kf_forward(const kf_args*);");
  EXPECT_HAS(cpp, "extern \"C\" size_t kf_workspace_bytes(const kf_args*) __attribute__((weak));");
  // Inputs and params interleaved in ABI order, each with its ABI dtype, torch dtype and shape.
  const std::string x = "{\"x\", KF_F64, at::kDouble, {16, 32}}";
  const std::string gamma = "{\"gamma\", KF_F64, at::kDouble, {32}}";
  const std::string idx = "{\"idx\", KF_I32, at::kInt, {16}}";
  const std::string beta = "{\"beta\", KF_F64, at::kDouble, {32}}";
  const auto ix = cpp.find(x), ig = cpp.find(gamma), ii = cpp.find(idx), ib = cpp.find(beta);
  ASSERT_NE(ix, std::string::npos) << cpp;
  ASSERT_NE(ig, std::string::npos) << cpp;
  ASSERT_NE(ii, std::string::npos) << cpp;
  ASSERT_NE(ib, std::string::npos) << cpp;
  EXPECT_LT(ix, ig);
  EXPECT_LT(ig, ii);
  EXPECT_LT(ii, ib);
  const std::string outputs = after(cpp, "k_outputs = {");
  EXPECT_HAS(outputs, "{\"y\", KF_F64, at::kDouble, {16, 32}}");
  EXPECT_HAS(outputs, "{\"count\", KF_I64, at::kLong, {1}}");
  EXPECT_LACKS(outputs.substr(0, outputs.find("};")), "\"x\"");
  // The checks: count, dtype and shape (naming the tensor, expected vs got), then the call.
  EXPECT_HAS(cpp, "KF_CHECK_ARG(inputs.size() == k_inputs.size()");
  EXPECT_HAS(cpp, "x, gamma, idx, beta: inputs and params in ABI order");
  EXPECT_HAS(cpp, "t.scalar_type() == s.scalar_type");
  EXPECT_HAS(cpp, "\"': expected dtype \"");
  EXPECT_HAS(cpp, "t.sizes().equals(s.shape)");
  EXPECT_HAS(cpp, "\"': expected shape \"");
  EXPECT_HAS(cpp, ".contiguous()");
  EXPECT_HAS(cpp, "v.strides[d] = t.stride(d)");
  EXPECT_HAS(cpp, "at::empty(k_outputs[i].shape");
  EXPECT_HAS(cpp, "if (kf_workspace_bytes)");
  EXPECT_HAS(cpp, "at::kByte");
  EXPECT_HAS(cpp, "args.stream = nullptr");
  EXPECT_HAS(cpp, "if (rc != 0)");
  EXPECT_HAS(cpp, "kf_forward returned \", rc");
  // Standard exceptions with concatenated messages: TORCH_CHECK's formatting crashed JIT builds.
  EXPECT_LACKS(cpp, "TORCH_CHECK(");
  EXPECT_HAS(cpp, "fail<std::invalid_argument>");
  EXPECT_HAS(cpp, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)");
  EXPECT_HAS(cpp, "m.def(\"forward\"");
}

TEST(torch_export, module_and_test_script_for_a_native_problem) {
  exported e(k_native_toml, false);
  (void)report::write_torch_extension(e.p, e.dir, e.kernel_file);
  const std::string py = e.file("kforge_module.py");
  EXPECT_HAS(py, "EXTENSION_NAME = \"kforge_norm_2\"");
  EXPECT_HAS(py, "BACKEND = \"cpu\"");
  EXPECT_HAS(py, "KERNEL_FILE = \"norm-2_best.cpp\"");
  EXPECT_HAS(py, "cpp_extension.load(**options)");
  EXPECT_HAS(py, "\"-fopenmp\"");
  EXPECT_HAS(py, "EXTRA_LDFLAGS = [\"-fopenmp\"");
  EXPECT_HAS(py, "\"-DKF_REAL=double\"");
  EXPECT_LACKS(py, "fast_math");  // never: the kernel was verified without
  EXPECT_LACKS(py, "extra_cuda_cflags");
  EXPECT_HAS(py, "class KforgeModule(torch.nn.Module):");
  EXPECT_HAS(py, "def __init__(self, reference=None, params=None):");
  // The tensors as a Python literal, in ABI order.
  const std::string tensors = after(py, "TENSORS = [");
  const auto ix = tensors.find("{\"name\": \"x\", \"role\": \"input\", \"dtype\": \"f64\", \"shape\": (16, 32), \"torch_name\": None}");
  const auto ig = tensors.find("{\"name\": \"gamma\", \"role\": \"param\", \"dtype\": \"f64\", \"shape\": (32,), \"torch_name\": None}");
  const auto ii = tensors.find("{\"name\": \"idx\", \"role\": \"input\", \"dtype\": \"i32\", \"shape\": (16,)");
  const auto ib = tensors.find("{\"name\": \"beta\", \"role\": \"param\"");
  const auto iy = tensors.find("{\"name\": \"y\", \"role\": \"output\", \"dtype\": \"f64\", \"shape\": (16, 32)");
  const auto ic = tensors.find("{\"name\": \"count\", \"role\": \"output\", \"dtype\": \"i64\", \"shape\": (1,)");
  for (auto i : {ix, ig, ii, ib, iy, ic}) ASSERT_NE(i, std::string::npos) << py;
  EXPECT_LT(ix, ig);
  EXPECT_LT(ig, ii);
  EXPECT_LT(ii, ib);
  EXPECT_LT(ib, iy);
  EXPECT_LT(iy, ic);

  const std::string test = e.file("test_kforge_ext.py");
  EXPECT_HAS(test, "import kforge_module");
  EXPECT_HAS(test, "print(\"SKIP: torch is not installed");
  EXPECT_HAS(test, "sys.exit(77)");
  EXPECT_HAS(test, "print(\"kforge_ext: OK\")");
  EXPECT_HAS(test, "HAS_REFERENCE = False");
  EXPECT_HAS(test, "no reference module exists for a native kforge problem");
  EXPECT_HAS(test, "RTOL = ATOL = 1e-3");
  EXPECT_HAS(test, "\"x\": (\"uniform\", -2, 2)");
  EXPECT_HAS(test, "\"idx\": (\"int_range\", 0, 15)");
  EXPECT_HAS(test, "torch.isfinite");

  const std::string md = e.file("TORCH.md");
  EXPECT_HAS(md, "python3 test_kforge_ext.py");
  EXPECT_HAS(md, "KforgeModule(params={\"gamma\": gamma, \"beta\": beta})");
  EXPECT_HAS(e.file("README.md"), "TORCH.md");
  // Once: writing it again does not add a second pointer.
  (void)report::write_torch_extension(e.p, e.dir, e.kernel_file);
  const std::string readme = e.file("README.md");
  EXPECT_EQ(readme.find("## PyTorch"), readme.rfind("## PyTorch"));
}

TEST(torch_export, a_torch_cuda_problem_takes_params_by_torch_name) {
  exported e(k_torch_toml, true);
  const auto files = report::write_torch_extension(e.p, e.dir, e.kernel_file);
  EXPECT_TRUE(contains(files, e.dir / "reference_model.py"));
  EXPECT_EQ(e.file("reference_model.py"), k_model_py);

  const std::string cpp = e.file("kforge_ext.cpp");
  EXPECT_HAS(cpp, "#include <ATen/cuda/CUDAContext.h>");
  EXPECT_HAS(cpp, "at::cuda::getCurrentCUDAStream().stream()");
  EXPECT_HAS(cpp, "c10::cuda::CUDAGuard");
  EXPECT_HAS(cpp, "cudaGetLastError()");
  EXPECT_HAS(cpp, "{\"x\", KF_F16, at::kHalf, {2, 3, 16, 16}}");
  EXPECT_HAS(cpp, "{\"w\", KF_F16, at::kHalf, {8, 3, 3, 3}}, // param (module state 'conv.weight')");
  EXPECT_HAS(cpp, "{\"b\", KF_F16, at::kHalf, {8}}, // param (module state 'conv.bias')");
  EXPECT_HAS(after(cpp, "k_outputs"), "{\"y\", KF_F16, at::kHalf, {2, 8, 14, 14}}");

  const std::string py = e.file("kforge_module.py");
  EXPECT_HAS(py, "BACKEND = \"cuda\"");
  EXPECT_HAS(py, "KERNEL_FILE = \"conv_bias_best.cu\"");
  EXPECT_HAS(py, "\"torch_name\": \"conv.weight\"");
  EXPECT_HAS(py, "\"torch_name\": \"conv.bias\"");
  EXPECT_HAS(py, "CUDA_ARCH = \"90a\"");
  EXPECT_HAS(py, "-gencode=arch=compute_{0},code=sm_{0}");
  EXPECT_HAS(py, "options[\"extra_cuda_cflags\"] = EXTRA_CUDA_CFLAGS");
  EXPECT_HAS(py, "\"-std=c++17\"");
  EXPECT_HAS(py, "\"-DKF_REAL=__half\"");
  EXPECT_HAS(py, "reference.named_parameters()");
  EXPECT_HAS(py, "reference.named_buffers()");
  EXPECT_LACKS(py, "fast_math");
  EXPECT_LACKS(py, "-fopenmp");

  const std::string test = e.file("test_kforge_ext.py");
  EXPECT_HAS(test, "HAS_REFERENCE = True");
  EXPECT_HAS(test, "INIT_INPUTS_JSON = \"[3,8,3]\"");
  EXPECT_HAS(test, "import reference_model");
  EXPECT_HAS(test, "torch.manual_seed(0)");
  EXPECT_HAS(test, "torch.testing.assert_close");
  EXPECT_HAS(test, "RTOL = ATOL = 2e-2"); // f16
  EXPECT_HAS(test, "kforge's own verifier is far stricter");
  EXPECT_HAS(test, "torch sees no CUDA device");
  EXPECT_HAS(e.file("TORCH.md"), "KforgeModule(model)");
}

TEST(torch_export, a_cublas_kernel_links_cublas) {
  exported e(k_torch_toml, true,
             "#include <kforge/kernel.h>\n#include <cublas_v2.h>\nKF_EXPORT int kf_forward(const kf_args*) { return 0; }\n");
  (void)report::write_torch_extension(e.p, e.dir, e.kernel_file);
  EXPECT_HAS(e.file("kforge_module.py"), "\"-lcublas\", \"-lcublasLt\"");
}

TEST(torch_export, a_kernel_only_candidate_is_refused) {
  exported e(k_torch_toml, true,
             "// kforge: launch k<<<1, 32>>>(x, y)\n__global__ void k(const __half* x, __half* y) {}\n");
  try {
    (void)report::write_torch_extension(e.p, e.dir, e.kernel_file);
    FAIL() << "a kernel-only candidate was wrapped";
  } catch (const kforge::error& err) {
    EXPECT_EQ(err.kind(), error_kind::usage);
    EXPECT_HAS(std::string(err.what()), "kernel-only");
    EXPECT_HAS(std::string(err.what()), "no kf_forward");
  }
  EXPECT_FALSE(fs::exists(e.dir / "kforge_ext.cpp"));
}

TEST(torch_export, a_missing_kernel_file_is_a_usage_error) {
  exported e(k_native_toml, false);
  try {
    (void)report::write_torch_extension(e.p, e.dir, "nope.cpp");
    FAIL() << "no error for a missing kernel file";
  } catch (const kforge::error& err) {
    EXPECT_EQ(err.kind(), error_kind::usage);
    EXPECT_HAS(std::string(err.what()), "nope.cpp");
  }
}
