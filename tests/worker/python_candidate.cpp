// Python candidates (KernelBench's ModelNew, docs/candidates.md): built by running them once,
// embedded in the worker, judged and timed through the same kf_forward path as C++. On the CPU
// with plain torch; tests/gpu/python_candidate.cpp runs Triton and load_inline ones. The
// cheating ones are tests/adversarial/python/.
#include "bridge/kernelbench.hpp"
#include "bridge/torch_helper.hpp"
#include "core/fs.hpp"
#include "device/backend.hpp"
#include "eval/buffers.hpp"
#include "eval/inputs.hpp"
#include "require_python.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"
#include "worker/kernel_library.hpp"

#include <gtest/gtest.h>

#include <variant>

using namespace kforge;

namespace {

class python_candidate : public ::testing::Test {
protected:
  test::cache_env cache;
  test::temp_dir dir;
  worker::evaluate_options opts;
  void SetUp() override {
    REQUIRE_PYTHON_CANDIDATES();
    opts.worker_exe = test::worker_binary();
    opts.time_budget_s = 0.3;
    opts.trials_per_case = 1;
  }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    test::write(dir / name, text);
    return dir / name;
  }
  /// The candidate as the worker loads it, in this process (its build from an evaluation of
  /// `src` on problems/softmax): the interpreter is embedded here, once per test process.
  std::variant<worker::kernel_library, std::string> load_in_process(const std::filesystem::path& src,
                                                                   device::backend& dev) {
    const auto ev = eval_native("softmax", src);
    for (auto& b : ev.builds)
      if (b.role == "candidate" && b.artifact.ok) {
        auto k = worker::load_kernel(b.artifact.library.string(), softmax, dev);
        if (auto* why = std::get_if<std::string>(&k); why && why->find("embeds one Python candidate") != std::string::npos)
          embedded_already = true;
        return k;
      }
    return "no candidate build: " + ev.message;
  }
  problem::problem softmax = problem::load(test::problems_dir() / "softmax");
  bool embedded_already = false; // another test of this process loaded one (ctest runs each alone)
  worker::evaluation eval_native(const std::string& problem, const std::filesystem::path& src, bool time = false) {
    auto o = opts;
    o.time = time;
    return worker::evaluate(problem::load(test::problems_dir() / problem), src, o);
  }
};

const build::artifact* candidate_build(const worker::evaluation& ev) {
  for (auto& b : ev.builds)
    if (b.role == "candidate") return &b.artifact;
  return nullptr;
}

const char* softmax_py = R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
)";

} // namespace

TEST_F(python_candidate, a_plain_torch_model_new_passes_a_native_problem_and_its_build_is_cached) {
  const auto src = write("softmax.py", softmax_py);
  auto ev = eval_native("softmax", src, true);
  ASSERT_TRUE(ev.passed()) << ev.message << "\n" << ev.worker_output;
  const auto* b = candidate_build(ev);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->toolchain, "python");
  EXPECT_FALSE(b->cached);
  EXPECT_NE(b->diagnostics.find("first call (JIT)"), std::string::npos) << b->diagnostics;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  EXPECT_GT(ev.timing("candidate")->samples, 0);
  // The build is the first run; the second evaluation finds it in the cache.
  auto again = eval_native("softmax", src);
  ASSERT_TRUE(again.passed()) << again.message;
  ASSERT_NE(candidate_build(again), nullptr);
  EXPECT_TRUE(candidate_build(again)->cached);
}

TEST_F(python_candidate, params_of_a_native_problem_are_forward_arguments_in_the_problems_order) {
  const auto src = write("layernorm.py", R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, gamma, beta):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-5)
)");
  auto ev = eval_native("layernorm", src);
  EXPECT_TRUE(ev.passed()) << ev.message;
}

TEST_F(python_candidate, an_imported_problems_params_are_model_news_parameters_by_name) {
  auto r = bridge::import_kernelbench(test::source_dir() / "tests" / "bridge" / "data" / "kb_linear_relu.py",
                                      {.out = dir / "lr", .backend = "cpu"});
  auto toml = read_file(r.dir / "problem.toml");
  toml.replace(toml.find("compile = true"), 14, "compile = false");
  test::write(r.dir / "problem.toml", toml);
  const auto p = problem::load(r.dir);
  // KernelBench's solution shape: the same constructor, the same parameter names.
  const auto good = write("lr_new.py", R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias).clamp_min(0) * self.scale
)");
  auto ev = worker::evaluate(p, good, opts);
  EXPECT_TRUE(ev.passed()) << ev.message << "\n" << ev.worker_output;
  // Parameters named otherwise cannot be given the problem's values: said at build time.
  const auto renamed = write("lr_renamed.py", R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.scale
)");
  auto bad = worker::evaluate(p, renamed, opts);
  EXPECT_EQ(bad.status, "build_failed");
  EXPECT_NE(bad.message.find("no parameter or buffer 'linear.weight'"), std::string::npos) << bad.message;
}

TEST_F(python_candidate, a_file_without_model_new_fails_its_build_saying_what_is_missing) {
  auto ev = eval_native("softmax", write("nothing.py", "import torch\n\nclass Model(torch.nn.Module):\n    pass\n"));
  EXPECT_EQ(ev.status, "build_failed");
  EXPECT_NE(ev.message.find("defines class ModelNew"), std::string::npos) << ev.message;
  auto syntax = eval_native("softmax", write("syntax.py", "import torch\nclass ModelNew(torch.nn.Module)\n"));
  EXPECT_EQ(syntax.status, "build_failed");
  EXPECT_NE(syntax.message.find("SyntaxError"), std::string::npos) << syntax.message;
}

TEST_F(python_candidate, a_forward_that_raises_or_returns_the_wrong_outputs_is_a_returned_error_that_says_why) {
  // Raises only after the build's first call: the worker's calls fail, with the traceback.
  auto raises = eval_native("softmax", write("raises.py", R"(import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 1:
            raise ValueError("the second call fails")
        return torch.softmax(x, dim=-1)
)"));
  EXPECT_EQ(raises.status, "returned_error");
  EXPECT_NE(raises.message.find("the second call fails"), std::string::npos) << raises.message;
  auto two = eval_native("softmax", write("two.py", R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.softmax(x, dim=-1)
        return y, y
)"));
  EXPECT_EQ(two.status, "returned_error");
  EXPECT_NE(two.message.find("returned 2 tensors; the problem has 1 outputs"), std::string::npos) << two.message;
}

// The timer is the worker's C++ clock; a candidate that replaces Python's clocks and
// torch.cuda.Event with ones that say "no time passed" is still charged for its 2 ms sleep.
TEST_F(python_candidate, patching_pythons_clocks_does_not_reach_the_timer) {
  auto ev = eval_native("softmax", test::source_dir() / "tests" / "worker" / "data" / "softmax_patches_the_clock.py", true);
  ASSERT_TRUE(ev.passed()) << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  EXPECT_GT(ev.timing("candidate")->median_s, 1.5e-3);
}

// What ModelNew returns in its own memory reaches kforge's buffers through place(), which a
// timed call runs after the timer stopped: the call alone (unplaced) leaves the poison there.
TEST_F(python_candidate, a_returned_tensor_is_copied_into_kforges_outputs_by_place_not_by_the_call) {
  const auto& p = softmax;
  auto dev = device::make_backend(problem::backend_kind::cpu);
  auto loaded = load_in_process(write("softmax.py", softmax_py), *dev);
  if (embedded_already) GTEST_SKIP() << "this process embeds a Python candidate already: run the test alone";
  ASSERT_TRUE(std::holds_alternative<worker::kernel_library>(loaded)) << std::get<std::string>(loaded);
  auto& k = std::get<worker::kernel_library>(loaded);
  ASSERT_TRUE(k.unplaced && k.place);
  eval::tensor_set ts(*dev, p, eval::precision::nominal, 1);
  ts.upload_inputs(eval::make_inputs(p, p.cases[0], 3, eval::precision::nominal));
  for (int round = 0; round < 2; ++round) { // the second: the cached entry, the same array
    ts.poison(0);
    const auto poison = ts.download_outputs()[0].bytes;
    ASSERT_EQ(k.unplaced(&ts.args()), 0) << k.last_error();
    EXPECT_EQ(ts.download_outputs()[0].bytes, poison) << "the call itself wrote kforge's output";
    ASSERT_EQ(k.place(0), 0);
    const auto out = ts.download_outputs()[0];
    ASSERT_NE(out.bytes, poison);
    const auto* y = reinterpret_cast<const float*>(out.bytes.data());
    const auto cols = static_cast<std::size_t>(p.outputs()[0]->shape.back());
    double row = 0;
    for (std::size_t j = 0; j < cols; ++j) row += y[j];
    EXPECT_NEAR(row, 1.0, 1e-4) << "round " << round;
  }
  // forward() is the two together.
  ts.poison(0);
  const auto poison = ts.download_outputs()[0].bytes;
  ASSERT_EQ(k.forward(&ts.args()), 0);
  EXPECT_NE(ts.download_outputs()[0].bytes, poison);
}

// A result that is not a plain byte copy (float64 for a float32 output, a transposed view) is
// converted by Python inside the call, and judged, timed and re-verified like any other.
TEST_F(python_candidate, a_result_of_another_dtype_or_layout_is_converted_and_judged) {
  auto wide = eval_native("softmax", write("wide.py", R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x.double(), dim=-1)
)"), true);
  EXPECT_TRUE(wide.passed()) << wide.message;
  auto strided = eval_native("softmax", write("strided.py", R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty(x.shape[1], x.shape[0], dtype=x.dtype, device=x.device).t()
        y.copy_(torch.softmax(x, dim=-1))
        return y
)"), true);
  EXPECT_TRUE(strided.passed()) << strided.message;
}

// A returned input (or a view of one) is the call's whole work: copied inside the call, so the
// timer sees it, as it sees a kf_forward candidate's copy. (Its own process: one interpreter each.)
TEST_F(python_candidate, a_returned_input_is_copied_inside_the_call) {
  const auto src = write("identity.py", R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.view(-1).view(x.shape)
)");
  const auto& p = softmax;
  auto dev = device::make_backend(problem::backend_kind::cpu);
  auto loaded = load_in_process(src, *dev); // judged 'tolerance' (the ABI allows it; the value is wrong)
  if (embedded_already) GTEST_SKIP() << "this process embeds a Python candidate already: run the test alone";
  ASSERT_TRUE(std::holds_alternative<worker::kernel_library>(loaded)) << std::get<std::string>(loaded);
  auto& k = std::get<worker::kernel_library>(loaded);
  eval::tensor_set ts(*dev, p, eval::precision::nominal, 1);
  const auto in = eval::make_inputs(p, p.cases[0], 3, eval::precision::nominal);
  ts.upload_inputs(in);
  ts.poison(0);
  ASSERT_EQ(k.unplaced(&ts.args()), 0) << k.last_error();
  EXPECT_EQ(ts.download_outputs()[0].bytes, in[0].bytes) << "the copy of an input was left for after the timer";
  EXPECT_EQ(k.place(0), 0);
}

// The Python host keeps what it built for a kf_args address (views, bindings) while the bytes
// there and in its descriptor tables stay the same: a call whose descriptors changed, at the same
// address, must be served from the new ones. (Its own process: one interpreter each.)
TEST_F(python_candidate, a_changed_descriptor_at_the_same_address_is_followed) {
  const auto& p = softmax;
  auto dev = device::make_backend(problem::backend_kind::cpu);
  auto loaded = load_in_process(write("softmax.py", softmax_py), *dev);
  if (embedded_already) GTEST_SKIP() << "this process embeds a Python candidate already: run the test alone";
  ASSERT_TRUE(std::holds_alternative<worker::kernel_library>(loaded)) << std::get<std::string>(loaded);
  auto& k = std::get<worker::kernel_library>(loaded);
  eval::tensor_set first(*dev, p, eval::precision::nominal, 1), second(*dev, p, eval::precision::nominal, 2);
  first.upload_inputs(eval::make_inputs(p, p.cases[0], 3, eval::precision::nominal));
  second.upload_inputs(eval::make_inputs(p, p.cases[0], 4, eval::precision::nominal));
  // One kf_args and one pair of tables, rewritten in place between calls.
  kf_tensor ins[1] = {first.args().inputs[0]}, outs[1] = {first.args().outputs[0]};
  kf_args a = first.args();
  a.inputs = ins;
  a.outputs = outs;
  auto row_sum = [&](eval::tensor_set& ts) {
    const auto out = ts.download_outputs()[0];
    const auto* y = reinterpret_cast<const float*>(out.bytes.data());
    double s = 0;
    for (std::int64_t j = 0; j < p.outputs()[0]->shape.back(); ++j) s += y[j];
    return s;
  };
  first.poison(0);
  second.poison(0);
  ASSERT_EQ(k.forward(&a), 0) << k.last_error();
  EXPECT_NEAR(row_sum(first), 1.0, 1e-4);
  // The same kf_args bytes, a table entry changed: the output now goes to the second set.
  outs[0] = second.args().outputs[0];
  ins[0] = second.args().inputs[0];
  first.poison(0);
  ASSERT_EQ(k.forward(&a), 0) << k.last_error();
  EXPECT_NEAR(row_sum(second), 1.0, 1e-4) << "the call used the descriptors it had cached";
  const auto untouched = first.download_outputs()[0].bytes;
  first.poison(0);
  EXPECT_EQ(first.download_outputs()[0].bytes, untouched) << "the first set's output was written again";
  // The kf_args bytes changed (its tables are the second set's own): followed too.
  a = first.args();
  first.poison(0);
  ASSERT_EQ(k.forward(&a), 0) << k.last_error();
  EXPECT_NEAR(row_sum(first), 1.0, 1e-4);
}
