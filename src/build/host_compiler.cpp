#include "build/build_cache.hpp"
#include "build/compiler.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/subprocess.hpp"

#include <chrono>
#include <cstdlib>
#include <mutex>

namespace kforge::build {
namespace {

std::string host_compiler() {
  for (const char* var : {"KFORGE_CXX", "CXX"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return "g++";
}

// `g++ --version` once per process: part of every cache key, so a compiler upgrade
// never serves a stale object.
const std::string& compiler_identity(const std::string& cxx) {
  static std::mutex mu;
  static std::string cached_for, identity;
  std::lock_guard lock(mu);
  if (cached_for != cxx) {
    auto r = run_command({cxx, "--version"}, 30);
    if (!r.ok())
      KFORGE_THROW(build, "host compiler '{}' is not usable ({}); set KFORGE_CXX or install g++", cxx,
                   r.output.empty() ? "cannot run it" : r.output.substr(0, r.output.find('\n')));
    identity = r.output.substr(0, r.output.find('\n'));
    cached_for = cxx;
  }
  return identity;
}

} // namespace

std::filesystem::path abi_include_dir() {
  if (const char* v = std::getenv("KFORGE_INCLUDE"); v && *v) return v;
  // Installed layout first (bin/../include), then the source tree this binary was built from.
  auto beside = self_exe().parent_path().parent_path() / "include";
  if (std::filesystem::exists(beside / "kforge" / "kernel.h")) return beside;
  return std::filesystem::path(KFORGE_SOURCE_DIR) / "include";
}

artifact compile_host(const request& rq) {
  artifact a;
  const std::string cxx = host_compiler();
  a.compiler = compiler_identity(cxx);
  const auto src = std::filesystem::absolute(rq.source);
  const std::string source_text = read_file(src);
  const auto inc = abi_include_dir();
  const std::string abi_text = read_file(inc / "kforge" / "kernel.h");

  std::vector<std::string> flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared",
                                    "-fvisibility=hidden", "-Wall",
                                    fmt::format("-DKF_REAL={}", dtype_c_name(rq.real)),
                                    "-DKF_BACKEND_CPU=1", "-I" + inc.string(),
                                    "-I" + src.parent_path().string()};
  for (auto& d : rq.include_dirs) flags.push_back("-I" + std::filesystem::absolute(d).string());
  for (auto& f : rq.extra_flags) flags.push_back(f);

  hasher h;
  h.add("host").add(a.compiler).add(abi_text).add(source_text);
  for (auto& f : flags) h.add(f);
  a.cache_key = h.hex();

  auto entry = cache_lookup(a.cache_key);
  if (entry) {
    a.ok = entry->ok;
    a.cached = true;
    a.library = entry->library;
    a.diagnostics = entry->diagnostics;
    a.command = entry->command;
    return a;
  }

  auto work = cache_begin(a.cache_key);
  std::vector<std::string> argv = {cxx};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("-o");
  argv.push_back((work.dir / "kernel.so").string());
  argv.push_back(src.string());
  a.command = join_command(argv);
  auto r = run_command(argv, 300, 64 * 1024);
  a.duration_s = r.duration_s;
  a.diagnostics = r.timed_out ? "compiler timed out after 300 s\n" + r.output : r.output;
  a.ok = r.ok() && std::filesystem::exists(work.dir / "kernel.so");
  a.library = cache_commit(work, {a.ok, a.diagnostics, a.command});
  if (!a.ok) a.library.clear();
  return a;
}

} // namespace kforge::build
