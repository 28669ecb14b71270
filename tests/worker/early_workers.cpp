// Workers started before the candidate's build ends (worker/early_workers.hpp): a deferred job
// starts on a staged build record, imports torch, and loads the candidate only once the build
// has put it in the stage. On the GPU they are a Python candidate's call and timing workers
// (tests/gpu/python_candidate.cpp); here a deferred "verify" worker on the CPU shows the same
// machinery: its sandbox, made before the candidate's file existed, lets it read the file.
#include "build/compiler.hpp"
#include "core/fs.hpp"
#include "require_python.hpp"
#include "test_util.hpp"
#include "worker/build_roles.hpp"
#include "worker/early_workers.hpp"
#include "worker/python_library.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

class early_workers : public ::testing::Test {
protected:
  test::cache_env cache;
  test::temp_dir dir;
  problem::problem softmax = problem::load(test::problems_dir() / "softmax");
  void SetUp() override { REQUIRE_PYTHON_CANDIDATES(); }
  std::filesystem::path candidate() {
    test::write(dir / "softmax.py", R"(import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
)");
    return dir / "softmax.py";
  }
};

} // namespace

TEST_F(early_workers, a_deferred_worker_loads_the_candidate_staged_after_its_sandbox_was_made) {
  const auto src = candidate();
  const auto rq = worker::candidate_request(softmax, src);
  auto plan = build::plan_python_build(rq);
  ASSERT_EQ(plan.why_not, "");
  auto early = worker::stage_python_workers(plan);
  ASSERT_FALSE(std::filesystem::exists(early->library())); // nothing of the candidate yet
  worker::deferred_worker w(test::worker_binary(),
                            {{"role", "verify"},
                             {"problem", softmax.dir.string()},
                             {"libraries", {{"candidate", early->library().string()}}},
                             {"warm_modules", {"torch.utils.cpp_extension"}}},
                            {.timeout_s = 120, .problem = &softmax});
  const auto built = build::compile(rq, build::problem_backend::cpu);
  ASSERT_TRUE(built.ok) << built.diagnostics;
  ASSERT_TRUE(early->stage(built));
  ASSERT_TRUE(std::filesystem::exists(early->library()));
  int outputs = 0;
  std::string errors;
  const nlohmann::json trials = {{{"case", softmax.cases[0].name}, {"seed", 3}, {"trial", 0}}};
  auto s = w.complete({{"device", 0}, {"trials", trials}, {"canary_seed", 5}}, {}, [&](worker::message& m) {
    if (m.header["type"] == "output") ++outputs;
    if (m.header["type"] == "error") errors += m.header.value("message", "") + "\n";
  });
  ASSERT_NE(s, nullptr);
  const auto out = s->finish();
  EXPECT_EQ(out.end, worker::worker_end::done) << out.detail << "\n" << out.output;
  EXPECT_EQ(errors, "");
  EXPECT_EQ(outputs, 2); // the trial's two calls, one output each
}

TEST_F(early_workers, a_build_that_records_another_interpreter_is_not_staged) {
  const auto src = candidate();
  const auto rq = worker::candidate_request(softmax, src);
  auto plan = build::plan_python_build(rq);
  ASSERT_EQ(plan.why_not, "");
  auto other = plan;
  other.record["python"] = "/elsewhere/bin/python3";
  auto early = worker::stage_python_workers(other);
  const auto built = build::compile(rq, build::problem_backend::cpu);
  ASSERT_TRUE(built.ok) << built.diagnostics;
  EXPECT_FALSE(early->stage(built));
  EXPECT_FALSE(std::filesystem::exists(early->library()));
  EXPECT_EQ(early->take_call(), nullptr);
  build::artifact failed;
  EXPECT_FALSE(worker::stage_python_workers(plan)->stage(failed));
}

TEST(early_workers_modules, the_source_names_what_is_imported_before_it) {
  EXPECT_EQ(worker::warm_modules("import torch\nimport triton\nimport triton.language as tl\n"),
            std::vector<std::string>{"triton"});
  EXPECT_EQ(worker::warm_modules("from torch.utils.cpp_extension import load_inline\n"),
            std::vector<std::string>{"torch.utils.cpp_extension"});
  EXPECT_TRUE(worker::warm_modules("import torch\n").empty());
}
