#pragma once
// Turns a kernel source into a loadable shared object, through a content-hash cache.
//   build::request rq{.source = "seed.cpp", .real = KF_F32, .role = "candidate"};
//   build::artifact a = build::compile(rq);   // a.ok, a.library, a.diagnostics
// A failed compile is a value (ok == false, diagnostics set), not an exception: a
// broken candidate is normal data. Exceptions mean the toolchain itself is unusable.
//
// Toolchains: "host" (the CPU backend: $KFORGE_CXX, else $CXX, else g++; flags
// -O3 -march=native -fopenmp). The CUDA toolchains slot in beside it.
#include <kforge/kernel.h>

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
};

struct artifact {
  bool ok = false;
  bool cached = false;               // served from the cache, no compiler run
  std::filesystem::path library;     // the .so, when ok
  std::string diagnostics;           // compiler output (warnings too), truncated
  std::string command;               // the full compiler command line
  std::string compiler;              // compiler identity: first line of --version
  std::string cache_key;             // sha256 of source, flags, compiler identity and ABI header
  double duration_s = 0.0;           // compiler wall time (0 when cached)
};

/// Compiles rq.source for the CPU backend with the host C++ compiler.
/// @post ok implies std::filesystem::exists(library)
[[nodiscard]] artifact compile_host(const request& rq);

/// The folder holding kforge/kernel.h, passed to every compile with -I.
[[nodiscard]] std::filesystem::path abi_include_dir();

} // namespace kforge::build
