// Python candidates (KernelBench's ModelNew, docs/candidates.md): built by running them once,
// embedded in the worker, judged and timed through the same kf_forward path as C++. On the CPU
// with plain torch; tests/gpu/python_candidate.cpp runs Triton and load_inline ones. The
// cheating ones are tests/adversarial/python/.
#include "bridge/kernelbench.hpp"
#include "bridge/torch_helper.hpp"
#include "core/fs.hpp"
#include "require_python.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

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
