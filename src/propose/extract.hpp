#pragma once
// From an LLM's answer to one candidate source file. Answers are markdown: prose, fenced
// code blocks (``` or ~~~, any length >= 3), sometimes several files, sometimes
// SEARCH/REPLACE edits or a unified diff against the parent, sometimes cut off. This module
// never throws on a bad answer: it returns ok=false with a one-line error that can be stored
// with the failed proposal and shown to the model on its next try. docs/extraction.md gives
// the rules.
//
//   auto x = propose::extract_candidate(answer, parent_source, {.language = "cuda"});
//   if (!x.ok) record_failed_proposal(x.error);          // "the answer was cut off inside ..."
//   else build(x.source);                                // x.mode: "whole" or "edits"; x.prose: the idea
//
// What it promises when ok: `source` is one file (headers the answer gives and the file
// includes are inlined) that defines kf_forward (include/kforge/kernel.h) or declares
// `// kforge: launch` directives (a kernel-only candidate); with language "cpp" it has no
// CUDA constructs; with language "python" it is a Python file defining `class ModelNew` (taken
// as given: nothing is inlined). `// kforge: param` lines are kept as they are (build/params.hpp reads
// them). Line endings are LF.
#include <string>
#include <string_view>
#include <vector>

namespace kforge::propose {

struct extract_options {
  std::string language; // "cuda" or "cpp" (the problem's backend: cuda or cpu), "python" (a ModelNew
                        // file: --dialect triton or torch-cuda); empty: cuda or cpp
};

struct extracted {
  bool ok = false;
  std::string error;              // one line: why nothing usable was found (for the failed proposal)
  std::string source;             // the full candidate source
  std::string mode;               // "whole" (a file from the answer) or "edits" (applied to the parent)
  std::vector<std::string> notes; // what was chosen, ignored, inlined or repaired, one line each
  std::string prose;              // the answer outside code blocks, trimmed: the model's explanation
};

/// One fenced block of an answer (or SEARCH/REPLACE edits written outside any fence).
struct code_block {
  int index = 0;          // 1-based, in answer order
  int line = 0;           // answer line of the opening fence
  std::string info;       // the fence's info string as written ("cuda title=\"k.cu\"")
  std::string kind;       // "c" (C, C++ or CUDA), "diff", "edits" (SEARCH/REPLACE), or the
                          // language otherwise ("python", "bash", "json", ...); "text" if unknown
  std::string file;       // its file name, from the info string, the line before, or a first-line comment
  std::string body;       // the content, LF line endings, without the fences
  bool closed = true;     // false: the answer ends inside it
};

/// The code blocks of `answer` in order; a ```markdown block's own blocks are included
/// instead of it. Does not throw.
[[nodiscard]] std::vector<code_block> code_blocks(std::string_view answer);

/// The candidate source the answer gives: a whole file, or edits applied to
/// `parent_source` (may be empty when there is no parent). Does not throw.
[[nodiscard]] extracted extract_candidate(std::string_view answer, std::string_view parent_source,
                                          const extract_options& options);

} // namespace kforge::propose
