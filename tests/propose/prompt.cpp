// The prompts in prompts/, rendered for real problems (problems/cpu/softmax, CUDA
// problems/softmax) and kforge.eval/1 documents (tests/propose/data/): each must carry
// the facts a model needs. Also the contexts, the dialect choice and parse_ideas.
// To add a prompt check: build it with builder(), then expect_has() the facts.
#include "core/error.hpp"
#include "core/fs.hpp"
#include "propose/prompt.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace kforge;
using nlohmann::json;
using propose::candidate_ref;
using propose::prompt_builder;

namespace {

std::filesystem::path repo() { return test::source_dir(); }
problem::problem cpu_softmax() { return problem::load(repo() / "problems" / "cpu" / "softmax"); }
problem::problem cuda_softmax() { return problem::load(repo() / "problems" / "softmax"); }
json doc(const std::string& name) {
  return json::parse(read_file(repo() / "tests" / "propose" / "data" / (name + ".json")));
}
device::ceilings h200() { return device::ceilings_from_json(doc("ceilings_h200")); }
propose::device_facts h200_facts() { return {"cuda: NVIDIA H200", h200()}; }
propose::device_facts cpu_facts() { return {"cpu: Intel(R) Xeon(R) Platinum 8480+", std::nullopt}; }
prompt_builder builder() { return prompt_builder(repo() / "prompts"); }
std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "missing: " << (needle)
#define EXPECT_LACKS(text, needle) EXPECT_EQ((text).find(needle), std::string::npos) << "unexpected: " << (needle)

/// Every request: the system prompt for the dialect, cacheable, one user message, no tag left.
void expect_well_formed(const llm::request& r) {
  EXPECT_TRUE(r.cache_system);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, llm::role::user);
  EXPECT_HAS(r.system, "kf_forward");
  EXPECT_HAS(r.system, "<<<<<<< SEARCH");
  EXPECT_HAS(r.system, "// kforge: param");
  EXPECT_LACKS(r.system, "{{");
  EXPECT_LACKS(r.messages[0].text, "{{");
  EXPECT_LACKS(r.messages[0].text, "\n\n\n"); // standalone tags leave no runs of blank lines
  EXPECT_LACKS(r.messages[0].text, "\n\n```\n"); // nor a blank line before a closing fence
  EXPECT_LACKS(r.messages[0].text, "prompt.hpp"); // template comments stay out
}

} // namespace

TEST(prompt_dialect, from_backend_and_source) {
  EXPECT_EQ(propose::dialect_for(cpu_softmax(), "#include <cute/tensor.hpp>"), "cpp");
  const auto p = cuda_softmax();
  EXPECT_EQ(propose::dialect_for(p, read_file(*p.seed)), "cuda");
  EXPECT_EQ(propose::dialect_for(p, ""), "cuda");
  EXPECT_EQ(propose::dialect_for(p, read_file(repo() / "examples" / "softmax_cute.cu")), "cute");
  EXPECT_EQ(propose::dialect_for(p, "#include <cutlass/gemm/device/gemm.h>\n"), "cute");
}

TEST(prompt_system, each_dialect_has_its_rules_and_the_common_ones) {
  const auto b = builder();
  const auto cuda = b.system_prompt("cuda"), cute = b.system_prompt("cute"), cpp = b.system_prompt("cpp");
  for (const auto* s : {&cuda, &cute, &cpp}) {
    EXPECT_HAS(*s, "float64 oracle");
    EXPECT_HAS(*s, "hidden case");
    EXPECT_HAS(*s, "NaN pattern");          // poisoned outputs
    EXPECT_HAS(*s, "Canary bytes");         // guard regions
    EXPECT_HAS(*s, "bit for bit");          // repeat determinism
    EXPECT_HAS(*s, "Timed calls are verified too");
    EXPECT_HAS(*s, "another stream or a thread that outlives the call");
    EXPECT_HAS(*s, "// kforge: constraint");
    EXPECT_HAS(*s, ">>>>>>> REPLACE");
    EXPECT_HAS(*s, "kf_workspace_bytes");
    EXPECT_LACKS(*s, "{{");
  }
  EXPECT_HAS(cuda, "a->stream");
  EXPECT_HAS(cuda, "// kforge: launch");
  EXPECT_HAS(cuda, "sm_90a");
  EXPECT_LACKS(cuda, "WGMMA");
  EXPECT_HAS(cute, "// kforge: launch"); // CuTe candidates follow the CUDA rules too
  EXPECT_HAS(cute, "WGMMA");
  EXPECT_HAS(cute, "cutlass::device_memory");
  EXPECT_HAS(cpp, "OpenMP");
  EXPECT_HAS(cpp, "-fopenmp");
  EXPECT_HAS(cpp, "```cpp");
  EXPECT_LACKS(cpp, "// kforge: launch");
  EXPECT_LACKS(cpp, "```cuda");
  EXPECT_THROW((void)b.system_prompt("tilelang"), kforge::error);
}

TEST(prompt_system, the_python_dialects_ask_for_a_model_new_file_in_a_python_fence) {
  const auto b = builder();
  const auto triton = b.system_prompt("triton"), inline_cuda = b.system_prompt("torch-cuda");
  for (const auto* s : {&triton, &inline_cuda}) {
    EXPECT_HAS(*s, "float64 oracle");
    EXPECT_HAS(*s, "class ModelNew(torch.nn.Module)");
    EXPECT_HAS(*s, "torch.cuda.current_stream()");
    EXPECT_HAS(*s, "# kforge: param BLOCK = 256 in {128, 256, 512}");
    EXPECT_HAS(*s, "```python");
    EXPECT_HAS(*s, ">>>>>>> REPLACE");
    EXPECT_LACKS(*s, "// kforge: param");
    EXPECT_LACKS(*s, "```cuda");
    EXPECT_LACKS(*s, "kf_forward");
    EXPECT_LACKS(*s, "{{");
  }
  EXPECT_HAS(triton, "@triton.jit");
  EXPECT_HAS(triton, "input_precision=\"ieee\"");
  EXPECT_LACKS(triton, "at::cuda::getCurrentCUDAStream()");
  EXPECT_HAS(inline_cuda, "load_inline");
  EXPECT_HAS(inline_cuda, "at::cuda::getCurrentCUDAStream()");
  EXPECT_LACKS(inline_cuda, "@triton.jit");
}

TEST(prompt_implement, a_forced_python_dialect_reaches_the_system_prompt_and_the_fences) {
  const auto p = cuda_softmax();
  auto b = builder();
  b.use_dialect("triton");
  const auto r = b.implement(p, h200_facts(), {.source = read_file(*p.seed), .label = "seed"});
  EXPECT_EQ(r.system, builder().system_prompt("triton"));
  EXPECT_HAS(r.messages[0].text, "```python"); // the fence a new candidate comes back in
  EXPECT_THROW(b.use_dialect("fortran"), kforge::error);
}

TEST(prompt_context, problem_with_ceilings_has_shapes_work_and_roofline) {
  const auto p = cuda_softmax();
  const json j = propose::problem_context(p, h200(), "cuda: NVIDIA H200");
  EXPECT_EQ(j["tensors"][0]["shape"], "[4096, 65536]");
  EXPECT_EQ(j["tensors"][0]["slot"], "inputs[0]");
  EXPECT_EQ(j["tensors"][1]["slot"], "outputs[0]");
  EXPECT_EQ(j["tensors"][1]["size"], "1.07 GB");
  EXPECT_EQ(j["work"]["flops"], "1.34 GFLOP");
  EXPECT_EQ(j["work"]["min_bytes"], "2.15 GB");
  EXPECT_EQ(j["work"]["intensity"], "0.625");
  // floor = max(2147483648 B / 4.02 TB/s, 1.342e9 FLOP / 51 TFLOP/s) = 534 us, memory-bound
  EXPECT_NEAR(j["device"]["roofline"]["floor_s"].get<double>(), 2147483648.0 / 4.02e12, 1e-12);
  EXPECT_EQ(j["device"]["roofline"]["floor"], "534 us");
  EXPECT_EQ(j["device"]["roofline"]["bound"], "memory");
  EXPECT_EQ(j["device"]["copy_bandwidth"], "4.02 TB/s");
  EXPECT_EQ(j["device"]["peak"], "51 TFLOP/s");
  EXPECT_EQ(j["reference"]["source"], trim_end(read_file(p.reference)));
  EXPECT_EQ(j["cases"][1]["distributions"], "`x` ~ logits(100)");
  EXPECT_TRUE(j["hidden_case"].get<bool>());

  const json none = propose::problem_context(p, std::nullopt, "cuda: NVIDIA H200");
  EXPECT_FALSE(none["device"]["calibrated"].get<bool>());
  EXPECT_FALSE(none["device"].contains("roofline"));
}

TEST(prompt_context, candidate_lists_declared_parameters) {
  const std::string src = "// kforge: param BLOCK = 256 in {128, 256, 512}\n"
                          "  //   kforge: constraint BLOCK % 32 == 0\n"
                          "int x; // not kforge: param here\n";
  const json j = propose::candidate_context(src, "r1", nullptr);
  ASSERT_EQ(j["params"].size(), 1u);
  EXPECT_EQ(j["params"][0], "BLOCK = 256 in {128, 256, 512}");
  EXPECT_EQ(j["constraints"][0], "BLOCK % 32 == 0");
  EXPECT_FALSE(j["evaluated"].get<bool>());
}

TEST(prompt_context, feedback_truncates_diagnostics) {
  const json d = doc("eval_build_failed");
  const json j = propose::feedback_context(d, 10);
  EXPECT_EQ(j["status"], "build_failed");
  EXPECT_EQ(j["build"]["toolchain"], "nvcc");
  EXPECT_EQ(j["build"]["total_lines"], 95);
  EXPECT_EQ(j["build"]["more_lines"], 85);
  EXPECT_HAS(j["build"]["text"].get<std::string>(), "identifier \"warp_max\" is undefined");
  EXPECT_FALSE(propose::feedback_context(d, 200)["build"].contains("more_lines"));
}

TEST(prompt_context, feedback_timing_names_every_baseline) {
  json d = doc("eval_passed");
  auto& t = d["timing"];
  t["cublas"] = t["reference"];
  t["cublas"]["subject"] = "cublas";
  t["cublas"]["median_s"] = 0.000459;
  t["speedup_over"]["cublas"] = 0.000459 / t["candidate"]["median_s"].get<double>();
  const json j = propose::feedback_context(d);
  EXPECT_EQ(j["timing"]["candidate"], "612 us");
  EXPECT_EQ(j["timing"]["reference"], "1.99 ms");
  EXPECT_EQ(j["timing"]["speedup"], "3.25x");
  ASSERT_EQ(j["timing"]["baselines"].size(), 1u);
  EXPECT_EQ(j["timing"]["baselines"][0]["name"], "cublas");
  EXPECT_EQ(j["timing"]["baselines"][0]["speedup"], "0.75x");
  EXPECT_EQ(j["timing"]["roofline"]["fraction"], "87%");
  EXPECT_EQ(j["resources"][0]["kernel"], "void (anonymous namespace)::softmax_online<512>(float const*, float*, long long)");
  EXPECT_TRUE(j["resources"][0]["spills"].get<bool>());
}

TEST(prompt_implement, cuda_softmax_passed_shows_problem_timing_and_resources) {
  const auto p = cuda_softmax();
  const json d = doc("eval_passed");
  const auto r = builder().implement(p, h200_facts(),
                                     {.source = read_file(repo() / "examples" / "softmax_nvrtc.cu"), .label = "r3.b2", .eval = &d});
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_EQ(r.system, builder().system_prompt("cuda"));
  EXPECT_HAS(u, "# Problem `softmax`");
  EXPECT_HAS(u, "| `inputs[0]` | `x` | input | f32 | [4096, 65536] | 1.07 GB |");
  EXPECT_HAS(u, "| `outputs[0]` | `y` | output | f32 | [4096, 65536] | 1.07 GB |");
  EXPECT_HAS(u, "- `large_logits`: `x` ~ logits(100)");
  EXPECT_HAS(u, "hidden case");
  EXPECT_HAS(u, "1.34 GFLOP, at least 2.15 GB moved; arithmetic intensity 0.625 FLOP/byte");
  EXPECT_HAS(u, "copy bandwidth 4.02 TB/s");
  EXPECT_HAS(u, "peak 51 TFLOP/s (fp32 dense GEMM)");
  EXPECT_HAS(u, "Roofline floor for one call: **534 us** (memory-bound");
  EXPECT_HAS(u, "```cuda\n" + trim_end(read_file(p.reference)) + "\n```");       // the reference, verbatim
  EXPECT_HAS(u, "# Candidate `r3.b2`");
  EXPECT_HAS(u, "kforge: launch softmax_online<512>");                 // the candidate's source
  EXPECT_HAS(u, "3.25x speedup");                                      // candidate.md's summary
  EXPECT_HAS(u, "| reference | 1.99 ms | 3.25x |");                    // feedback.md's table
  EXPECT_HAS(u, "the candidate reaches 87% of the floor");
  EXPECT_HAS(u, "3.51 TB/s of minimum traffic");
  EXPECT_HAS(u, "softmax_online<512>(float const*, float*, long long)` | 40 | 128 B | **8 / 8** |");
  EXPECT_HAS(u, "# Task");
  EXPECT_HAS(u, "faster than `r3.b2`");
}

TEST(prompt_implement, profile_digest_only_when_given) {
  const auto p = cuda_softmax();
  const json d = doc("eval_passed");
  candidate_ref c{.source = read_file(*p.seed), .label = "seed", .eval = &d};
  EXPECT_LACKS(builder().implement(p, h200_facts(), c).messages[0].text, "Profile of the timed run");
  c.profile = "dram__throughput 71% of peak\nsm__warps_active 38%";
  const auto u = builder().implement(p, h200_facts(), c).messages[0].text;
  EXPECT_HAS(u, "Profile of the timed run:\n\n```text\ndram__throughput 71% of peak\nsm__warps_active 38%\n```");
  c.eval = nullptr;
  EXPECT_THROW((void)builder().implement(p, h200_facts(), c), kforge::error);
}

TEST(prompt_implement, uncalibrated_cpu_problem_says_there_is_no_floor) {
  const auto p = cpu_softmax();
  const auto r = builder().implement(p, cpu_facts(), {.source = read_file(*p.seed), .label = "seed"});
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_EQ(r.system, builder().system_prompt("cpp"));
  EXPECT_HAS(u, "Device: cpu: Intel(R) Xeon(R) Platinum 8480+.");
  EXPECT_HAS(u, "has not been calibrated");
  EXPECT_HAS(u, "Not evaluated yet.");
  EXPECT_HAS(u, "```cpp\n" + trim_end(read_file(p.reference)) + "\n```");
  EXPECT_HAS(u, "| `inputs[0]` | `x` | input | f32 | [512, 1024] | 2.1 MB |");
  EXPECT_LACKS(u, "# Evaluation");
}

TEST(prompt_fix, build_failure_shows_truncated_diagnostics_and_the_attempt) {
  const auto p = cuda_softmax();
  const json d = doc("eval_build_failed");
  const candidate_ref c{.source = read_file(*p.seed), .label = "r1.b2", .eval = &d};
  const auto r = builder().fix(p, h200_facts(), c, 2, 3);
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_HAS(u, "# Evaluation of `r1.b2`: build_failed");
  EXPECT_HAS(u, "The build failed (nvcc). Compiler output, first lines of 95:");
  EXPECT_HAS(u, "candidate.cu(31): error: identifier \"warp_max\" is undefined");
  EXPECT_HAS(u, "... 35 more lines\n```");
  EXPECT_LACKS(u, "errors detected in the compilation"); // the last line is cut
  EXPECT_HAS(u, "`r1.b2` failed `build_failed`");
  EXPECT_HAS(u, "attempt 2 of 3");
  EXPECT_LACKS(u, "This is the last attempt");
  EXPECT_HAS(builder().fix(p, h200_facts(), c, 3, 3).messages[0].text, "This is the last attempt");
  EXPECT_THROW((void)builder().fix(p, h200_facts(), c, 4, 3), kforge::error);
  EXPECT_THROW((void)builder().fix(p, h200_facts(), {.source = "x", .label = "y"}, 1, 3), kforge::error);
}

TEST(prompt_fix, tolerance_failure_shows_the_worst_element_and_error_ratio) {
  const auto p = cpu_softmax();
  const json d = doc("eval_tolerance");
  const auto r = builder().fix(p, cpu_facts(), {.source = read_file(*p.seed), .label = "r2.b1", .eval = &d}, 1, 3);
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_EQ(r.system, builder().system_prompt("cpp"));
  EXPECT_HAS(u, "Failed check `tolerance` on case `large_logits`, trial 3, output `y`.");
  EXPECT_HAS(u, "- worst element `y[137, 802]` (flat index 141090): got 0.0412215106, expected 0.957183301 "
                "(the reference gives 0.957183242)");
  EXPECT_HAS(u, "- error: 1.55e+07x the reference's error; allowed 4x plus the floor");
  EXPECT_HAS(u, "- max abs error 0.916 (reference 5.914e-08, allowed 3.511e-07)");
  EXPECT_HAS(u, "Last evaluation: failed `tolerance`.");
  EXPECT_HAS(u, "case 'large_logits' (trial 3): output 'y': worst element y[137, 802]"); // the message
  EXPECT_LACKS(u, "| subject | median |"); // not timed
}

TEST(prompt_ideas, table_of_tried_ideas_and_the_ask) {
  const auto p = cuda_softmax();
  const json d = doc("eval_passed");
  std::vector<propose::idea_outcome> tried = {
      {"Online softmax: one pass for max and sum\nmore detail", "", 3.25},
      {"Vectorised float4 loads | stores", "failed: tolerance", std::nullopt},
      {"Two rows per block", "0.9x", 0.9}};
  const auto r = builder().ideas(p, h200_facts(), {.source = read_file(*p.seed), .label = "r3.b2", .eval = &d}, tried, 4);
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_HAS(u, "| 1 | Online softmax: one pass for max and sum | 3.25x |");
  EXPECT_HAS(u, "| 2 | Vectorised float4 loads \\| stores | failed: tolerance |");
  EXPECT_HAS(u, "| 3 | Two rows per block | 0.9x |");
  EXPECT_LACKS(u, "more detail");
  EXPECT_HAS(u, "Propose 4 distinct ideas");
  EXPECT_HAS(u, "1. **A one-line title**");
  const auto none = builder().ideas(p, h200_facts(), {.source = "s", .label = "seed"}, {}, 3).messages[0].text;
  EXPECT_HAS(none, "# Ideas tried so far\n\nNone yet.");
}

TEST(prompt_implement_idea, carries_the_idea_and_the_parent) {
  const auto p = cuda_softmax();
  const json d = doc("eval_passed");
  const auto r = builder().implement_idea(p, h200_facts(), {.source = read_file(*p.seed), .label = "r3.b2", .eval = &d},
                                          "Cache the row in shared memory\nRead x once: 64K floats fit in 227 KB.");
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_HAS(u, "# Idea\n\nCache the row in shared memory\nRead x once: 64K floats fit in 227 KB.\n");
  EXPECT_HAS(u, "Implement this idea on `r3.b2`");
  EXPECT_HAS(u, trim_end(read_file(*p.seed)) + "\n```");
}

TEST(prompt_cute, a_cute_candidate_gets_the_cute_system_prompt) {
  const auto p = cuda_softmax();
  const auto r = builder().implement(p, h200_facts(), {.source = read_file(repo() / "examples" / "softmax_cute.cu"), .label = "c1"});
  EXPECT_EQ(r.system, builder().system_prompt("cute"));
}

TEST(prompt_dir, default_follows_the_environment) {
  const char* old = std::getenv("KFORGE_PROMPTS");
  const std::string saved = old ? old : "";
  ::setenv("KFORGE_PROMPTS", "/some/where", 1);
  EXPECT_EQ(propose::default_prompts_dir(), std::filesystem::path("/some/where"));
  ::unsetenv("KFORGE_PROMPTS");
  // The test binary has no share/kforge/prompts beside it: the source tree's prompts/.
  EXPECT_EQ(propose::default_prompts_dir(), std::filesystem::path(KFORGE_SOURCE_DIR) / "prompts");
  if (old) ::setenv("KFORGE_PROMPTS", saved.c_str(), 1);
}

TEST(parse_ideas, numbered_list_with_bold_titles) {
  const auto ideas = propose::parse_ideas("Here are my ideas.\n\n"
                                          "1. **Online softmax**\n"
                                          "   Fuse the max and sum passes.\n"
                                          "   Saves one read of x.\n"
                                          "2. **Vectorised loads**\n"
                                          "   Use float4.\n",
                                          5);
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].title, "Online softmax");
  EXPECT_EQ(ideas[0].body, "Fuse the max and sum passes.\nSaves one read of x.");
  EXPECT_EQ(ideas[1].title, "Vectorised loads");
  EXPECT_EQ(ideas[1].text(), "Vectorised loads\nUse float4.");
}

TEST(parse_ideas, parenthesis_heading_and_bold_number_styles) {
  auto a = propose::parse_ideas("1) Tile rows\nbody a\n2) Use TMA\nbody b", 9);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[1].title, "Use TMA");
  EXPECT_EQ(a[1].body, "body b");

  auto b = propose::parse_ideas("### 1. Persistent kernel\nLoop over rows.\n\n### 2. Warp per row\nFor narrow rows.\n", 9);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].title, "Persistent kernel");
  EXPECT_EQ(b[0].body, "Loop over rows.");

  auto c = propose::parse_ideas("**1. Split K**\nx\n**2.** Swizzle\ny\n", 9);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].title, "Split K");
  EXPECT_EQ(c[1].title, "Swizzle");

  auto d = propose::parse_ideas("1. **Fuse passes**: read x once - saves 33% traffic.\n   Needs online rescaling.\n", 9);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].title, "Fuse passes");
  EXPECT_EQ(d[0].body, "read x once - saves 33% traffic.\nNeeds online rescaling.");

  auto e = propose::parse_ideas("## Idea 1: Bigger blocks\ntext\n## Idea 2: Smaller blocks\n", 9);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].title, "Bigger blocks");
}

TEST(parse_ideas, nested_lists_fences_limits_and_nothing) {
  const auto ideas = propose::parse_ideas("1. **Pipeline loads**\n"
                                          "   Steps:\n"
                                          "   1. issue cp.async\n"
                                          "   2. wait\n"
                                          "```\n3. not an item\n```\n"
                                          "2. **Next**\n"
                                          "4. out of sequence stays in the body\n"
                                          "3. **Third**\n",
                                          2);
  ASSERT_EQ(ideas.size(), 2u);
  EXPECT_EQ(ideas[0].title, "Pipeline loads");
  EXPECT_EQ(ideas[0].body, "Steps:\n1. issue cp.async\n2. wait\n```\n3. not an item\n```");
  EXPECT_EQ(ideas[1].title, "Next");
  EXPECT_EQ(ideas[1].body, "4. out of sequence stays in the body");
  EXPECT_TRUE(propose::parse_ideas("No list here.\nJust prose, 1.5x faster.", 3).empty());
  EXPECT_TRUE(propose::parse_ideas("1. a\n2. b", 0).empty());
  const auto title_below = propose::parse_ideas("1.\n**Title on the next line**\nbody\n", 3);
  ASSERT_EQ(title_below.size(), 1u);
  EXPECT_EQ(title_below[0].title, "Title on the next line");
  EXPECT_EQ(title_below[0].body, "body");
}

TEST(prompt_context, process_failures_and_timed_output_show_their_evidence) {
  std::string output;
  for (int i = 0; i < 100; ++i) output += "line " + std::to_string(i) + "\n";
  const json crashed{{"status", "crashed"}, {"passed", false}, {"message", "the verify worker died on SIGSEGV"},
                     {"failure", {{"name", "crashed"}, {"passed", false}, {"message", "the verify worker died on SIGSEGV"},
                                  {"detail", {{"how", "signal"}, {"exit_code", -1}, {"signal", "SIGSEGV"}, {"output", output}}}}}};
  const json j = propose::feedback_context(crashed, 20);
  EXPECT_EQ(j["check"]["name"], "crashed");
  EXPECT_EQ(j["check"]["process_output"]["more_lines"], 80);
  const auto facts = j["check"]["facts"].dump();
  EXPECT_HAS(facts, R"({"key":"signal","value":"SIGSEGV"})");
  EXPECT_LACKS(facts, "line 0"); // the output has its own block

  const json timed{{"status", "timed_output"}, {"passed", false}, {"message", "m"},
                   {"failure", {{"name", "timed_output"}, {"passed", false}, {"case", "standard"}, {"trial", 0},
                                {"detail", {{"check", "tolerance"}, {"where", "an early timed call"},
                                            {"detail", {{"error_ratio", 2.5e7}, {"alpha", 4.0},
                                                        {"worst", {{"index", 7}, {"element", "y[0, 7]"}, {"got", "0.98"},
                                                                   {"expected", "0.000176"}, {"reference", "0.000176"}}}}}}}}}};
  const json t = propose::feedback_context(timed);
  EXPECT_EQ(t["check"]["worst"]["element"], "y[0, 7]");
  EXPECT_EQ(t["check"]["tolerance"]["error_ratio"], "2.5e+07x the reference's error");
  EXPECT_HAS(t["check"]["facts"].dump(), "an early timed call");

  const json nonfinite{{"status", "nonfinite"}, {"passed", false}, {"message", "m"},
                       {"failure", {{"name", "nonfinite"}, {"passed", false},
                                    {"detail", {{"index", 3}, {"element", "y[0, 3]"}, {"got", "nan"}, {"expected", "0.5"},
                                                {"reference", "0.5"}, {"count", 12}}}}}};
  const json n = propose::feedback_context(nonfinite);
  EXPECT_EQ(n["check"]["worst"]["got"], "nan");
  EXPECT_EQ(n["check"]["facts"].dump(), R"([{"key":"count","value":"12"}])");
}

TEST(prompt_fix, a_crash_shows_what_the_process_printed) {
  const auto p = cpu_softmax();
  std::string output;
  for (int i = 0; i < 100; ++i) output += "frame " + std::to_string(i) + "\n";
  const json d{{"status", "crashed"}, {"passed", false}, {"message", "the verify worker died on SIGSEGV"},
               {"failure", {{"name", "crashed"}, {"passed", false}, {"message", "the verify worker died on SIGSEGV"},
                            {"detail", {{"how", "signal"}, {"signal", "SIGSEGV"}, {"output", output}}}}}};
  const auto r = builder().fix(p, cpu_facts(), {.source = "int x;", .label = "r1", .eval = &d}, 1, 2);
  expect_well_formed(r);
  const std::string& u = r.messages[0].text;
  EXPECT_HAS(u, "Failed check `crashed`.\n- how: signal\n- signal: SIGSEGV\n");
  EXPECT_HAS(u, "What the process printed (first lines of 100):\n\n```text\nframe 0\n");
  EXPECT_HAS(u, "frame 59\n... 40 more lines\n```");
  EXPECT_HAS(u, "For a crash, device error or timeout");
}
