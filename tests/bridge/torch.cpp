// The PyTorch bridge: KernelBench files imported as problems, the module as reference and
// float64 oracle, eager timings beside the candidate. Tests that run Python skip, saying
// why, where torch is not installed (scripts/setup.sh installs it into .venv).
#include "bridge/kernelbench.hpp"
#include "bridge/torch_helper.hpp"
#include "bridge/torch_reference.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/subprocess.hpp"
#include "eval/inputs.hpp"
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"
#include "worker/screen.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

using namespace kforge;

namespace {

std::filesystem::path data(const std::string& f) { return std::filesystem::path(KFORGE_TEST_DIR) / "bridge" / "data" / f; }

#define REQUIRE_TORCH()                                                                                    \
  do {                                                                                                     \
    if (!bridge::torch_probe().available) GTEST_SKIP() << "PyTorch bridge: " << bridge::torch_probe().why; \
  } while (0)

// What the helper's describe says of kb_linear_relu.py (recorded from a run), so that the
// problem.toml writer is tested without Python.
nlohmann::json linear_relu_description() {
  return nlohmann::json::parse(R"({
    "torch_version": "2.15.0", "init_inputs": [32, 24, 0.5], "training": true,
    "training_dependent": ["BatchNorm1d"], "random": ["Dropout"],
    "inputs": [{"name": "x", "dtype": "f32", "shape": [16, 32],
                "stats": {"min": -2.9, "max": 2.9, "mean": 0.02, "std": 0.95, "all_equal": false}}],
    "state": [{"torch_name": "linear.weight", "kind": "parameter", "dtype": "f32", "shape": [24, 32],
               "stats": {"min": -0.1763, "max": 0.1767, "mean": 0.0, "std": 0.1, "all_equal": false}},
              {"torch_name": "linear.bias", "kind": "parameter", "dtype": "f32", "shape": [24],
               "stats": {"min": -0.17, "max": 0.176, "mean": 0.0, "std": 0.1, "all_equal": false}},
              {"torch_name": "bn.weight", "kind": "parameter", "dtype": "f32", "shape": [24],
               "stats": {"min": 1, "max": 1, "mean": 1, "std": 0, "all_equal": true}},
              {"torch_name": "bn.num_batches_tracked", "kind": "buffer", "dtype": "i64", "shape": [],
               "stats": {"min": 0, "max": 0}}],
    "outputs": [{"dtype": "f32", "shape": [16, 24]}], "flops": 24576, "shapes_from": "meta"})");
}

} // namespace

TEST(kernelbench_toml, writes_a_problem_that_loads_with_params_named_after_module_state) {
  test::temp_dir d;
  std::vector<std::string> notes;
  const auto toml = bridge::kernelbench_toml(linear_relu_description(), "linear_relu", "cpu", "kb.py", &notes);
  test::write(d / "problem.toml", toml);
  test::write(d / "model.py", "# stand-in\n");
  const auto p = problem::load(d.path);
  ASSERT_TRUE(p.torch.has_value());
  EXPECT_EQ(p.torch->module, (d / "model.py").lexically_normal());
  EXPECT_EQ(p.torch->init_inputs, "[32,24,0.5]");
  EXPECT_EQ(p.reference, p.torch->module);
  const auto in = p.inputs();
  ASSERT_EQ(in.size(), 4u); // x, linear.weight, linear.bias, bn.weight; the counter is left out
  EXPECT_EQ(in[0]->name, "x");
  EXPECT_EQ(in[0]->role, problem::tensor_role::input);
  EXPECT_EQ(in[1]->name, "linear_weight");
  EXPECT_EQ(in[1]->role, problem::tensor_role::param);
  EXPECT_EQ(in[1]->torch_name, "linear.weight");
  EXPECT_EQ(in[3]->torch_name, "bn.weight");
  ASSERT_EQ(p.outputs().size(), 1u);
  EXPECT_EQ(p.outputs()[0]->name, "y");
  EXPECT_EQ(p.outputs()[0]->shape, (std::vector<int64_t>{16, 24}));
  EXPECT_DOUBLE_EQ(p.work.flops, 24576);
  EXPECT_DOUBLE_EQ(p.work.min_bytes, 4.0 * (16 * 32 + 24 * 32 + 24 + 24 + 16 * 24));
  ASSERT_EQ(p.cases.size(), 2u); // default and shifted
  EXPECT_EQ(p.cases[0].inputs.at("x").text, "normal(0, 1)"); // std 0.95 of one draw of randn: 1
  EXPECT_EQ(p.cases[0].inputs.at("linear_weight").text, "uniform(-0.18, 0.18)");
  // A constant (a norm weight of ones) is drawn around the constant, so assuming it fails.
  EXPECT_EQ(p.cases[0].inputs.at("bn_weight").text, "uniform(0.5, 1.5)");
  EXPECT_EQ(p.cases[1].name, "shifted");
  EXPECT_EQ(p.cases[1].inputs.at("x").text, "normal(1.9, 2.8)");
  EXPECT_EQ(p.cases[1].inputs.at("linear_weight").text, p.cases[0].inputs.at("linear_weight").text);
  bool counter_noted = false, training_noted = false, random_noted = false;
  for (auto& n : notes) {
    counter_noted |= n.find("num_batches_tracked") != std::string::npos;
    training_noted |= n.find("training mode") != std::string::npos && n.find("BatchNorm1d") != std::string::npos;
    random_noted |= n.find("Dropout with p > 0") != std::string::npos;
  }
  EXPECT_TRUE(counter_noted);
  EXPECT_TRUE(training_noted);
  EXPECT_TRUE(random_noted);
}

TEST(kernelbench_toml, an_undrawn_elementwise_problem_gets_an_element_count_and_a_note) {
  // What describe says of a GELU over 256 GiB of inputs on a machine without a GPU: shapes from
  // the meta device, no draw, work counted per element.
  const auto d = nlohmann::json::parse(R"({
    "init_inputs": [], "training": true, "training_dependent": [], "random": [],
    "inputs": [{"name": "x", "dtype": "f32", "shape": [1048576, 65536], "stats": {}}], "state": [],
    "outputs": [{"dtype": "f32", "shape": [1048576, 65536]}], "flops": 68719476736, "flops_from": "elements",
    "shapes_from": "meta", "inputs_drawn_on": "",
    "inputs_not_drawn": "get_inputs() draws 256.0 GiB; this machine has 22.8 GiB available and no GPU"})");
  test::temp_dir dir;
  std::vector<std::string> notes;
  test::write(dir / "problem.toml", bridge::kernelbench_toml(d, "gelu", "cuda", "gelu.py", &notes));
  test::write(dir / "model.py", "# stand-in\n");
  const auto p = problem::load(dir.path);
  EXPECT_DOUBLE_EQ(p.work.flops, 68719476736.0);
  EXPECT_NE(read_file(dir / "problem.toml").find("one operation per element"), std::string::npos);
  EXPECT_EQ(p.cases[0].inputs.at("x").text, "normal(0, 1)");
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("256.0 GiB"), std::string::npos) << notes.back();
}

TEST(torch_problem, rejects_a_param_without_torch_name_and_a_reference_beside_torch) {
  test::temp_dir d;
  test::write(d / "model.py", "# stand-in\n");
  const std::string base = "name = \"t\"\nbackend = \"cpu\"\n[torch]\nmodule = \"model.py\"\n"
                           "[[outputs]]\nname = \"y\"\nshape = [4]\n";
  test::write(d / "problem.toml", base + "[[inputs]]\nname = \"w\"\nshape = [4]\nparam = true\n");
  try {
    (void)problem::load(d.path);
    FAIL() << "loaded";
  } catch (const kforge::error& e) {
    EXPECT_NE(std::string(e.what()).find("param 'w' needs torch_name"), std::string::npos) << e.what();
  }
  test::write(d / "reference.cpp", "\n");
  test::write(d / "problem.toml", "reference = \"reference.cpp\"\n" + base + "[[inputs]]\nname = \"x\"\nshape = [4]\n");
  try {
    (void)problem::load(d.path);
    FAIL() << "loaded";
  } catch (const kforge::error& e) {
    EXPECT_NE(std::string(e.what()).find("remove 'reference'"), std::string::npos) << e.what();
  }
  test::write(d / "problem.toml", base + "[[inputs]]\nname = \"x\"\nshape = [4]\ntorch_name = \"a\"\n");
  EXPECT_THROW((void)problem::load(d.path), kforge::error); // torch_name on a non-param
  test::write(d / "problem.toml",
              "name = \"t\"\nbackend = \"cpu\"\n[torch]\nmodule = \"model.py\"\ninit_inputs = \"[1, 2\"\n"
              "[[inputs]]\nname = \"x\"\nshape = [4]\n[[outputs]]\nname = \"y\"\nshape = [4]\n");
  try {
    (void)problem::load(d.path);
    FAIL() << "loaded";
  } catch (const kforge::error& e) {
    EXPECT_NE(std::string(e.what()).find("torch.init_inputs"), std::string::npos) << e.what();
  }
}

TEST(torch_bridge, says_what_is_missing_when_torch_is_absent) {
  const auto& t = bridge::torch_probe();
  if (t.available) {
    EXPECT_FALSE(t.version.empty());
    EXPECT_NO_THROW((void)bridge::require_torch("x"));
  } else {
    EXPECT_FALSE(t.why.empty());
    try {
      (void)bridge::require_torch("kforge import kernelbench");
      FAIL() << "no throw";
    } catch (const kforge::error& e) {
      EXPECT_NE(std::string(e.what()).find("kforge import kernelbench needs PyTorch"), std::string::npos);
    }
  }
}

class imported : public ::testing::Test {
protected:
  test::cache_env cache;
  test::temp_dir dir;
  problem::problem p;
  worker::evaluate_options opts;
  void SetUp() override {
    REQUIRE_TORCH();
    auto r = bridge::import_kernelbench(data("kb_linear_relu.py"), {.out = dir / "lr", .backend = "cpu"});
    // torch.compile on the CPU compiles C++ for a minute: the GPU tests time it.
    auto toml = read_file(r.dir / "problem.toml");
    toml.replace(toml.find("compile = true"), 14, "compile = false");
    test::write(r.dir / "problem.toml", toml);
    p = problem::load(r.dir);
    opts.worker_exe = test::worker_binary();
    opts.time_budget_s = 0.3;
  }
};

TEST_F(imported, a_correct_candidate_passes_and_is_timed_against_eager_pytorch) {
  ASSERT_TRUE(p.torch);
  EXPECT_EQ(p.name, "kb_linear_relu");
  auto ev = worker::evaluate(p, data("linear_relu.cpp"), opts);
  ASSERT_TRUE(ev.passed()) << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  ASSERT_NE(ev.timing("reference"), nullptr) << "eager PyTorch is the reference's time";
  EXPECT_GT(ev.timing("reference")->samples, 0);
  EXPECT_EQ(ev.phases.value("torch_baselines", ""), "measured");
  EXPECT_EQ(ev.phases.value("torch_inputs", ""), "file"); // the host path (a CPU problem)
  EXPECT_FALSE(ev.reference_errors.empty());
  for (auto& b : ev.builds) EXPECT_EQ(b.role, "candidate"); // no reference or oracle builds
}

TEST_F(imported, a_candidate_that_drops_a_param_fails_naming_the_worst_element) {
  auto ev = worker::evaluate(p, data("linear_relu_no_bias.cpp"), opts);
  EXPECT_EQ(ev.status, "tolerance") << ev.message;
  EXPECT_NE(ev.message.find("expected"), std::string::npos) << ev.message;
  EXPECT_TRUE(ev.timings.empty());
}

TEST_F(imported, truth_is_the_module_at_nominal_precision_and_in_float64) {
  const auto in = eval::make_inputs(p, p.cases[0], 42, eval::precision::nominal);
  auto t = bridge::torch_truth(p, {{3, in}}, 0, 300);
  ASSERT_EQ(t.reference.count({3, 0}), 1u);
  EXPECT_EQ(t.reference.at({3, 0}).dtype, KF_F32);
  EXPECT_EQ(t.oracle.at({3, 0}).dtype, KF_F64);
  EXPECT_EQ(t.oracle.at({3, 0}).bytes.size(), 16u * 24 * 8);
  // y = relu(x W^T + b) / 2 from the inputs kforge drew: check one element by hand.
  const auto* x = reinterpret_cast<const float*>(in[0].bytes.data());
  const auto* w = reinterpret_cast<const float*>(in[1].bytes.data());
  const auto* b = reinterpret_cast<const float*>(in[2].bytes.data());
  double acc = b[5];
  for (int k = 0; k < 32; ++k) acc += double(x[2 * 32 + k]) * w[5 * 32 + k];
  const double want = (acc > 0 ? acc : 0) * 0.5;
  EXPECT_NEAR(reinterpret_cast<const double*>(t.oracle.at({3, 0}).bytes.data())[2 * 24 + 5], want, 1e-6);
}

TEST_F(imported, truth_without_the_oracle_is_the_reference_alone) {
  // kforge check's other_seed control replays the reference's answer: no float64 run for it.
  const auto in = eval::make_inputs(p, p.cases[0], 42, eval::precision::nominal);
  auto full = bridge::torch_truth(p, {{3, in}}, 0, 300);
  auto ref = bridge::torch_truth(p, {{3, in}}, 0, 300, /*with_oracle=*/false);
  EXPECT_TRUE(ref.oracle.empty());
  ASSERT_EQ(ref.reference.count({3, 0}), 1u);
  EXPECT_EQ(ref.reference.at({3, 0}).bytes, full.reference.at({3, 0}).bytes);
}

TEST_F(imported, the_bridge_timer_times_a_kernel_library_through_the_abi) {
  auto ev = worker::evaluate(p, data("linear_relu.cpp"), opts);
  ASSERT_TRUE(ev.passed()) << ev.message;
  std::filesystem::path lib;
  for (auto& b : ev.builds)
    if (b.role == "candidate") lib = b.artifact.library;
  auto t = bridge::torch_time(p, {{"lib", "library", lib.string()}, {"eager", "eager", ""}},
                              {.budget_s = 0.2, .min_samples = 5}, 0, 300);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].error, "");
  EXPECT_GE(t[0].samples.size(), 5u);
  EXPECT_GE(t[1].samples.size(), 5u);
}

TEST(torch_import, refuses_a_file_that_is_not_kernelbench_and_an_existing_problem) {
  REQUIRE_TORCH();
  test::temp_dir d;
  test::write(d / "bad.py", "import torch\nclass Model(torch.nn.Module):\n    pass\n");
  try {
    (void)bridge::import_kernelbench(d / "bad.py", {.out = d / "p", .backend = "cpu"});
    FAIL() << "imported";
  } catch (const kforge::error& e) {
    EXPECT_NE(std::string(e.what()).find("get_inputs"), std::string::npos) << e.what();
  }
  (void)bridge::import_kernelbench(data("kb_relu.py"), {.out = d / "r", .backend = "cpu"});
  EXPECT_THROW((void)bridge::import_kernelbench(data("kb_relu.py"), {.out = d / "r", .backend = "cpu"}), kforge::error);
  EXPECT_NO_THROW((void)bridge::import_kernelbench(data("kb_relu.py"), {.out = d / "r", .backend = "cpu", .force = true}));
}

TEST(torch_import, a_file_whose_inputs_do_not_fit_imports_from_the_meta_device) {
  // 256 GiB of get_inputs(): shapes and work from the meta device, nothing drawn, said in a note.
  REQUIRE_TORCH();
  test::temp_dir d;
  const auto r = bridge::import_kernelbench(data("kb_huge_gelu.py"), {.out = d / "g", .backend = "cuda"});
  EXPECT_EQ(r.description.value("inputs_drawn_on", "?"), "");
  EXPECT_EQ(r.description.value("flops_from", ""), "elements");
  const auto p = problem::load(r.dir);
  EXPECT_EQ(p.inputs()[0]->shape, (std::vector<int64_t>{1 << 20, 1 << 16}));
  EXPECT_GT(p.work.flops, 0) << "an elementwise problem has a work count";
  bool noted = false;
  for (auto& n : r.notes) noted |= n.find("was not drawn") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(torch_import, a_number_among_the_inputs_is_a_one_element_input_the_module_gets_as_a_number) {
  // KernelBench's 5_Matrix_scalar_multiplication: forward(A, s) with s = 3.14.
  REQUIRE_TORCH();
  test::cache_env cache;
  test::temp_dir d;
  const auto r = bridge::import_kernelbench(data("kb_scalar_multiply.py"), {.out = d / "sm", .backend = "cpu"});
  const auto p = problem::load(r.dir);
  ASSERT_TRUE(p.torch);
  EXPECT_EQ(p.torch->scalars, (std::vector<std::string>{"s"}));
  ASSERT_EQ(p.inputs().size(), 2u);
  EXPECT_EQ(p.inputs()[1]->numel(), 1);
  EXPECT_EQ(p.cases[0].inputs.at("s").text, "uniform(1.6, 4.7)") << "varied around 3.14, so assuming it fails";
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.time = false;
  const auto ev = worker::evaluate(p, data("scalar_multiply.cpp"), o);
  EXPECT_TRUE(ev.passed()) << ev.message;
  // A candidate that multiplies by the file's 3.14 instead of reading s fails.
  test::write(d / "fixed.cpp", "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args* a) {\n"
                               "  const float* x = (const float*)a->inputs[0].data; float* y = (float*)a->outputs[0].data;\n"
                               "  for (long i = 0; i < a->inputs[0].shape[0] * a->inputs[0].shape[1]; ++i) y[i] = x[i] * 3.14f;\n"
                               "  return 0;\n}\n");
  EXPECT_EQ(worker::evaluate(p, d / "fixed.cpp", o).status, "tolerance");
}

TEST(torch_import, a_file_that_imports_numpy_and_einops_imports_and_an_inert_dropout_is_not_noted) {
  // What KernelBench's level 3 files import besides torch; scripts/setup.sh puts both in .venv.
  REQUIRE_TORCH();
  test::temp_dir d;
  const auto r = bridge::import_kernelbench(data("kb_einops_numpy.py"), {.out = d / "e", .backend = "cpu"});
  EXPECT_EQ(problem::load(r.dir).inputs()[0]->shape, (std::vector<int64_t>{8, 64}));
  for (auto& n : r.notes) {
    EXPECT_EQ(n.find("training mode"), std::string::npos) << n;
    EXPECT_EQ(n.find("Dropout"), std::string::npos) << n;
  }
}

TEST(torch_import, a_file_that_imports_a_module_the_interpreter_lacks_says_which_and_how_to_install_it) {
  REQUIRE_TORCH();
  test::temp_dir d;
  test::write(d / "needs.py", "import torch\nimport kforge_test_absent_module.sub\n"
                              "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                              "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n");
  try {
    (void)bridge::import_kernelbench(d / "needs.py", {.out = d / "p", .backend = "cpu"});
    FAIL() << "imported";
  } catch (const kforge::error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("imports 'kforge_test_absent_module'"), std::string::npos) << m;
    EXPECT_NE(m.find("-m pip install kforge_test_absent_module"), std::string::npos) << m;
  }
}

TEST(torch_cli, import_then_check_a_kernelbench_file) {
  REQUIRE_TORCH();
  test::cache_env cache;
  test::temp_dir d;
  const auto k = test::kforge_binary().string();
  auto r = run_command({k, "import", "kernelbench", data("kb_relu.py").string(), "--out", (d / "relu").string(),
                        "--backend", "cpu", "--json"},
                       600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["schema"], "kforge.import/1");
  EXPECT_EQ(j["module"]["inputs"][0]["name"], "x");
  // The reference runs at f32 and in float64 on every case; every control must fail,
  // other_seed too (the module's answer for other inputs, replayed).
  r = run_command({k, "--db", (d / "k.db").string(), "check", (d / "relu").string(), "--json"}, 900);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["reference"]["passed"], true);
  EXPECT_FALSE(j["reference"]["torch_version"].get<std::string>().empty());
  ASSERT_EQ(j["controls"].size(), 5u);
  for (auto& c : j["controls"]) EXPECT_EQ(c["verdict"], "fails") << c.dump();
  EXPECT_EQ(j["controls"][4]["name"], "other_seed");
}

TEST(torch_problem, other_seed_passes_on_a_problem_whose_answer_ignores_its_input) {
  // A module whose output does not depend on x's values: the screening must say so.
  REQUIRE_TORCH();
  test::cache_env cache;
  test::temp_dir d;
  test::write(d / "ones.py",
              "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
              "        return torch.ones_like(x) * 2\n"
              "def get_inputs():\n    return [torch.randn(8, 16)]\n"
              "def get_init_inputs():\n    return []\n");
  auto imp = bridge::import_kernelbench(d / "ones.py", {.out = d / "p", .backend = "cpu"});
  const auto p = problem::load(imp.dir);
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  auto s = worker::screen(p, o);
  bool other_seed_passes = false;
  for (auto& c : s.controls)
    if (c.name == "other_seed") other_seed_passes = c.passed();
  EXPECT_TRUE(other_seed_passes) << s.summary();
  EXPECT_FALSE(s.ok());
}

TEST(torch_cli, export_torch_builds_an_extension_that_matches_the_module) {
  REQUIRE_TORCH();
  test::cache_env cache;
  test::temp_dir d;
  const auto k = test::kforge_binary().string(), db = (d / "k.db").string();
  auto r = run_command({k, "import", "kernelbench", data("kb_linear_relu.py").string(), "--out", (d / "lr").string(),
                        "--backend", "cpu"},
                       600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto toml = read_file(d / "lr" / "problem.toml");
  toml.replace(toml.find("compile = true"), 14, "compile = false");
  test::write(d / "lr" / "problem.toml", toml);
  test::write(d / "lr" / "seed.cpp", read_file(data("linear_relu.cpp")));
  r = run_command({k, "--db", db, "optimize", (d / "lr").string(), "--strategy", "tune", "--time-budget", "0.2"}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command({k, "--db", db, "export", "1", "--torch", "--out", (d / "ex").string(), "--json"}, 600);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The extension is built by torch.utils.cpp_extension and checked against Model itself.
  r = run_command({"sh", "-c",
                   "cd '" + (d / "ex").string() + "' && '" + bridge::torch_probe().python + "' test_kforge_ext.py"},
                  900);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kforge_ext: OK"), std::string::npos) << r.output;
}

TEST(torch_cli, without_torch_import_says_what_is_missing_and_how_to_get_it) {
  // An interpreter without torch: the one on PATH, here (skipped where it has torch).
  const auto python = find_on_path("python3");
  if (python.empty() || run_command({python.string(), "-c", "import torch"}, 120).ok())
    GTEST_SKIP() << "python3 on PATH has torch (or there is none): nothing to show";
  test::temp_dir d;
  auto r = run_command({"sh", "-c",
                        "KFORGE_PYTHON='" + python.string() + "' '" + test::kforge_binary().string() +
                            "' import kernelbench '" + data("kb_relu.py").string() + "' --out '" + (d / "r").string() +
                            "'"},
                       300);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs PyTorch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("scripts/setup.sh"), std::string::npos) << r.output;
}

TEST(torch_cli, suite_reports_speedups_over_eager_pytorch_and_fast_p) {
  REQUIRE_TORCH();
  test::cache_env cache;
  test::temp_dir d;
  const auto k = test::kforge_binary().string();
  for (const char* n : {"kb_linear_relu", "kb_relu"}) {
    auto r = run_command({k, "import", "kernelbench", data(std::string(n) + ".py").string(), "--out",
                          (d / "set" / n).string(), "--backend", "cpu"},
                         600);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto toml = read_file(d / "set" / n / "problem.toml");
    toml.replace(toml.find("compile = true"), 14, "compile = false"); // CPU inductor builds take minutes
    test::write(d / "set" / n / "problem.toml", toml);
  }
  // A candidate for one problem only: the other is a skipped row that counts against fast_p.
  test::write(d / "cands" / "kb_linear_relu.cpp", read_file(data("linear_relu.cpp")));
  auto r = run_command({k, "--db", (d / "k.db").string(), "suite", (d / "set").string(), "--candidates",
                        (d / "cands").string(), "--json"},
                       900);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["schema"], "kforge.suite/1");
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& lr = j["rows"][0]["problem"] == "kb_linear_relu" ? j["rows"][0] : j["rows"][1];
  EXPECT_EQ(lr["status"], "passed") << lr.dump();
  EXPECT_TRUE(lr["reference_s"].is_number()) << "eager PyTorch's median";
  EXPECT_EQ(j["fast_p"]["reference"]["n"], 2);
}

TEST(torch_cli, import_of_a_folder_imports_each_file_and_reports_the_ones_that_fail) {
  REQUIRE_TORCH();
  test::temp_dir d;
  test::write(d / "level" / "a_relu.py", read_file(data("kb_relu.py")));
  test::write(d / "level" / "b_broken.py", "import torch\n");
  auto r = run_command({test::kforge_binary().string(), "import", "kernelbench", (d / "level").string(), "--out",
                        (d / "out").string(), "--backend", "cpu", "--json"},
                       600);
  EXPECT_EQ(r.exit_code, 1) << r.output; // one of two failed
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["schema"], "kforge.import-dir/1");
  ASSERT_EQ(j["problems"].size(), 2u);
  EXPECT_EQ(j["problems"][0]["name"], "a_relu");
  EXPECT_TRUE(std::filesystem::exists(d / "out" / "a_relu" / "problem.toml"));
  EXPECT_NE(j["problems"][1]["error"].get<std::string>().find("Model"), std::string::npos) << j.dump();
}

TEST_F(imported, a_candidate_that_hunts_for_the_truth_files_finds_none) {
  auto ev = worker::evaluate(p, data("steals_truth_files.cpp"), opts);
  EXPECT_FALSE(ev.passed());
  EXPECT_EQ(ev.status, "unwritten") << ev.message;
}

// The GPU-resident path's first step on a machine without CUDA: the descriptor reaches the
// held helper over its descriptor 4, the map is refused with a reason (the evaluation then takes
// the host path), and the helper keeps answering.
TEST(torch_bridge, a_held_helper_takes_a_descriptor_and_refuses_to_map_without_cuda) {
  REQUIRE_TORCH();
  if (bridge::torch_probe().cuda) GTEST_SKIP() << "this torch has CUDA: tests/gpu/torch_bridge.cpp maps for real";
  bridge::held_helper h;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  h.send_fd("exchange", fds[0]);
  try {
    (void)h.call("map", {{"bytes", 4096}, {"device", "cuda:0"}}, 120);
    FAIL() << "mapped without CUDA";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot use CUDA"), std::string::npos) << e.what();
  }
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(h.call("unmap", nlohmann::json::object(), 60), nlohmann::json::object()) << "still answering";
  EXPECT_TRUE(h.call("probe", {{"light", true}}, 60).contains("torch_version"));
}

TEST(torch_cli, the_torch_probe_is_kept_in_the_cache_and_a_damaged_entry_is_probed_again) {
  REQUIRE_TORCH();
  test::cache_env cache;
  test::temp_dir d;
  const auto k = test::kforge_binary().string();
  auto import = [&](const char* name) {
    return run_command({k, "import", "kernelbench", data("kb_relu.py").string(), "--out", (d / name).string(),
                        "--backend", "cpu"},
                       600);
  };
  auto r = import("a");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::filesystem::path> kept;
  for (auto& e : std::filesystem::directory_iterator(cache.dir.path / "torch-probe")) kept.push_back(e.path());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(read_file(kept[0]).find("torch_version"), std::string::npos);
  test::write(kept[0], "{not json");
  r = import("b");
  ASSERT_EQ(r.exit_code, 0) << r.output; // probed again, and kept again
  EXPECT_NE(read_file(kept[0]).find("torch_version"), std::string::npos);
}
