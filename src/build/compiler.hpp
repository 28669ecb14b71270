#pragma once
// Turns a kernel source into a loadable shared object, through a content-hash cache.
//   build::request rq{.source = "seed.cpp", .real = KF_F32, .role = "candidate"};
//   build::artifact a = build::compile(rq);   // a.ok, a.library, a.diagnostics
// A failed compile is a value (ok == false, diagnostics set), not an exception: a
// broken candidate is normal data. Exceptions mean the toolchain itself is unusable.
//
// Toolchains, chosen per source (docs/candidates.md says when each applies):
//   host   the CPU backend: $KFORGE_CXX, else $CXX, else g++; -O3 -march=native -fopenmp.
//   nvcc   a CUDA source with host code (kf_forward launching its kernels, library calls):
//          a shared object for one architecture, default sm_90a (Hopper's wgmma/TMA
//          instructions need the 'a' target).
//   python a .py file defining ModelNew (KernelBench's format): build/compile_python.cpp.
//   nvrtc  a kernel-only CUDA source, one that declares `// kforge: launch` directives
//          (build/launch_plan.hpp): device code alone, compiled by NVRTC (through the
//          kforge-nvrtc driver) to a cubin, which the worker launches itself. No host
//          compiler runs, so it builds several times faster than nvcc.
// Both CUDA toolchains keep ptxas -v's per-kernel resource report.
#include <kforge/kernel.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::build {

struct request {
  std::filesystem::path source;      // the file to compile
  kf_dtype real = KF_F32;            // KF_REAL: the problem dtype, or f64 for the oracle
  std::string role = "candidate";    // "candidate", "reference", "oracle": recorded, not hashed
  std::vector<std::string> extra_flags;
  std::vector<std::filesystem::path> include_dirs; // besides include/ and the source's own folder
  std::string cuda_arch;             // nvcc/nvrtc: "90a" (default), "100a", ...
  // The problem's tensor names, when known: a kernel-only candidate's launch directives are
  // checked against them at build time, so a misspelt name is a build error.
  std::vector<std::string> input_names, output_names;
  // A Python candidate's problem (worker::python_candidate_spec): its build runs ModelNew once
  // at the problem's shapes, so the problem is part of the build.
  nlohmann::json python_spec;
};

enum class problem_backend { cpu, cuda };

struct artifact {
  bool ok = false;
  bool cached = false;               // served from the cache, no compiler run
  std::string toolchain;             // "host", "nvcc" or "nvrtc"
  std::filesystem::path library;     // the .so (host, nvcc) or .cubin (nvrtc), when ok; a cubin's
                                     // launch plan is beside it (launch_plan_path)
  std::string diagnostics;           // compiler output (warnings too), truncated
  std::string command;               // the full compiler command line
  std::string compiler;              // compiler identity: first line of --version
  std::string cache_key;             // sha256 of source, flags, compiler identity and ABI header
  std::string sha256;                // of the artifact (library), recorded when built, checked when served
  std::string cache_note;            // why the cache entry was not used as is, when it was not; else empty
  double duration_s = 0.0;           // compiler wall time (0 when cached)
  nlohmann::json resources = nlohmann::json::array(); // nvcc: per kernel registers, smem, stack, spills
  std::string confinement;           // "kforge-confine" when the compiler ran confined, else why not
};

/// Writes `source` content-addressed under <cache>/sources/ (with the extension of `like`),
/// once: the same text always has the same path, so it has one build key and one evaluation
/// config. @return its path.
std::filesystem::path write_source(const std::string& source, const std::filesystem::path& like);

/// Compiles rq.source with the toolchain of backend b. @post ok implies exists(library)
[[nodiscard]] artifact compile(const request& rq, problem_backend b);
[[nodiscard]] artifact compile_host(const request& rq);
[[nodiscard]] artifact compile_nvcc(const request& rq);
[[nodiscard]] artifact compile_nvrtc(const request& rq);
/// A Python candidate (ModelNew): imported, constructed and called once (the JIT), confined.
[[nodiscard]] artifact compile_python(const request& rq, problem_backend b);
/// The folder a Python candidate's build writes its JIT caches to (read-only to its workers).
[[nodiscard]] std::filesystem::path python_jit_dir(const std::string& cache_key);
/// What a Python candidate's build will be, known before it runs: its cache key, JIT folder
/// and the build record its workers embed the interpreter from (<library>.python.json), so
/// workers can be started while it builds (worker/early_workers.hpp).
struct python_plan {
  std::string why_not; // non-empty: no build is possible (no torch, no shared libpython)
  std::string compiler;
  std::string cache_key;
  std::filesystem::path jit_dir;
  nlohmann::json record;
};
[[nodiscard]] python_plan plan_python_build(const request& rq);
/// What a worker running the Python candidate `library` may read: the file, its build record,
/// the interpreter and its sys.path, the JIT folder (and a staged record's folder, "stage").
[[nodiscard]] std::vector<std::filesystem::path> python_read_paths(const std::filesystem::path& library);
/// Whether `source` defines `class ModelNew` (KernelBench's solution contract): the words at the
/// start of a line, followed by '(', ':' or a space.
[[nodiscard]] bool defines_model_new(std::string_view source);
/// Whether a source kept without its file name (the database, an LLM's answer) is a Python
/// candidate: it defines ModelNew and has no kf_forward, a C++ candidate's entry point.
[[nodiscard]] bool is_python_source(std::string_view source);
/// @return the toolchain compile() uses for this source on backend b: "host", "nvcc" or "nvrtc".
[[nodiscard]] std::string toolchain_for(const std::filesystem::path& source, problem_backend b);
/// The launch plan of an nvrtc artifact's cubin: <library>.launch.json.
[[nodiscard]] std::filesystem::path launch_plan_path(const std::filesystem::path& cubin);
/// The kforge-nvrtc driver: $KFORGE_NVRTC_DRIVER, else beside this executable, else beside
/// $KFORGE_WORKER, else where the build put it.
[[nodiscard]] std::string nvrtc_driver_path();
/// The CUDA toolkit's include folder (cuda_fp16.h, cccl/): beside the nvcc in use.
[[nodiscard]] std::filesystem::path cuda_include_dir();
/// CUTLASS/CuTe headers (scripts/setup.sh unpacks them into third_party/cutlass/include;
/// $KFORGE_CUTLASS overrides). @return empty when absent: nvcc builds then lack -I for them.
[[nodiscard]] std::filesystem::path cutlass_include_dir();
/// The nvcc to run: $KFORGE_NVCC, else the one kforge was built with, else nvcc on PATH.
[[nodiscard]] std::string nvcc_path();
/// The vendor libraries a CUDA source links (-lcublas -lcublasLt, -lcudnn): only those whose
/// header it names, so a plain candidate never depends on a library the GPU machine might lack.
[[nodiscard]] std::vector<std::string> vendor_link_flags(const std::string& source_text);
/// Per-kernel resources from ptxas -v output. @return [{kernel, registers, smem_bytes, stack_bytes, spill_*}]
[[nodiscard]] nlohmann::json parse_resource_report(const std::string& diagnostics);

/// The folder holding kforge/kernel.h, passed to every compile with -I.
[[nodiscard]] std::filesystem::path abi_include_dir();

} // namespace kforge::build
