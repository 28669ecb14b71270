// Extraction of a candidate from LLM answers written the ways models write them: chatty
// prose, several files, Python beside CUDA, cut-off answers, SEARCH/REPLACE edits and
// diffs, odd fences and line endings.
#include "propose/extract.hpp"
#include "build/params.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace kforge;
using propose::extract_candidate;
using propose::extracted;

namespace {

const propose::extract_options cuda{"cuda"};
const propose::extract_options cpp{"cpp"};

const std::string parent = R"(#include <kforge/kernel.h>

__global__ void scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = 2.0f * x[i];
  }
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const long long n = a->inputs[0].shape[0];
  const int threads = 256;
  scale<<<(n + threads - 1) / threads, threads, 0, (cudaStream_t)a->stream>>>(
      (const float*)a->inputs[0].data, (float*)a->outputs[0].data, n);
  return 0;
}
)";

const std::string vectorized = R"(#include <kforge/kernel.h>

__global__ void scale4(const float4* x, float4* y, long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    y[i] = make_float4(2.f * v.x, 2.f * v.y, 2.f * v.z, 2.f * v.w);
  }
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const long long n = a->inputs[0].shape[0];
  scale4<<<(n / 4 + 255) / 256, 256, 0, (cudaStream_t)a->stream>>>(
      (const float4*)a->inputs[0].data, (float4*)a->outputs[0].data, n / 4);
  return 0;
}
)";

const std::string cpu_source = R"(#include <kforge/kernel.h>
#include <cmath>

KF_EXPORT int kf_forward(const kf_args* a) {
  const KF_REAL* x = (const KF_REAL*)a->inputs[0].data;
  KF_REAL* y = (KF_REAL*)a->outputs[0].data;
  const long n = a->inputs[0].shape[0];
#pragma omp parallel for simd
  for (long i = 0; i < n; ++i) y[i] = 2 * x[i];
  return 0;
}
)";

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

std::string notes_of(const extracted& x) {
  std::string s;
  for (const auto& n : x.notes) s += n + "\n";
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

} // namespace

// ---- whole files ---------------------------------------------------------------------------

TEST(extract, chatty_prose_around_one_block) {
  const auto answer = "Sure! The kernel is memory-bound, so the main win is vectorized loads.\n\n"
                      "Here's the optimized version:\n\n```cuda\n" +
                      vectorized +
                      "```\n\n### Why it's faster\n\n- `float4` loads: 16 bytes per thread.\n"
                      "- Fewer blocks.\n\nLet me know if you want a version for odd sizes!";
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.mode, "whole");
  EXPECT_EQ(x.source, vectorized);
  EXPECT_TRUE(x.notes.empty()) << notes_of(x);
  EXPECT_TRUE(x.prose.rfind("Sure! The kernel is memory-bound", 0) == 0) << x.prose;
  EXPECT_TRUE(has(x.prose, "16 bytes per thread"));
  EXPECT_TRUE(has(x.prose, "odd sizes!"));
  EXPECT_FALSE(has(x.prose, "make_float4"));
}

TEST(extract, any_fence_and_info_string_gives_back_the_exact_source) {
  // Property: the source comes back byte for byte whatever the fence, info string, prose
  // and line endings around it.
  for (const std::string fence : {"```", "~~~", "````", "~~~~~"})
    for (const std::string info : {"cuda", "cu", "c++", "cpp", "", "CUDA", "cuda title=\"kernel.cu\"", "cpp kernel.cu",
                                   "cu:kernel.cu", "kernel.cu", "{.cpp}", "text"})
      for (const std::string before : {"", "Here you go:\n\n", "kernel.cu:\n"})
        for (const bool crlf : {false, true}) {
          std::string answer = before + fence + info + "\n" + vectorized + fence + "\n\nDone.";
          if (crlf) answer = replace_all(answer, "\n", "\r\n");
          const auto x = extract_candidate(answer, "", cuda);
          ASSERT_TRUE(x.ok) << fence << info << " crlf=" << crlf << ": " << x.error;
          EXPECT_EQ(x.source, vectorized) << fence << info;
          EXPECT_EQ(x.prose, std::string(before.empty() ? "" : before.substr(0, before.find('\n'))) +
                                 (before.empty() ? "" : "\n\n") + "Done.")
              << fence << info;
        }
}

TEST(extract, tilde_fences) {
  const auto x = extract_candidate("Updated:\n~~~cuda\n" + vectorized + "~~~\n", parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
}

TEST(extract, a_four_backtick_fence_keeps_a_three_backtick_line_inside) {
  const std::string src = "/*\nUsage:\n```\nkforge eval problems/scale kernel.cu\n```\n~~~\n*/\n" + vectorized;
  const auto x = extract_candidate("````cuda\n" + src + "````\nThat's all.", "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, src);
  EXPECT_EQ(x.prose, "That's all.");
  // A closing fence may be longer than the opening one, never shorter or of the other character.
  const auto y = extract_candidate("```cuda\n" + vectorized + "`````\n", "", cuda);
  ASSERT_TRUE(y.ok) << y.error;
  EXPECT_EQ(y.source, vectorized);
}

TEST(extract, crlf_answers_give_lf_sources) {
  const auto answer = replace_all("Here:\n```cuda\n" + vectorized + "```\n", "\n", "\r\n");
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
  EXPECT_EQ(x.source.find('\r'), std::string::npos);
  EXPECT_TRUE(has(notes_of(x), "CRLF"));
}

TEST(extract, a_fence_indented_in_a_list_item) {
  std::string indented;
  for (const auto& line : {"#include <kforge/kernel.h>", "KF_EXPORT int kf_forward(const kf_args* a) {", "  return 0;", "}"})
    indented += std::string("   ") + line + "\n";
  const auto x = extract_candidate("1. Replace the file with:\n\n   ```cpp\n" + indented + "   ```\n", "", cpp);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args* a) {\n  return 0;\n}\n");
}

TEST(extract, a_bare_source_without_fences_is_taken_whole) {
  const auto x = extract_candidate(cpu_source, "", cpp);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, cpu_source);
  EXPECT_EQ(x.prose, "");
  EXPECT_TRUE(has(notes_of(x), "no code fence"));
}

TEST(extract, prose_then_code_without_a_fence_is_not_taken_as_code) {
  const auto x = extract_candidate("Here is the kernel:\n" + cpu_source, "", cpp);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "no code")) << x.error;
  EXPECT_TRUE(has(x.error, "fenced block")) << x.error;
}

TEST(extract, a_file_name_in_prose_before_a_shell_block_does_not_make_it_code) {
  const auto blocks = propose::code_blocks("Compile with nvcc kernel.cu:\n```\nnvcc -O3 -arch=sm_90a kernel.cu -o k\n```\n"
                                           "### Step 2: ops.cuh\n```\n__device__ float twice(float v) { return 2.f * v; }\n```\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].kind, "bash");
  EXPECT_EQ(blocks[1].kind, "c");
  EXPECT_EQ(blocks[1].file, "ops.cuh");
}

TEST(extract, kernel_only_candidates_and_their_params_pass_through) {
  const std::string src = "// kforge: param BLOCK = 256 in {128, 256}\n"
                          "// kforge: launch scale<BLOCK><<<cdiv(x.numel, BLOCK), BLOCK>>>(x, y, x.numel)\n"
                          "template <int B>\n__global__ void scale(const float* x, float* y, long long n) {}\n";
  const auto x = extract_candidate("A kernel-only version, block size tunable:\n```cuda\n" + src + "```", "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, src);
  EXPECT_TRUE(build::declares_params(x.source));
  EXPECT_EQ(build::parse_params(x.source, "cand.cu").params.size(), 1u);
}

TEST(extract, several_whole_candidates_take_the_last_revision) {
  const auto answer = "First attempt:\n```cuda\n" + parent + "```\nWait, that's the original. Vectorized:\n```cuda\n" +
                      vectorized + "```\n";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
  EXPECT_TRUE(has(notes_of(x), "used the last, block 2")) << notes_of(x);
  EXPECT_TRUE(has(notes_of(x), "ignored block 1: an earlier version")) << notes_of(x);
}

TEST(extract, a_python_block_beside_the_cuda_block_is_ignored) {
  const auto answer = "You can test it with:\n```python\nimport torch\nx = torch.randn(1024, device='cuda')\n"
                      "print((2 * x).sum())\n```\nand the kernel:\n```cuda\n" +
                      vectorized + "```\nBuild with:\n```bash\nkforge eval problems/scale kernel.cu\n```";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
  const auto n = notes_of(x);
  EXPECT_TRUE(has(n, "3 code blocks; used block 2 (defines kf_forward)")) << n;
  EXPECT_TRUE(has(n, "ignored block 1 (python)")) << n;
  EXPECT_TRUE(has(n, "ignored block 3 (bash)")) << n;
}

TEST(extract, unlabelled_blocks_are_sniffed) {
  const auto answer = "```\nimport torch\nfrom torch.utils.cpp_extension import load_inline\n\ndef f(x):\n"
                      "    return 2 * x\n```\n```\n" +
                      vectorized + "```\n";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
  EXPECT_TRUE(has(notes_of(x), "ignored block 1 (python)")) << notes_of(x);
  const auto blocks = propose::code_blocks(answer);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].kind, "python");
  EXPECT_EQ(blocks[1].kind, "c");
}

// ---- several files ----------------------------------------------------------------------------

const std::string header = R"(#pragma once
__device__ __forceinline__ float twice(float v) { return 2.f * v; }
)";

const std::string main_with_include = R"(#include <kforge/kernel.h>
#include "ops.cuh"

__global__ void scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = twice(x[i]);
}

KF_EXPORT int kf_forward(const kf_args* a) {
  const long long n = a->inputs[0].shape[0];
  scale<<<(n + 255) / 256, 256, 0, (cudaStream_t)a->stream>>>((const float*)a->inputs[0].data,
                                                            (float*)a->outputs[0].data, n);
  return 0;
}
)";

TEST(extract, a_header_the_main_file_includes_is_inlined_whatever_names_it) {
  const std::vector<std::pair<std::string, std::string>> namings = {
      {"**ops.cuh**\n", "cuda"},     {"ops.cuh:\n\n", "cuda"},           {"### ops.cuh\n", "cpp"},
      {"File: `ops.cuh`\n", "cuda"}, {"Here is the helper `ops.cuh`:\n", ""}, {"", "cuda title=\"ops.cuh\""},
      {"", "cpp ops.cuh"},           {"", "cu:ops.cuh"},                 {"", "ops.cuh"}};
  for (const auto& [label, info] : namings) {
    for (const bool header_first : {true, false}) {
      const std::string hblock = label + "```" + info + "\n" + header + "```\n\n";
      const std::string mblock = "**kernel.cu**\n```cuda\n" + main_with_include + "```\n\n";
      const auto answer = "Split into two files.\n\n" + (header_first ? hblock + mblock : mblock + hblock);
      const auto x = extract_candidate(answer, "", cuda);
      ASSERT_TRUE(x.ok) << label << info << ": " << x.error;
      EXPECT_FALSE(has(x.source, "#include \"ops.cuh\"")) << label << info << "\n" << x.source;
      EXPECT_TRUE(has(x.source, "// begin \"ops.cuh\" (inlined from the answer)\n__device__ __forceinline__ float twice"))
          << label << info << "\n" << x.source;
      EXPECT_FALSE(has(x.source, "#pragma once")) << x.source;
      EXPECT_TRUE(has(notes_of(x), "inlined \"ops.cuh\"")) << notes_of(x);
      EXPECT_FALSE(has(notes_of(x), "ignored")) << label << info << "\n" << notes_of(x);
    }
  }
}

TEST(extract, a_first_line_comment_names_a_header) {
  const auto answer = "```cuda\n// file: ops.cuh\n" + header + "```\n```cuda\n" + main_with_include + "```\n";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(has(x.source, "// file: ops.cuh\n__device__")) << x.source;
}

TEST(extract, headers_are_inlined_once_even_when_they_include_each_other) {
  const auto answer = "**a.cuh**\n```cuda\n#pragma once\n#include \"b.cuh\"\n__device__ int fa() { return fb(); }\n```\n"
                      "**b.cuh**\n```cuda\n#pragma once\n#include \"a.cuh\"\n__device__ int fb() { return 1; }\n```\n"
                      "**kernel.cu**\n```cuda\n#include \"a.cuh\"\n#include \"b.cuh\"\n"
                      "KF_EXPORT int kf_forward(const kf_args* a) { return 0; }\n```\n";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  const auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (auto p = x.source.find(s); p != std::string::npos; p = x.source.find(s, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("__device__ int fa()"), 1u) << x.source;
  EXPECT_EQ(count("__device__ int fb()"), 1u) << x.source;
  EXPECT_EQ(count("#include \""), 0u) << x.source;
  // b is inlined inside a (its include comes first), so fb precedes fa.
  EXPECT_LT(x.source.find("int fb()"), x.source.find("int fa()"));
}

TEST(extract, an_unnamed_header_fills_the_one_include_nothing_names) {
  const auto answer = "The helpers:\n```cuda\n" + header + "```\nThe kernel:\n```cuda\n" + main_with_include + "```\n";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(has(x.source, "float twice(float v)")) << x.source;
  EXPECT_TRUE(has(notes_of(x), "block 1 has no file name; took it as \"ops.cuh\"")) << notes_of(x);
}

TEST(extract, a_missing_header_is_noted) {
  const auto x = extract_candidate("```cuda\n" + main_with_include + "```", "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(has(notes_of(x), "includes \"ops.cuh\", which the answer does not give")) << notes_of(x);
}

TEST(extract, a_markdown_block_is_read_for_its_own_blocks) {
  const auto answer = "`````markdown\n## Plan\nVectorize.\n```cuda\n" + vectorized + "```\n`````\n";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
  EXPECT_TRUE(has(x.prose, "Vectorize.")) << x.prose;
}

// ---- edits -------------------------------------------------------------------------------------

TEST(extract, search_replace_edits_apply_in_order) {
  const auto answer = R"(Two changes: a grid-stride loop and a larger block.

```cuda
kernel.cu
<<<<<<< SEARCH
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = 2.0f * x[i];
  }
=======
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    y[i] = 2.0f * x[i];
>>>>>>> REPLACE
```

```cuda
<<<<<<< SEARCH
  const int threads = 256;
=======
  const int threads = 512;
>>>>>>> REPLACE
```
)";
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.mode, "edits");
  auto expected = replace_all(parent, "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n  if (i < n) {\n"
                                      "    y[i] = 2.0f * x[i];\n  }\n",
                              "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
                              "       i += (long long)gridDim.x * blockDim.x)\n    y[i] = 2.0f * x[i];\n");
  expected = replace_all(expected, "threads = 256", "threads = 512");
  EXPECT_EQ(x.source, expected);
  EXPECT_TRUE(has(notes_of(x), "applied 2 edits from blocks 1, 2")) << notes_of(x);
  EXPECT_EQ(x.prose, "Two changes: a grid-stride loop and a larger block.");
}

TEST(extract, a_later_edit_sees_the_earlier_ones) {
  const auto answer = "<<<<<<< SEARCH\n  const int threads = 256;\n=======\n  const int threads = 128;\n>>>>>>> REPLACE\n"
                      "<<<<<<< SEARCH\n  const int threads = 128;\n=======\n  const int threads = 64;\n>>>>>>> REPLACE\n";
  const auto x = extract_candidate(answer, parent, cuda); // edits outside any fence
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(has(x.source, "const int threads = 64;"));
  EXPECT_EQ(x.prose, "");
}

TEST(extract, edits_tolerate_indentation_and_trailing_space_and_reindent) {
  // The model dropped the function's indentation and added trailing spaces.
  const auto answer = "```\n<<<<<<< SEARCH\nif (i < n) {   \n  y[i] = 2.0f * x[i];\n}\n=======\nif (i < n) {\n"
                      "  const float v = x[i];\n  y[i] = v + v;\n}\n>>>>>>> REPLACE\n```";
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_TRUE(has(x.source, "\n  if (i < n) {\n    const float v = x[i];\n    y[i] = v + v;\n  }\n}\n")) << x.source;
  EXPECT_TRUE(has(notes_of(x), "matched only when ignoring whitespace; its replacement was re-indented")) << notes_of(x);
  // Over-indented the other way.
  const auto y = extract_candidate("<<<<<<< SEARCH\n        return 0;\n=======\n        cudaGetLastError();\n"
                                   "        return 0;\n>>>>>>> REPLACE\n",
                                   parent, cuda);
  ASSERT_TRUE(y.ok) << y.error;
  EXPECT_TRUE(has(y.source, "\n  cudaGetLastError();\n  return 0;\n}")) << y.source;
}

TEST(extract, edits_not_found_name_the_first_line_and_the_closest) {
  const auto answer = "```cuda\n<<<<<<< SEARCH\n  const int threads = 255;\n  foo();\n=======\n  const int threads = 512;\n"
                      ">>>>>>> REPLACE\n```";
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "edit 1 of 1 (block 1): the SEARCH text is not in the parent source (it starts "
                           "\"const int threads = 255;\", 2 lines); the closest parent line is line 12 "
                           "\"const int threads = 256;\""))
      << x.error;
  EXPECT_EQ(x.error.find('\n'), std::string::npos);
  EXPECT_TRUE(x.source.empty());
}

TEST(extract, ambiguous_edits_are_refused) {
  const auto x = extract_candidate("<<<<<<< SEARCH\n  }\n=======\n  } // end\n>>>>>>> REPLACE\n", parent + "  }\n", cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "matches 2 places in the parent (lines 7, 17)")) << x.error;
  EXPECT_TRUE(has(x.error, "ambiguous")) << x.error;
}

TEST(extract, empty_search_is_refused) {
  const auto x = extract_candidate("<<<<<<< SEARCH\n=======\n#include <cuda_fp16.h>\n>>>>>>> REPLACE\n", parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "the SEARCH section is empty")) << x.error;
}

TEST(extract, edits_without_a_parent_or_a_closing_marker_are_refused) {
  const std::string edit = "<<<<<<< SEARCH\n  return 0;\n=======\n  return 1;\n>>>>>>> REPLACE\n";
  auto x = extract_candidate(edit, "", cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "no parent source")) << x.error;
  x = extract_candidate("```\n<<<<<<< SEARCH\n  return 0;\n=======\n  return 1;\n```\n", parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "no '>>>>>>> REPLACE' line")) << x.error;
}

TEST(extract, edits_that_remove_the_entry_point_are_refused) {
  const auto x = extract_candidate("<<<<<<< SEARCH\nKF_EXPORT int kf_forward(const kf_args* a) {\n=======\n"
                                   "int forward(const kf_args* a) {\n>>>>>>> REPLACE\n",
                                   parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "after the edits, the source has no entry point")) << x.error;
}

TEST(extract, edit_replacement_property_on_every_unique_line) {
  // Property: replacing any line that occurs once in the parent with SEARCH/REPLACE gives the
  // parent with that line replaced, in a fence or not, exact or re-indented.
  std::vector<std::string> lines;
  for (std::size_t p = 0, e; (e = parent.find('\n', p)) != std::string::npos; p = e + 1) lines.push_back(parent.substr(p, e - p));
  int tried = 0;
  for (const auto& line : lines) {
    if (line.find_first_not_of(" ") == std::string::npos) continue;
    if (std::count(lines.begin(), lines.end(), line) != 1) continue;
    std::size_t stripped_count = 0;
    const auto stripped = line.substr(line.find_first_not_of(' '));
    for (const auto& l : lines) stripped_count += l.size() >= stripped.size() && l.substr(l.find_first_not_of(' ') == std::string::npos ? 0 : l.find_first_not_of(' ')) == stripped;
    if (stripped_count != 1) continue;
    const std::string indent = line.substr(0, line.find_first_not_of(' '));
    const auto expected = replace_all("\n" + parent, "\n" + line + "\n", "\n" + indent + "// changed\n").substr(1);
    for (const bool fenced : {false, true}) {
      const auto edit = "<<<<<<< SEARCH\n" + stripped + "\n=======\n// changed\n>>>>>>> REPLACE\n";
      const auto x = extract_candidate(fenced ? "```cuda\n" + edit + "```\n" : edit, parent, cuda);
      if (line.find("kf_forward") != std::string::npos) {
        EXPECT_FALSE(x.ok);
        continue;
      }
      ASSERT_TRUE(x.ok) << line << ": " << x.error;
      EXPECT_EQ(x.source, expected) << line;
      ++tried;
    }
  }
  EXPECT_GT(tried, 10);
}

TEST(extract, a_unified_diff_applies_by_context) {
  const auto answer = R"(```diff
--- a/kernel.cu
+++ b/kernel.cu
@@ -11,7 +11,7 @@ KF_EXPORT int kf_forward(const kf_args* a) {
   const long long n = a->inputs[0].shape[0];
-  const int threads = 256;
+  const int threads = 1024;
   scale<<<(n + threads - 1) / threads, threads, 0, (cudaStream_t)a->stream>>>(
```
)";
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.mode, "edits");
  EXPECT_EQ(x.source, replace_all(parent, "threads = 256", "threads = 1024"));
  const auto bad = extract_candidate("```diff\n@@ -1,1 +1,1 @@\n-#include <kforge/kernels.h>\n+#include <kforge/kernel.h>\n```",
                                     parent, cuda);
  ASSERT_FALSE(bad.ok);
  EXPECT_TRUE(has(bad.error, "diff hunk 1 of 1 (block 1): the SEARCH text is not in the parent")) << bad.error;
}

TEST(extract, the_later_of_edits_and_a_whole_file_wins) {
  const std::string edit = "```\n<<<<<<< SEARCH\n  return 0;\n=======\n  return 0; // edited\n>>>>>>> REPLACE\n```\n";
  auto x = extract_candidate(edit + "Full file for reference:\n```cuda\n" + vectorized + "```\n", parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.mode, "whole");
  EXPECT_EQ(x.source, vectorized);
  EXPECT_TRUE(has(notes_of(x), "ignored block 1 (edits): a whole file comes after it")) << notes_of(x);
  x = extract_candidate("Your current code:\n```cuda\n" + parent + "```\n" + edit, parent, cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.mode, "edits");
  EXPECT_TRUE(has(x.source, "return 0; // edited"));
}

// ---- refusals ---------------------------------------------------------------------------------

TEST(extract, a_truncated_answer_says_it_was_cut_off) {
  const auto answer = "Here's a faster version using warp shuffles:\n\n```cuda\n" + vectorized.substr(0, 200);
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "cut off")) << x.error;
  EXPECT_TRUE(has(x.error, "max_tokens")) << x.error;
  EXPECT_TRUE(x.source.empty());
  EXPECT_EQ(x.prose, "Here's a faster version using warp shuffles:");
}

TEST(extract, no_code_at_all) {
  const auto x = extract_candidate("I think the kernel is already optimal; it is memory-bound at 90% of peak.", parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "the answer has no code")) << x.error;
  EXPECT_EQ(x.prose, "I think the kernel is already optimal; it is memory-bound at 90% of peak.");
  EXPECT_FALSE(extract_candidate("", parent, cuda).ok);
  EXPECT_FALSE(extract_candidate(" \n\n", parent, cuda).ok);
}

TEST(extract, only_python_is_the_wrong_language) {
  const auto answer = "```python\nimport torch\nfrom torch.utils.cpp_extension import load_inline\n"
                      "src = '__global__ void k() {}'\nmod = load_inline('k', cpp_sources='', cuda_sources=src)\n```";
  const auto x = extract_candidate(answer, parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "the answer has no cuda code, only python (1 block)")) << x.error;
  EXPECT_TRUE(has(x.error, "--dialect torch-cuda")) << x.error;
  EXPECT_TRUE(has(x.error, "kf_forward")) << x.error;
}

TEST(extract, code_without_an_entry_point_says_what_the_abi_needs) {
  const auto x = extract_candidate("```cuda\n__global__ void scale(const float* x, float* y) {}\n```", parent, cuda);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "has no entry point")) << x.error;
  EXPECT_TRUE(has(x.error, "kf_forward")) << x.error;
  EXPECT_TRUE(has(x.error, "// kforge: launch")) << x.error;
  // A declaration or a call is not a definition.
  const auto y = extract_candidate("```cpp\nKF_EXPORT int kf_forward(const kf_args* args);\nint r = kf_forward(&a);\n```", "", cpp);
  EXPECT_FALSE(y.ok);
}

TEST(extract, cuda_code_for_a_cpu_problem_is_refused) {
  auto x = extract_candidate("```cpp\n" + vectorized + "```", "", cpp);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "the source is CUDA (__global__), but the candidate language is cpp")) << x.error;
  x = extract_candidate("```cuda\n// kforge: launch k<<<1, 32>>>(x)\n__global__ void k(float*) {}\n```", "", cpp);
  ASSERT_FALSE(x.ok);
  EXPECT_TRUE(has(x.error, "kernel-only")) << x.error;
  x = extract_candidate("```cpp\n" + cpu_source + "```", "", cpp);
  EXPECT_TRUE(x.ok) << x.error;
  EXPECT_FALSE(extract_candidate("```cpp\n" + cpu_source + "```", "", {"rust"}).ok);
}

TEST(extract, a_think_section_is_not_the_answer) {
  const auto answer = "<think>\nMaybe:\n```cuda\n" + parent + "```\nNo, vectorize.\n</think>\nVectorized:\n```cuda\n" +
                      vectorized + "```";
  const auto x = extract_candidate(answer, "", cuda);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, vectorized);
  EXPECT_EQ(x.prose, "Vectorized:");
  const auto cut = extract_candidate("<think>\nThe kernel reads x twice, so", "", cuda);
  ASSERT_FALSE(cut.ok);
  EXPECT_TRUE(has(cut.error, "<think>")) << cut.error;
}

TEST(extract, never_throws_and_never_accepts_a_source_without_an_entry_point) {
  // Property: every prefix of realistic answers is handled; an ok result always has an
  // entry point, and a cut inside a fence is reported as cut off.
  const std::vector<std::string> answers = {
      "Sure:\n```cuda\n" + vectorized + "```\nDone.",
      "**ops.cuh**\n```cuda\n" + header + "```\n```cuda\n" + main_with_include + "```\n",
      "```diff\n@@ -12,1 +12,1 @@\n-  const int threads = 256;\n+  const int threads = 128;\n```\n",
      "<<<<<<< SEARCH\n  return 0;\n=======\n  return 1;\n>>>>>>> REPLACE\n",
  };
  for (const auto& a : answers)
    for (std::size_t n = 0; n <= a.size(); n += 7) {
      extracted x;
      ASSERT_NO_THROW(x = extract_candidate(a.substr(0, n), parent, cuda));
      if (x.ok) {
        EXPECT_TRUE(x.source.find("kf_forward") != std::string::npos) << a.substr(0, n);
      } else {
        EXPECT_FALSE(x.error.empty());
        EXPECT_EQ(x.error.find('\n'), std::string::npos) << x.error;
      }
    }
}

TEST(extract, code_blocks_report_info_kind_and_file) {
  const auto blocks = propose::code_blocks("kernel.cu:\n```cuda\nint a;\n```\n~~~ {.python}\nimport os\n~~~\n"
                                           "```cpp title=\"x.hpp\"\nint b;\n```\n```c\n// file: y.h\nint c;\n```\n```cuda\nint d;");
  ASSERT_EQ(blocks.size(), 5u);
  EXPECT_EQ(blocks[0].file, "kernel.cu");
  EXPECT_EQ(blocks[0].kind, "c");
  EXPECT_EQ(blocks[0].body, "int a;\n");
  EXPECT_EQ(blocks[0].line, 2);
  EXPECT_EQ(blocks[1].kind, "python");
  EXPECT_EQ(blocks[2].file, "x.hpp");
  EXPECT_EQ(blocks[2].info, "cpp title=\"x.hpp\"");
  EXPECT_EQ(blocks[3].file, "y.h");
  EXPECT_TRUE(blocks[3].closed);
  EXPECT_FALSE(blocks[4].closed);
  EXPECT_EQ(blocks[4].index, 5);
}

namespace {
const propose::extract_options python{"python"};
const std::string model_new = "import torch\n"
                              "import triton\n\n"
                              "# kforge: param BLOCK = 1024 in {256, 1024}\n\n"
                              "class ModelNew(torch.nn.Module):\n"
                              "    def forward(self, x):\n"
                              "        return torch.relu(x)\n";
} // namespace

TEST(extract_python, a_python_fence_with_model_new_is_the_candidate_as_written) {
  const auto x = extract_candidate("Fuse it in Triton.\n\n```python\n" + model_new + "```\n", "", python);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, model_new);
  EXPECT_EQ(x.mode, "whole");
  EXPECT_EQ(x.prose, "Fuse it in Triton.");
}

TEST(extract_python, an_untagged_load_inline_file_counts_though_its_strings_read_as_cuda) {
  const std::string src = "from torch.utils.cpp_extension import load_inline\n"
                          "src = r\"\"\"\n__global__ void k(float* y) { y[0] = 1; }\n#include <torch/extension.h>\n\"\"\"\n"
                          "ext = load_inline(name=\"k\", cpp_sources=\"\", cuda_sources=src)\n"
                          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return ext.k(x)\n";
  const auto x = extract_candidate("```\n" + src + "```\n```bash\npip install triton\n```\n", "", python);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.source, src);
}

TEST(extract_python, edits_apply_to_a_python_parent_and_the_result_must_keep_model_new) {
  const auto x = extract_candidate("<<<<<<< SEARCH\n        return torch.relu(x)\n=======\n        return x.clamp_min(0)\n"
                                   ">>>>>>> REPLACE\n",
                                   model_new, python);
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.mode, "edits");
  EXPECT_NE(x.source.find("return x.clamp_min(0)"), std::string::npos);
  const auto gone = extract_candidate("<<<<<<< SEARCH\nclass ModelNew(torch.nn.Module):\n=======\nclass Other:\n"
                                      ">>>>>>> REPLACE\n",
                                      model_new, python);
  EXPECT_FALSE(gone.ok);
  EXPECT_NE(gone.error.find("class ModelNew"), std::string::npos) << gone.error;
}

TEST(extract_python, a_cuda_answer_to_a_python_dialect_says_what_was_expected) {
  const auto x = extract_candidate("```cuda\n" + parent + "```\n", "", python);
  EXPECT_FALSE(x.ok);
  EXPECT_NE(x.error.find("class ModelNew"), std::string::npos) << x.error;
  // ...and a ModelNew answer to a CUDA search names the dialect that takes it.
  const auto y = extract_candidate("```python\nfrom torch.utils.cpp_extension import load_inline\n" + model_new + "```\n", "", cuda);
  EXPECT_FALSE(y.ok);
  EXPECT_NE(y.error.find("--dialect torch-cuda"), std::string::npos) << y.error;
}
