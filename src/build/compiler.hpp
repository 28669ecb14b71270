#pragma once
// Turns a kernel source into a loadable shared object, through a content-hash cache.
//   build::request rq{.source = "seed.cpp", .real = KF_F32, .role = "candidate"};
//   build::artifact a = build::compile(rq);   // a.ok, a.library, a.diagnostics
// A failed compile is a value (ok == false, diagnostics set), not an exception: a
// broken candidate is normal data. Exceptions mean the toolchain itself is unusable.
//
// Toolchains: "host" for the CPU backend ($KFORGE_CXX, else $CXX, else g++;
// -O3 -march=native -fopenmp) and "nvcc" for the CUDA backend (a shared object with
// host code and device code for one architecture, default sm_90a: Hopper's
// wgmma/TMA instructions need the 'a' target; ptxas -v's resource report is kept).
// NVRTC is not used: a candidate's kf_forward is host code that launches its
// kernels, which only a full nvcc build can compile.
#include <kforge/kernel.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace kforge::build {

struct request {
  std::filesystem::path source;      // the file to compile
  kf_dtype real = KF_F32;            // KF_REAL: the problem dtype, or f64 for the oracle
  std::string role = "candidate";    // "candidate", "reference", "oracle": recorded, not hashed
  std::vector<std::string> extra_flags;
  std::vector<std::filesystem::path> include_dirs; // besides include/ and the source's own folder
  std::string cuda_arch;             // nvcc: "90a" (default), "100a", ...
};

enum class problem_backend { cpu, cuda };

struct artifact {
  bool ok = false;
  bool cached = false;               // served from the cache, no compiler run
  std::filesystem::path library;     // the .so, when ok
  std::string diagnostics;           // compiler output (warnings too), truncated
  std::string command;               // the full compiler command line
  std::string compiler;              // compiler identity: first line of --version
  std::string cache_key;             // sha256 of source, flags, compiler identity and ABI header
  double duration_s = 0.0;           // compiler wall time (0 when cached)
  nlohmann::json resources = nlohmann::json::array(); // nvcc: per kernel registers, smem, stack, spills
};

/// Compiles rq.source with the toolchain of backend b. @post ok implies exists(library)
[[nodiscard]] artifact compile(const request& rq, problem_backend b);
[[nodiscard]] artifact compile_host(const request& rq);
[[nodiscard]] artifact compile_nvcc(const request& rq);
/// CUTLASS/CuTe headers (scripts/setup.sh unpacks them into third_party/cutlass/include;
/// $KFORGE_CUTLASS overrides). @return empty when absent: nvcc builds then lack -I for them.
[[nodiscard]] std::filesystem::path cutlass_include_dir();
/// The nvcc to run: $KFORGE_NVCC, else the one kforge was built with, else nvcc on PATH.
[[nodiscard]] std::string nvcc_path();
/// Per-kernel resources from ptxas -v output. @return [{kernel, registers, smem_bytes, stack_bytes, spill_*}]
[[nodiscard]] nlohmann::json parse_resource_report(const std::string& diagnostics);

/// The folder holding kforge/kernel.h, passed to every compile with -I.
[[nodiscard]] std::filesystem::path abi_include_dir();

} // namespace kforge::build
