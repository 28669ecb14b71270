// Problem screening: every shipped CPU problem rejects every control kernel, and weak
// problems made here on purpose (an answer that ignores the input, a tolerance that admits
// anything, an identity) are flagged, naming the control that passed.
// To add a weak problem: write it with weak_problem() and assert which controls pass.
#include "build/compiler.hpp"
#include "test_util.hpp"
#include "worker/screen.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace kforge;

namespace {

worker::evaluate_options options() {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.seed = 20240601;
  return o;
}

std::map<std::string, worker::control_result> by_name(const worker::screening& s) {
  std::map<std::string, worker::control_result> m;
  for (auto& c : s.controls) m[c.name] = c;
  return m;
}

// A CPU problem x[32, 16] -> y[32, 16] whose reference computes `body` per element (x[i]
// in, y[i] out), with extra problem.toml lines appended.
std::filesystem::path weak_problem(const test::temp_dir& d, const std::string& body, const std::string& extra = "") {
  const auto dir = d / "weak";
  test::write(dir / "problem.toml", "name = \"weak\"\nbackend = \"cpu\"\n"
                                    "[[inputs]]\nname = \"x\"\nshape = [32, 16]\n"
                                    "[[outputs]]\nname = \"y\"\nshape = [32, 16]\n"
                                    "[[cases]]\nname = \"standard\"\nx = \"normal(0, 1)\"\n"
                                    "[eval]\ntrials_per_case = 1\n" +
                                        extra);
  test::write(dir / "reference.cpp", "#include <kforge/kernel.h>\n"
                                     "KF_EXPORT int kf_forward(const kf_args* a) {\n"
                                     "  const KF_REAL* x = (const KF_REAL*)a->inputs[0].data;\n"
                                     "  KF_REAL* y = (KF_REAL*)a->outputs[0].data;\n"
                                     "  for (long i = 0; i < 32 * 16; ++i) { " +
                                         body +
                                         " }\n"
                                         "  return 0;\n}\n");
  return dir;
}

} // namespace

TEST(screen, controls_dir_holds_every_control_for_both_backends) {
  const auto dir = worker::controls_dir();
  for (auto name : {"zeros", "input_copy", "constant", "uninitialised", "other_seed"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "cpu" / (std::string(name) + ".cpp"))) << dir << " " << name;
    EXPECT_TRUE(std::filesystem::exists(dir / "cuda" / (std::string(name) + ".cu"))) << dir << " " << name;
  }
}

TEST(screen, every_shipped_cpu_problem_rejects_every_control) {
  for (auto name : {"gelu", "softmax", "layernorm"}) {
    const auto p = problem::load(test::problems_dir() / name);
    const auto s = worker::screen(p, options());
    EXPECT_TRUE(s.ok()) << name << ": " << s.summary();
    EXPECT_EQ(s.summary(), "every control fails") << name;
    ASSERT_EQ(s.controls.size(), 5u) << name;
    for (auto& c : s.controls) {
      EXPECT_EQ(c.verdict, worker::control_verdict::fails) << name << " " << c.name << ": " << c.status << ": " << c.message;
      // Writing nothing leaves the poison; every other control writes a finite wrong answer.
      EXPECT_EQ(c.status, c.name == "uninitialised" ? "unwritten" : "tolerance") << name << " " << c.name << ": " << c.message;
      EXPECT_FALSE(c.message.empty());
    }
  }
}

TEST(screen, an_answer_that_ignores_the_input_is_flagged_by_zeros_and_other_seed) {
  test::temp_dir d;
  const auto p = problem::load(weak_problem(d, "y[i] = 0;"));
  const auto s = worker::screen(p, options());
  EXPECT_FALSE(s.ok());
  auto c = by_name(s);
  EXPECT_TRUE(c["zeros"].passed());
  EXPECT_EQ(c["zeros"].status, "passed");
  EXPECT_NE(c["zeros"].message.find("all-zero output passes"), std::string::npos) << c["zeros"].message;
  EXPECT_TRUE(c["other_seed"].passed());
  EXPECT_NE(c["other_seed"].message.find("does not depend on the inputs' values"), std::string::npos);
  for (auto name : {"constant", "input_copy", "uninitialised"})
    EXPECT_EQ(c[name].verdict, worker::control_verdict::fails) << name << ": " << c[name].message;
  EXPECT_NE(s.summary().find("2 of 5 controls pass (zeros, other_seed)"), std::string::npos) << s.summary();
}

TEST(screen, a_tolerance_that_admits_anything_is_flagged_by_every_writing_control) {
  test::temp_dir d;
  const auto p = problem::load(weak_problem(d, "y[i] = 3 * x[i] + 2;", "[tolerance]\npolicy = \"rtol\"\natol = 1e30\n"));
  const auto s = worker::screen(p, options());
  EXPECT_FALSE(s.ok());
  auto c = by_name(s);
  for (auto name : {"zeros", "constant", "input_copy", "other_seed"}) {
    EXPECT_TRUE(c[name].passed()) << name << ": " << c[name].status << ": " << c[name].message;
    EXPECT_NE(c[name].message.find("atol 1e+30"), std::string::npos) << c[name].message; // names the tolerance
  }
  EXPECT_EQ(c["uninitialised"].status, "unwritten"); // poison is caught whatever the tolerance
  EXPECT_NE(s.summary().find("the tolerance is the likely cause"), std::string::npos) << s.summary();
}

TEST(screen, an_identity_problem_is_flagged_by_input_copy) {
  test::temp_dir d;
  const auto p = problem::load(weak_problem(d, "y[i] = x[i];"));
  auto c = by_name(worker::screen(p, options()));
  EXPECT_TRUE(c["input_copy"].passed()) << c["input_copy"].message;
  EXPECT_NE(c["input_copy"].message.find("a copy of input 'x' passes"), std::string::npos);
  for (auto name : {"zeros", "constant", "uninitialised", "other_seed"})
    EXPECT_EQ(c[name].verdict, worker::control_verdict::fails) << name << ": " << c[name].message;
}

// Several outputs of different dtypes and a fixed-dtype input: the controls are generic,
// so each is judged on its answer, none breaks on the layout.
TEST(screen, controls_handle_several_outputs_and_dtypes) {
  test::temp_dir d;
  const auto dir = d / "multi";
  test::write(dir / "problem.toml", "name = \"multi\"\nbackend = \"cpu\"\n"
                                    "[[inputs]]\nname = \"x\"\nshape = [8, 4, 8]\n"
                                    "[[inputs]]\nname = \"k\"\ndtype = \"i32\"\nshape = [8]\n"
                                    "[[outputs]]\nname = \"s\"\nshape = [8]\n"
                                    "[[outputs]]\nname = \"m\"\ndtype = \"f64\"\nshape = [8, 4]\n"
                                    "[[cases]]\nname = \"standard\"\nx = \"normal(0, 1)\"\nk = \"int_range(1, 9)\"\n"
                                    "[eval]\ntrials_per_case = 1\n");
  test::write(dir / "reference.cpp", R"(#include <kforge/kernel.h>
// s[r] = k[r] * sum of row r; m[r, c] = max over the last dimension, in double.
KF_EXPORT int kf_forward(const kf_args* a) {
  const KF_REAL* x = (const KF_REAL*)a->inputs[0].data;
  const int* k = (const int*)a->inputs[1].data;
  KF_REAL* s = (KF_REAL*)a->outputs[0].data;
  double* m = (double*)a->outputs[1].data;
  for (int r = 0; r < 8; ++r) {
    KF_REAL acc = 0;
    for (int c = 0; c < 4; ++c) {
      double best = x[(r * 4 + c) * 8];
      for (int j = 0; j < 8; ++j) {
        acc += x[(r * 4 + c) * 8 + j];
        if (x[(r * 4 + c) * 8 + j] > best) best = x[(r * 4 + c) * 8 + j];
      }
      m[r * 4 + c] = best;
    }
    s[r] = k[r] * acc;
  }
  return 0;
}
)");
  const auto s = worker::screen(problem::load(dir), options());
  EXPECT_TRUE(s.ok()) << s.summary();
  for (auto& c : s.controls)
    EXPECT_EQ(c.verdict, worker::control_verdict::fails) << c.name << ": " << c.status << ": " << c.message;
}

// The build cache hashes the source it compiles and the headers beside it, but other_seed
// compiles a wrapper that #includes the reference: the wrapper's text must change with it.
TEST(screen, editing_the_reference_rebuilds_other_seed) {
  test::cache_env cache;
  test::temp_dir d;
  const auto dir = weak_problem(d, "y[i] = 2 * x[i];");
  auto build_other_seed = [&] {
    const auto p = problem::load(dir);
    for (auto& k : worker::control_kernels(p))
      if (k.name == "other_seed") return build::compile({.source = k.source, .real = p.dtype}, build::problem_backend::cpu);
    ADD_FAILURE() << "no other_seed control";
    return build::artifact{};
  };
  const auto first = build_other_seed();
  ASSERT_TRUE(first.ok) << first.diagnostics;
  EXPECT_FALSE(first.cached);
  const auto again = build_other_seed();
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.cache_key, first.cache_key);

  test::write(dir / "reference.cpp", read_file(dir / "reference.cpp") + "// edited\n");
  const auto edited = build_other_seed();
  ASSERT_TRUE(edited.ok) << edited.diagnostics;
  EXPECT_FALSE(edited.cached);
  EXPECT_NE(edited.cache_key, first.cache_key);

  test::write(dir / "helpers.h", "#define KF_UNUSED_HELPER 1\n"); // a header beside the reference
  const auto with_header = build_other_seed();
  EXPECT_FALSE(with_header.cached);
  EXPECT_NE(with_header.cache_key, edited.cache_key);
}

// The reference's optional kf_workspace_bytes goes on being the control's: the reference
// called inside other_seed gets the workspace it asked for.
TEST(screen, other_seed_forwards_the_references_workspace) {
  test::temp_dir d;
  const auto dir = weak_problem(d, "y[i] = 2 * x[i];");
  test::write(dir / "reference.cpp",
              "#include <kforge/kernel.h>\n"
              "KF_EXPORT size_t kf_workspace_bytes(const kf_args*) { return 512 * sizeof(KF_REAL); }\n"
              "KF_EXPORT int kf_forward(const kf_args* a) {\n"
              "  if (a->workspace_bytes < 512 * sizeof(KF_REAL)) return 7;\n"
              "  const KF_REAL* x = (const KF_REAL*)a->inputs[0].data;\n"
              "  KF_REAL* w = (KF_REAL*)a->workspace;\n"
              "  KF_REAL* y = (KF_REAL*)a->outputs[0].data;\n"
              "  for (long i = 0; i < 512; ++i) w[i] = 2 * x[i];\n"
              "  for (long i = 0; i < 512; ++i) y[i] = w[i];\n"
              "  return 0;\n}\n");
  auto c = by_name(worker::screen(problem::load(dir), options()));
  EXPECT_EQ(c["other_seed"].verdict, worker::control_verdict::fails) << c["other_seed"].message;
  EXPECT_EQ(c["other_seed"].status, "tolerance") << c["other_seed"].message; // not returned_error 7
}

#ifdef KFORGE_WITH_CUDA
// The CUDA controls cannot run here (no GPU), but they must build: nvcc needs no GPU.
TEST(screen, cuda_controls_compile_against_the_gpu_softmax) {
  const auto p = problem::load(test::source_dir() / "tests" / "gpu" / "problems" / "softmax_small");
  const auto controls = worker::control_kernels(p);
  ASSERT_EQ(controls.size(), 5u);
  for (auto& k : controls) {
    ASSERT_TRUE(k.skip_reason.empty()) << k.name << ": " << k.skip_reason;
    EXPECT_EQ(k.source.extension(), ".cu") << k.name;
    const auto a = build::compile({.source = k.source, .real = p.dtype, .role = "candidate"}, build::problem_backend::cuda);
    EXPECT_TRUE(a.ok) << k.name << ":\n" << a.diagnostics;
    EXPECT_EQ(a.toolchain, "nvcc") << k.name;
  }
}
#endif
