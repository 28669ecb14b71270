// problem.toml loading: a full problem, defaults, and every kind of mistake with its message.
#include "core/error.hpp"
#include "problem/problem.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

namespace fs = std::filesystem;
namespace kp = kforge::problem;

namespace {

// A fresh problem directory under the temp dir, removed afterwards.
struct problem_dir {
  fs::path path;
  problem_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("kforge-problem-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~problem_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  problem_dir(const problem_dir&) = delete;
  problem_dir& operator=(const problem_dir&) = delete;

  void write(const std::string& name, const std::string& text) const {
    std::ofstream out(path / name, std::ios::binary);
    out << text;
  }
  // problem.toml plus an empty reference.cpp.
  explicit problem_dir(const std::string& toml, bool reference = true) : problem_dir() {
    write("problem.toml", toml);
    if (reference) write("reference.cpp", "// reference\n");
  }
  [[nodiscard]] std::string toml() const { return (path / "problem.toml").string(); }
};

const std::string k_top = R"toml(name = "t"
backend = "cpu"
)toml";
const std::string k_tensors = R"toml(
[[inputs]]
name = "x"
shape = [4, 8]

[[outputs]]
name = "y"
shape = [4, 8]
)toml";

// A minimal valid problem with extra top-level lines and extra tables appended.
std::string minimal(const std::string& top = "", const std::string& tail = "") {
  return k_top + top + k_tensors + tail;
}

// Loads `toml` and returns the error message; fails the test when nothing is thrown.
std::string load_error(const std::string& toml, bool reference = true) {
  problem_dir d(toml, reference);
  try {
    (void)kp::load(d.path);
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::problem);
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind(d.toml(), 0), 0u) << "message does not start with the file: " << msg;
    return msg.substr(d.toml().size()); // ":LINE:COL: key '...': reason" or ": key ..."
  }
  ADD_FAILURE() << "loaded without error:\n" << toml;
  return {};
}

#define EXPECT_HAS(haystack, needle)                                                              \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in: " << (haystack)

} // namespace

// --- valid problems -----------------------------------------------------------------------

TEST(ProblemLoad, FullProblemLoadsEveryField) {
  problem_dir d(R"toml(name = "layer.norm-2"
description = "Row LayerNorm"
backend = "cpu"
dtype = "f64"
reference = "ref/impl.cpp"
seed = "start.cpp"

[[inputs]]
name = "x"
shape = [256, 1024]
dtype = "real"

[[inputs]]
name = "gamma"
shape = [1024]
param = true

[[inputs]]
name = "idx"
shape = [3]
dtype = "i64"

[[inputs]]
name = "h"
shape = [2, 2]
dtype = "f16"
param = false

[[outputs]]
name = "y"
shape = [256, 1024]
dtype = "real"

[[outputs]]
name = "count"
shape = [1]
dtype = "i32"

[[cases]]
name = "standard"
x = "normal(0, 1)"
gamma = "uniform(0.5, 1.5)"

[[cases]]
name = "offset"
x = "offset(1000, 0.01)"
idx = "int_range(0, 2)"

[work]
flops = 2621440
min_bytes = 2.5e6

[tolerance]
policy = "rtol"
alpha = 3
floor_ulps = 16.5
rtol = 1e-12
atol = 0.0
deterministic = false

[eval]
trials_per_case = 3
time_budget_s = 1.5
min_samples = 5
max_samples = 50
target_rel_ci = 0.02
timeout_s = 30
)toml",
                false);
  fs::create_directories(d.path / "ref");
  d.write("ref/impl.cpp", "");
  d.write("start.cpp", "");

  const kp::problem p = kp::load(d.path);
  EXPECT_EQ(p.name, "layer.norm-2");
  EXPECT_EQ(p.description, "Row LayerNorm");
  EXPECT_EQ(p.backend, kp::backend_kind::cpu);
  EXPECT_EQ(p.dtype, KF_F64);
  EXPECT_TRUE(p.dir.is_absolute());
  EXPECT_TRUE(fs::equivalent(p.dir, d.path));
  EXPECT_TRUE(fs::equivalent(p.toml_path, d.path / "problem.toml"));
  EXPECT_TRUE(p.reference.is_absolute());
  EXPECT_TRUE(fs::equivalent(p.reference, d.path / "ref" / "impl.cpp"));
  ASSERT_TRUE(p.seed.has_value());
  EXPECT_TRUE(p.seed->is_absolute());
  EXPECT_TRUE(fs::equivalent(*p.seed, d.path / "start.cpp"));
  std::ifstream in(d.path / "problem.toml");
  EXPECT_EQ(p.toml_text, std::string(std::istreambuf_iterator<char>(in), {}));

  ASSERT_EQ(p.tensors.size(), 6u);
  const auto& x = p.tensors[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.role, kp::tensor_role::input);
  EXPECT_TRUE(x.follows_real);
  EXPECT_EQ(x.dtype, KF_F64);
  EXPECT_EQ(x.oracle_dtype(), KF_F64);
  EXPECT_EQ(x.shape, (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(x.numel(), 256 * 1024);
  const auto& gamma = p.tensors[1];
  EXPECT_EQ(gamma.name, "gamma");
  EXPECT_EQ(gamma.role, kp::tensor_role::param);
  EXPECT_TRUE(gamma.follows_real);
  const auto& idx = p.tensors[2];
  EXPECT_EQ(idx.name, "idx");
  EXPECT_FALSE(idx.follows_real);
  EXPECT_EQ(idx.dtype, KF_I64);
  EXPECT_EQ(idx.oracle_dtype(), KF_I64);
  const auto& h = p.tensors[3];
  EXPECT_EQ(h.dtype, KF_F16);
  EXPECT_FALSE(h.follows_real);
  EXPECT_EQ(h.oracle_dtype(), KF_F16);
  EXPECT_EQ(h.role, kp::tensor_role::input);
  EXPECT_EQ(p.tensors[4].name, "y");
  EXPECT_EQ(p.tensors[4].role, kp::tensor_role::output);
  EXPECT_EQ(p.tensors[5].name, "count");
  EXPECT_EQ(p.tensors[5].dtype, KF_I32);
  EXPECT_EQ(p.tensors[5].role, kp::tensor_role::output);

  const auto ins = p.inputs();
  ASSERT_EQ(ins.size(), 4u);
  EXPECT_EQ(ins[0]->name, "x");
  EXPECT_EQ(ins[3]->name, "h");
  const auto outs = p.outputs();
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0]->name, "y");
  EXPECT_EQ(outs[1]->name, "count");

  ASSERT_EQ(p.cases.size(), 2u);
  const auto& standard = p.cases[0];
  EXPECT_EQ(standard.name, "standard");
  ASSERT_EQ(standard.inputs.size(), 4u); // every input and param, none of the outputs
  EXPECT_EQ(standard.inputs.at("x").kind, kp::distribution_kind::normal);
  EXPECT_EQ(standard.inputs.at("gamma").kind, kp::distribution_kind::uniform);
  EXPECT_DOUBLE_EQ(standard.inputs.at("gamma").a, 0.5);
  EXPECT_EQ(standard.inputs.at("gamma").text, "uniform(0.5, 1.5)");
  EXPECT_EQ(standard.inputs.at("idx").text, "int_range(0, 9)"); // built-in integer default
  EXPECT_EQ(standard.inputs.at("h").text, "normal(0, 1)");      // fixed real dtype: real default
  const auto& off = p.cases[1];
  EXPECT_EQ(off.inputs.at("x").kind, kp::distribution_kind::offset);
  EXPECT_EQ(off.inputs.at("idx").text, "int_range(0, 2)");
  EXPECT_EQ(off.inputs.at("gamma").text, "normal(0, 1)");

  EXPECT_DOUBLE_EQ(p.work.flops, 2621440);
  EXPECT_DOUBLE_EQ(p.work.min_bytes, 2.5e6);
  EXPECT_EQ(p.tolerance.policy, kp::tolerance_policy::rtol);
  EXPECT_DOUBLE_EQ(p.tolerance.alpha, 3);
  EXPECT_DOUBLE_EQ(p.tolerance.floor_ulps, 16.5);
  EXPECT_DOUBLE_EQ(p.tolerance.rtol, 1e-12);
  EXPECT_DOUBLE_EQ(p.tolerance.atol, 0);
  EXPECT_FALSE(p.tolerance.deterministic);
  EXPECT_EQ(p.eval.trials_per_case, 3);
  EXPECT_DOUBLE_EQ(p.eval.time_budget_s, 1.5);
  EXPECT_EQ(p.eval.min_samples, 5);
  EXPECT_EQ(p.eval.max_samples, 50);
  EXPECT_DOUBLE_EQ(p.eval.target_rel_ci, 0.02);
  EXPECT_DOUBLE_EQ(p.eval.timeout_s, 30);
}

TEST(ProblemLoad, Defaults) {
  problem_dir d(minimal());
  const kp::problem p = kp::load(d.path);
  EXPECT_EQ(p.name, "t");
  EXPECT_EQ(p.description, "");
  EXPECT_EQ(p.backend, kp::backend_kind::cpu);
  EXPECT_EQ(p.dtype, KF_F32);
  EXPECT_TRUE(fs::equivalent(p.reference, d.path / "reference.cpp"));
  EXPECT_FALSE(p.seed.has_value());

  ASSERT_EQ(p.tensors.size(), 2u);
  EXPECT_EQ(p.tensors[0].dtype, KF_F32);
  EXPECT_TRUE(p.tensors[0].follows_real);
  EXPECT_EQ(p.tensors[0].role, kp::tensor_role::input);
  EXPECT_EQ(p.tensors[0].numel(), 32);

  ASSERT_EQ(p.cases.size(), 1u);
  EXPECT_EQ(p.cases[0].name, "default");
  ASSERT_EQ(p.cases[0].inputs.size(), 1u);
  const auto& dist = p.cases[0].inputs.at("x");
  EXPECT_EQ(dist.kind, kp::distribution_kind::normal);
  EXPECT_DOUBLE_EQ(dist.a, 0);
  EXPECT_DOUBLE_EQ(dist.b, 1);

  const kp::tolerance_spec tol;
  EXPECT_EQ(p.tolerance.policy, tol.policy);
  EXPECT_DOUBLE_EQ(p.tolerance.alpha, tol.alpha);
  EXPECT_DOUBLE_EQ(p.tolerance.floor_ulps, tol.floor_ulps);
  EXPECT_EQ(p.tolerance.deterministic, tol.deterministic);
  const kp::eval_spec ev;
  EXPECT_EQ(p.eval.trials_per_case, ev.trials_per_case);
  EXPECT_EQ(p.eval.min_samples, ev.min_samples);
  EXPECT_EQ(p.eval.max_samples, ev.max_samples);
  EXPECT_DOUBLE_EQ(p.eval.timeout_s, ev.timeout_s);
  EXPECT_DOUBLE_EQ(p.work.flops, 0);
  EXPECT_DOUBLE_EQ(p.work.min_bytes, 0);
}

TEST(ProblemLoad, SeedIsPickedUpWhenPresent) {
  problem_dir d(minimal());
  d.write("seed.cpp", "");
  const kp::problem p = kp::load(d.path);
  ASSERT_TRUE(p.seed.has_value());
  EXPECT_TRUE(fs::equivalent(*p.seed, d.path / "seed.cpp"));
}

TEST(ProblemLoad, CudaBackendUsesCuFiles) {
  problem_dir d("name = \"t\"\nbackend = \"cuda\"\n" + k_tensors, false);
  d.write("reference.cu", "");
  d.write("seed.cpp", ""); // the wrong extension for cuda: not picked up
  kp::problem p = kp::load(d.path);
  EXPECT_EQ(p.backend, kp::backend_kind::cuda);
  EXPECT_EQ(kp::backend_name(p.backend), "cuda");
  EXPECT_EQ(kp::backend_name(kp::backend_kind::cpu), "cpu");
  EXPECT_TRUE(fs::equivalent(p.reference, d.path / "reference.cu"));
  EXPECT_FALSE(p.seed.has_value());
  d.write("seed.cu", "");
  p = kp::load(d.path);
  ASSERT_TRUE(p.seed.has_value());
  EXPECT_TRUE(fs::equivalent(*p.seed, d.path / "seed.cu"));
}

TEST(ProblemLoad, PathToTomlFile) {
  problem_dir d;
  d.write("other.toml", minimal());
  d.write("reference.cpp", "");
  const kp::problem p = kp::load(d.path / "other.toml");
  EXPECT_EQ(p.name, "t");
  EXPECT_TRUE(fs::equivalent(p.dir, d.path));
  EXPECT_TRUE(fs::equivalent(p.toml_path, d.path / "other.toml"));
  EXPECT_TRUE(fs::equivalent(p.reference, d.path / "reference.cpp"));

  // Errors then name that file.
  d.write("bad.toml", minimal("colour = 1\n"));
  try {
    (void)kp::load(d.path / "bad.toml");
    FAIL() << "no error";
  } catch (const kforge::error& e) {
    EXPECT_EQ(std::string(e.what()).rfind((d.path / "bad.toml").string() + ":3:1: key 'colour'", 0), 0u) << e.what();
  }
}

TEST(ProblemLoad, DefaultCaseFillsTheOthers) {
  problem_dir d(k_top + R"toml(
[[inputs]]
name = "x"
shape = [4]
[[inputs]]
name = "w"
shape = [4]
param = true
[[inputs]]
name = "k"
shape = [4]
dtype = "i32"
[[inputs]]
name = "b"
shape = [4]
dtype = "bool"
[[outputs]]
name = "y"
shape = [4]

[[cases]]
name = "big"
w = "uniform(-9, 9)"

[[cases]]
name = "default"
x = "uniform(-1, 1)"
k = "int_range(1, 3)"
)toml");
  const kp::problem p = kp::load(d.path);
  ASSERT_EQ(p.cases.size(), 2u);
  for (const auto& c : p.cases) {
    ASSERT_EQ(c.inputs.size(), 4u) << c.name;
    EXPECT_EQ(c.inputs.at("x").text, "uniform(-1, 1)") << c.name;
    EXPECT_EQ(c.inputs.at("k").text, "int_range(1, 3)") << c.name;
    EXPECT_EQ(c.inputs.at("b").text, "int_range(0, 9)") << c.name;
  }
  EXPECT_EQ(p.cases[0].name, "big");
  EXPECT_EQ(p.cases[0].inputs.at("w").text, "uniform(-9, 9)");
  EXPECT_EQ(p.cases[1].inputs.at("w").text, "normal(0, 1)");
}

TEST(ProblemLoad, RealTensorsMayUseIntRange) {
  problem_dir d(minimal("", "[[cases]]\nname = \"ints\"\nx = \"int_range(-2, 2)\"\n"));
  const kp::problem p = kp::load(d.path);
  EXPECT_EQ(p.cases[0].inputs.at("x").kind, kp::distribution_kind::int_range);
}

TEST(ProblemLoad, InlineTablesAndIntegersForFloats) {
  problem_dir d(k_top + R"toml(inputs = [{ name = "a", shape = [2] }, { name = "b", shape = [2], dtype = "u8" }]
outputs = [{ name = "c", shape = [2] }]
cases = [{ name = "u", b = "int_range(0, 255)" }]
tolerance = { alpha = 2, floor_ulps = 0 }
eval = { timeout_s = 5, target_rel_ci = 1 }
)toml");
  const kp::problem p = kp::load(d.path);
  EXPECT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[1].dtype, KF_U8);
  EXPECT_DOUBLE_EQ(p.tolerance.alpha, 2);
  EXPECT_DOUBLE_EQ(p.eval.timeout_s, 5);
}

// --- files ----------------------------------------------------------------------------------

TEST(ProblemErrors, MissingProblemToml) {
  problem_dir d;
  try {
    (void)kp::load(d.path);
    FAIL() << "no error";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::problem);
    EXPECT_HAS(std::string(e.what()), (d.path / "problem.toml").string() + ": cannot read file");
  }
  try {
    (void)kp::load(d.path / "nope" / "x.toml");
    FAIL() << "no error";
  } catch (const kforge::error& e) {
    EXPECT_HAS(std::string(e.what()), (d.path / "nope" / "x.toml").string() + ": cannot read file");
  }
}

TEST(ProblemErrors, MissingReference) {
  const auto msg = load_error(minimal(), false);
  EXPECT_HAS(msg, ": key 'reference': file 'reference.cpp' not found in ");
  const auto given = load_error(minimal("reference = \"ref.cpp\"\n"));
  EXPECT_HAS(given, ":3:13: key 'reference': file 'ref.cpp' not found in ");
}

TEST(ProblemErrors, MissingGivenSeed) {
  const auto msg = load_error(minimal("seed = \"seed.cpp\"\n"));
  EXPECT_HAS(msg, ":3:8: key 'seed': file 'seed.cpp' not found in ");
}

TEST(ProblemErrors, TomlSyntaxErrorGivesLine) {
  const auto msg = load_error("name = \"t\"\nbackend = \"cpu\"\nshape = [1, 2\n");
  EXPECT_EQ(msg.rfind(":3:", 0), 0u) << msg; // file:3:COL: description
  const auto dup = load_error("name = \"t\"\nname = \"u\"\n");
  EXPECT_EQ(dup.rfind(":2:", 0), 0u) << dup;
}

// --- required keys --------------------------------------------------------------------------

TEST(ProblemErrors, MissingRequiredKeys) {
  EXPECT_HAS(load_error("backend = \"cpu\"\n" + k_tensors), "key 'name': required key is missing");
  EXPECT_HAS(load_error("name = \"t\"\n" + k_tensors), "key 'backend': required key is missing");
  EXPECT_HAS(load_error(k_top + "[[outputs]]\nname = \"y\"\nshape = [1]\n"), "key 'inputs': required key is missing");
  EXPECT_HAS(load_error(k_top + "[[inputs]]\nname = \"x\"\nshape = [1]\n"), "key 'outputs': required key is missing");
  // The position is that of the table missing the key.
  EXPECT_HAS(load_error(k_top + "[[inputs]]\nname = \"x\"\n[[outputs]]\nname = \"y\"\nshape = [1]\n"),
             ":3:1: key 'inputs[0].shape': required key is missing");
  EXPECT_HAS(load_error(k_top + "[[inputs]]\nshape = [1]\n[[outputs]]\nname = \"y\"\nshape = [1]\n"),
             "key 'inputs[0].name': required key is missing");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nx = \"normal(0, 1)\"\n")), "key 'cases[0].name': required key is missing");
  EXPECT_HAS(load_error(k_top + "inputs = []\n[[outputs]]\nname = \"y\"\nshape = [1]\n"),
             ":3:10: key 'inputs': must contain at least one table ([[inputs]])");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"\"\n")), "key 'cases[0].name': must not be empty");
}

// --- types ----------------------------------------------------------------------------------

TEST(ProblemErrors, WrongTypes) {
  EXPECT_HAS(load_error("name = 3\nbackend = \"cpu\"\n" + k_tensors), ":1:8: key 'name': must be a string, got an integer");
  EXPECT_HAS(load_error(minimal("description = true\n")), "key 'description': must be a string");
  EXPECT_HAS(load_error(minimal("dtype = 32\n")), "key 'dtype': must be a string");
  EXPECT_HAS(load_error(minimal("reference = [\"a\"]\n")), "key 'reference': must be a string, got an array");
  EXPECT_HAS(load_error(k_top + "inputs = 3\n[[outputs]]\nname = \"y\"\nshape = [1]\n"),
             ":3:10: key 'inputs': must be an array of tables ([[inputs]]), got an integer");
  EXPECT_HAS(load_error(k_top + "inputs = [1, 2]\n[[outputs]]\nname = \"y\"\nshape = [1]\n"),
             "key 'inputs': must be an array of tables ([[inputs]]), got an array");
  EXPECT_HAS(load_error(minimal("cases = \"standard\"\n")), "key 'cases': must be an array of tables ([[cases]])");
  EXPECT_HAS(load_error(minimal("tolerance = 3\n")), "key 'tolerance': must be a table ([tolerance]), got an integer");
  EXPECT_HAS(load_error(minimal("eval = [1]\n")), "key 'eval': must be a table ([eval])");
  EXPECT_HAS(load_error(minimal("work = \"lots\"\n")), "key 'work': must be a table ([work])");

  const std::string bad_shape = k_top + "[[inputs]]\nname = \"x\"\nshape = \"4x8\"\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(bad_shape), ":5:9: key 'inputs[0].shape': must be an array of positive integers, got a string");
  const std::string float_dim = k_top + "[[inputs]]\nname = \"x\"\nshape = [4, 8.0]\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(float_dim), ":5:13: key 'inputs[0].shape': must be an array of positive integers; element 1 is a float");
  const std::string name_int = k_top + "[[inputs]]\nname = 1\nshape = [1]\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(name_int), "key 'inputs[0].name': must be a string");
  const std::string param_str = k_top + "[[inputs]]\nname = \"x\"\nshape = [1]\nparam = \"yes\"\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(param_str), ":6:9: key 'inputs[0].param': must be a boolean, got a string");

  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = 7\n")), "key 'cases[0].name': must be a string");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"c\"\nx = 1.0\n")),
             "key 'cases[0].x': must be a distribution string such as \"normal(0, 1)\", got a float");
  EXPECT_HAS(load_error(minimal("", "[work]\nflops = \"many\"\n")), "key 'work.flops': must be a number, got a string");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\nalpha = \"4\"\n")), "key 'tolerance.alpha': must be a number");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\npolicy = 1\n")), "key 'tolerance.policy': must be a string");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\ndeterministic = 1\n")),
             "key 'tolerance.deterministic': must be a boolean, got an integer");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmin_samples = 1.5\n")), "key 'eval.min_samples': must be an integer, got a float");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntrials_per_case = \"2\"\n")), "key 'eval.trials_per_case': must be an integer");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntimeout_s = \"60\"\n")), "key 'eval.timeout_s': must be a number");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntime_budget_s = inf\n")), "key 'eval.time_budget_s': must be a finite number");
}

// --- values ---------------------------------------------------------------------------------

TEST(ProblemErrors, BadTopLevelValues) {
  EXPECT_HAS(load_error("name = \"a b\"\nbackend = \"cpu\"\n" + k_tensors),
             ":1:8: key 'name': invalid name 'a b': must match [A-Za-z0-9_.-]+");
  EXPECT_HAS(load_error("name = \"\"\nbackend = \"cpu\"\n" + k_tensors), "key 'name': invalid name ''");
  EXPECT_HAS(load_error("name = \"t\"\nbackend = \"gpu\"\n" + k_tensors),
             ":2:11: key 'backend': must be \"cpu\" or \"cuda\", got 'gpu'");
  EXPECT_HAS(load_error(minimal("dtype = \"f33\"\n")), ":3:9: key 'dtype': unknown dtype 'f33'");
  EXPECT_HAS(load_error(minimal("dtype = \"i32\"\n")), "key 'dtype': not a real dtype 'i32'");
  EXPECT_HAS(load_error(minimal("dtype = \"real\"\n")), "key 'dtype': unknown dtype 'real'");
}

TEST(ProblemErrors, BadTensorValues) {
  const auto with_input = [](const std::string& lines) {
    return k_top + "[[inputs]]\nname = \"x\"\n" + lines + "[[outputs]]\nname = \"y\"\nshape = [1]\n";
  };
  EXPECT_HAS(load_error(with_input("shape = [0]\n")),
             ":5:10: key 'inputs[0].shape': must be an array of positive integers; element 0 is 0");
  EXPECT_HAS(load_error(with_input("shape = [4, -2]\n")),
             "key 'inputs[0].shape': must be an array of positive integers; element 1 is -2");
  EXPECT_HAS(load_error(with_input("shape = []\n")), ":5:9: key 'inputs[0].shape': must have at least 1 dimension");
  EXPECT_HAS(load_error(with_input("shape = [1, 1, 1, 1, 1, 1, 1, 1, 1]\n")),
             "key 'inputs[0].shape': has 9 dimensions; at most 8 are supported");
  EXPECT_HAS(load_error(with_input("shape = [4294967296, 4294967296]\n")), "key 'inputs[0].shape': has too many elements");
  EXPECT_HAS(load_error(with_input("shape = [1]\ndtype = \"float32\"\n")),
             ":6:9: key 'inputs[0].dtype': unknown dtype 'float32' (known: real, f16, bf16, f32, f64, i8, i32, i64, u8, bool)");
  EXPECT_HAS(load_error(with_input("shape = [1]\ndtype = \"i46\"\n")), "did you mean 'i64'?");

  // Eight dimensions are fine.
  problem_dir ok(with_input("shape = [1, 2, 1, 2, 1, 2, 1, 2]\n"));
  EXPECT_EQ(kp::load(ok.path).tensors[0].numel(), 16);

  const std::string bad_name = k_top + "[[inputs]]\nname = \"1x\"\nshape = [1]\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(bad_name), ":4:8: key 'inputs[0].name': invalid tensor name '1x': must match [A-Za-z_][A-Za-z0-9_]*");
  const std::string reserved = k_top + "[[inputs]]\nname = \"name\"\nshape = [1]\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(reserved), "key 'inputs[0].name': the tensor name 'name' is reserved");
}

TEST(ProblemErrors, DuplicateNames) {
  const std::string in_out = k_top + "[[inputs]]\nname = \"x\"\nshape = [1]\n[[outputs]]\nname = \"x\"\nshape = [1]\n";
  EXPECT_HAS(load_error(in_out), ":7:8: key 'outputs[0].name': duplicate tensor name 'x' (also inputs[0])");
  const std::string in_in =
      k_top + "[[inputs]]\nname = \"x\"\nshape = [1]\n[[inputs]]\nname = \"x\"\nshape = [2]\n" +
      "[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(in_in), "key 'inputs[1].name': duplicate tensor name 'x' (also inputs[0])");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"a\"\n[[cases]]\nname = \"a\"\n")),
             "key 'cases[1].name': duplicate case name 'a' (also cases[0])");
}

TEST(ProblemErrors, BadSectionValues) {
  EXPECT_HAS(load_error(minimal("", "[work]\nflops = -1\n")), "key 'work.flops': must be >= 0, got -1");
  EXPECT_HAS(load_error(minimal("", "[work]\nmin_bytes = -0.5\n")), "key 'work.min_bytes': must be >= 0");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\nalpha = 0\n")), "key 'tolerance.alpha': must be > 0, got 0");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\nfloor_ulps = -1\n")), "key 'tolerance.floor_ulps': must be >= 0");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\nrtol = -1e-9\n")), "key 'tolerance.rtol': must be >= 0");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\natol = -1\n")), "key 'tolerance.atol': must be >= 0");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\npolicy = \"ulp\"\n")),
             "key 'tolerance.policy': must be \"ratio\" or \"rtol\", got 'ulp'");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\npolicy = \"rtol\"\n")),
             "key 'tolerance.policy': policy \"rtol\" needs rtol > 0 or atol > 0");
  problem_dir atol_only(minimal("", "[tolerance]\npolicy = \"rtol\"\natol = 1e-9\n"));
  EXPECT_EQ(kp::load(atol_only.path).tolerance.policy, kp::tolerance_policy::rtol);

  EXPECT_HAS(load_error(minimal("", "[eval]\ntrials_per_case = 0\n")), "key 'eval.trials_per_case': must be >= 1, got 0");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmin_samples = 0\n")), "key 'eval.min_samples': must be >= 1");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmin_samples = 20\nmax_samples = 10\n")),
             "key 'eval.max_samples': must be >= min_samples (20), got 10");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmin_samples = 2000\n")),
             "key 'eval.min_samples': must be <= max_samples (1000), got 2000");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmax_samples = 99999999999\n")), "key 'eval.max_samples': must be <=");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntime_budget_s = 0\n")), "key 'eval.time_budget_s': must be > 0");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntarget_rel_ci = -0.1\n")), "key 'eval.target_rel_ci': must be > 0");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntimeout_s = 0\n")), "key 'eval.timeout_s': must be > 0");
  EXPECT_HAS(load_error(minimal("", "[eval]\nreview_speedup = 0.5\n")), "key 'eval.review_speedup': must be >= 1");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmemory_limit_mb = -1\n")), "key 'eval.memory_limit_mb': must be >= 0");
  EXPECT_HAS(load_error(minimal("", "[eval]\nmax_threads = 2.5\n")), "key 'eval.max_threads': must be an integer");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\nprecision = \"fp8\"\n")),
             "key 'tolerance.precision': must be \"nominal\", \"tf32\", \"bf16\" or \"f16\", got 'fp8'");
  EXPECT_HAS(load_error(minimal("dtype = \"f64\"", "[tolerance]\nprecision = \"tf32\"\n")),
             "key 'tolerance.precision': a lower precision is an opt-in for f32 problems; this one is f64");
}

TEST(ProblemLoad, PrecisionOptInAndHiddenCaseSwitch) {
  problem_dir d(minimal("", "[tolerance]\nprecision = \"tf32\"\n[eval]\nhidden_case = false\nreview_speedup = 20\n"));
  const auto p = kp::load(d.path);
  EXPECT_EQ(p.tolerance.precision, "tf32");
  EXPECT_FALSE(p.eval.hidden_case);
  EXPECT_EQ(p.eval.review_speedup, 20.0);
  problem_dir defaults(minimal());
  const auto q = kp::load(defaults.path);
  EXPECT_EQ(q.tolerance.precision, "nominal");
  EXPECT_TRUE(q.eval.hidden_case);
  EXPECT_EQ(q.eval.memory_limit_mb, 0.0); // the sandbox's automatic limits
  EXPECT_EQ(q.eval.max_threads, 0);
}

TEST(ProblemLoad, SandboxLimits) {
  problem_dir d(minimal("", "[eval]\nmemory_limit_mb = 512\nmax_threads = 8\n"));
  const auto p = kp::load(d.path);
  EXPECT_EQ(p.eval.memory_limit_mb, 512.0);
  EXPECT_EQ(p.eval.max_threads, 8);
}

// --- unknown keys -------------------------------------------------------------------------------

TEST(ProblemErrors, UnknownKeysWithSuggestion) {
  // k_top and k_tensors take lines 1-10; the appended table starts on line 11.
  EXPECT_HAS(load_error(minimal("", "[tolerence]\nalpha = 1\n")),
             ":11:2: key 'tolerence': unknown key; did you mean 'tolerance'?");
  EXPECT_HAS(load_error(minimal("", "[tolerance]\nalpah = 1\n")),
             ":12:1: key 'tolerance.alpah': unknown key; did you mean 'alpha'?");
  EXPECT_HAS(load_error(minimal("", "[eval]\ntimeout = 1\n")), "key 'eval.timeout': unknown key; did you mean 'timeout_s'?");
  EXPECT_HAS(load_error(minimal("", "[work]\nflop = 1\n")), "key 'work.flop': unknown key; did you mean 'flops'?");
  EXPECT_HAS(load_error(minimal("backed = \"cpu\"\n")), ":3:1: key 'backed': unknown key; did you mean 'backend'?");
  EXPECT_HAS(load_error(minimal("refrence = \"r.cpp\"\n")), "did you mean 'reference'?");
  const std::string shpe = k_top + "[[inputs]]\nname = \"x\"\nshpe = [1]\n[[outputs]]\nname = \"y\"\nshape = [1]\n";
  EXPECT_HAS(load_error(shpe), ":5:1: key 'inputs[0].shpe': unknown key; did you mean 'shape'?");
  // Outputs have no 'param'.
  const std::string out_param = k_top + "[[inputs]]\nname = \"x\"\nshape = [1]\n[[outputs]]\nname = \"y\"\nshape = [1]\nparam = true\n";
  EXPECT_HAS(load_error(out_param), "key 'outputs[0].param': unknown key");
}

TEST(ProblemErrors, UnknownKeyWithoutSuggestionListsKnownKeys) {
  const auto msg = load_error(minimal("colour = \"red\"\n"));
  EXPECT_HAS(msg, ":3:1: key 'colour': unknown key (known keys: name, description, backend, dtype");
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
}

// --- cases ----------------------------------------------------------------------------------

TEST(ProblemErrors, CaseNamingUnknownTensor) {
  const auto msg = load_error(minimal("", "[[cases]]\nname = \"c\"\nz = \"normal(0, 1)\"\n"));
  EXPECT_HAS(msg, ":13:1: key 'cases[0].z': names no input tensor (inputs: x)");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nnmae = \"c\"\n")), "did you mean 'name'?");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"c\"\nxx = \"normal(0, 1)\"\n")), "did you mean 'x'?");
}

TEST(ProblemErrors, CaseNamingOutput) {
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"c\"\ny = \"normal(0, 1)\"\n")),
             "key 'cases[0].y': 'y' is an output; only inputs and params take a distribution");
}

TEST(ProblemErrors, BadDistributionInCase) {
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"c\"\nx = \"gaussian(0, 1)\"\n")),
             ":13:5: key 'cases[0].x': unknown distribution 'gaussian'");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"c\"\nx = \"normal(0)\"\n")),
             "key 'cases[0].x': normal takes 2 arguments (mean, std), got 1");
  EXPECT_HAS(load_error(minimal("", "[[cases]]\nname = \"c\"\nx = \"uniform(1, 0)\"\n")),
             "key 'cases[0].x': uniform needs lo < hi");
}

TEST(ProblemErrors, IntegerTensorNeedsIntRange) {
  const std::string base = k_top + "[[inputs]]\nname = \"idx\"\nshape = [4]\ndtype = \"i64\"\n" +
                           "[[outputs]]\nname = \"y\"\nshape = [4]\n";
  EXPECT_HAS(load_error(base + "[[cases]]\nname = \"c\"\nidx = \"normal(0, 1)\"\n"),
             "key 'cases[0].idx': tensor 'idx' has integer dtype i64; only int_range(lo, hi) applies, got 'normal(0, 1)'");
  EXPECT_HAS(load_error(base + "[[cases]]\nname = \"default\"\nidx = \"uniform(0, 4)\"\n"),
             "key 'cases[0].idx': tensor 'idx' has integer dtype i64");
  const std::string u8 = k_top + "[[inputs]]\nname = \"b\"\nshape = [4]\ndtype = \"u8\"\n" +
                         "[[outputs]]\nname = \"y\"\nshape = [4]\n";
  EXPECT_HAS(load_error(u8 + "[[cases]]\nname = \"c\"\nb = \"int_range(-1, 10)\"\n"),
             "key 'cases[0].b': 'int_range(-1, 10)' does not fit tensor 'b' of dtype u8 (range 0 to 255)");
}

// --- [sanitize] -----------------------------------------------------------------------------

TEST(ProblemLoad, SanitizeShapesToolsAndTimeout) {
  problem_dir d(minimal("", "[sanitize]\nx = [2, 8]\ny = [2, 8]\ntools = [\"memcheck\", \"racecheck\"]\ntimeout_s = 30\n"));
  const auto p = kp::load(d.path);
  EXPECT_EQ(p.sanitize.shapes.at("x"), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.sanitize.tools, (std::vector<std::string>{"memcheck", "racecheck"}));
  EXPECT_EQ(p.sanitize.timeout_s, 30.0);
  const auto small = kp::sanitize_problem(p);
  EXPECT_EQ(small.tensors[0].shape, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(p.tensors[0].shape, (std::vector<int64_t>{4, 8})); // the original is untouched
}

TEST(ProblemLoad, SanitizeDefaultsToAllToolsAtTheProblemShapes) {
  problem_dir d(minimal());
  const auto p = kp::load(d.path);
  EXPECT_TRUE(p.sanitize.shapes.empty());
  EXPECT_EQ(p.sanitize.tools.size(), 4u);
  EXPECT_EQ(kp::sanitize_problem(p).tensors[1].shape, p.tensors[1].shape);
}

TEST(ProblemErrors, SanitizeMistakes) {
  EXPECT_HAS(load_error(minimal("", "[sanitize]\nz = [2, 8]\n")),
             ":12:1: key 'sanitize.z': names no tensor (tensors: x, y; other keys: tools, timeout_s)");
  EXPECT_HAS(load_error(minimal("", "[sanitize]\nxx = [2, 8]\n")), "did you mean 'x'?");
  EXPECT_HAS(load_error(minimal("", "[sanitize]\nx = [2, 8]\n")),
             "key 'sanitize.y': missing: [sanitize] gives shapes for some tensors, so it must give one for every "
             "tensor (x, y)");
  EXPECT_HAS(load_error(minimal("", "[sanitize]\nx = [2, 0]\ny = [2, 8]\n")),
             "key 'sanitize.x': must be an array of positive integers; element 1 is 0");
  EXPECT_HAS(load_error(minimal("", "[sanitize]\ntools = [\"memchek\"]\n")),
             "key 'sanitize.tools': unknown tool 'memchek' (known: memcheck, racecheck, initcheck, synccheck)");
  EXPECT_HAS(load_error(minimal("", "[sanitize]\ntimeout_s = 0\n")), "key 'sanitize.timeout_s': must be > 0");
}

TEST(ProblemErrors, ShapeOverrideNamesTheKnownTensors) {
  problem_dir d(minimal());
  const auto p = kp::load(d.path);
  try {
    (void)kp::with_shapes(p, {{"w", {1}}});
    ADD_FAILURE() << "no error";
  } catch (const kforge::error& e) {
    EXPECT_HAS(std::string(e.what()), "shape override for 'w': no such tensor (tensors: x, y)");
  }
}

// --- the problems shipped in the repository -------------------------------------------------

TEST(ProblemLoad, ShippedProblemsLoad) {
#ifdef KFORGE_SOURCE_DIR
  const fs::path root = fs::path(KFORGE_SOURCE_DIR) / "problems";
#else
  const fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path() / "problems";
#endif
  if (!fs::is_directory(root)) GTEST_SKIP() << "no problems/ folder at " << root;
  int loaded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().filename() != "problem.toml") continue;
    SCOPED_TRACE(entry.path().string());
    const kp::problem p = kp::load(entry.path().parent_path());
    EXPECT_FALSE(p.cases.empty());
    for (const auto& c : p.cases) EXPECT_EQ(c.inputs.size(), p.inputs().size()) << c.name;
    EXPECT_TRUE(fs::is_regular_file(p.reference));
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
}
