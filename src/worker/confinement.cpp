#include "worker/confinement.hpp"

#include "build/compiler.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "sandbox/launch.hpp"
#include "worker/supervisor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <thread>

namespace kforge::worker {
namespace fs = std::filesystem;
namespace {

constexpr std::uint64_t gib = std::uint64_t{1} << 30, mib = std::uint64_t{1} << 20;

// What a kernel's run may legitimately depend on; nothing else of the user's environment (API
// keys, KFORGE_* paths, tokens) reaches a confined process.
std::map<std::string, std::string> worker_environment() {
  std::map<std::string, std::string> env = {{"LC_ALL", "C"}, {"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  for (const char* pass : {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING",
                           "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES"})
    if (const char* v = std::getenv(pass); v && *v) env[pass] = v;
  return env; // HOME and TMPDIR: the scratch (policy.hpp)
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

std::uint64_t tensor_bytes(const problem::problem& p) {
  std::uint64_t b = 0;
  for (auto* t : p.inputs()) b += static_cast<std::uint64_t>(t->numel()) * dtype_size(t->dtype);
  for (auto* t : p.outputs()) b += static_cast<std::uint64_t>(t->numel()) * dtype_size(t->dtype);
  return b;
}

bool is_tool(const std::string& role) { return role == "sanitize" || role == "profile"; }

// KFORGE_TOOL_SANDBOX's layers to leave out: names from sandbox::layer_names() split by
// commas ("none": leave none out, the default).
std::vector<std::string> tool_layers_to_skip(const std::string& value) {
  std::vector<std::string> out;
  if (value == "none" || value.empty()) return out;
  std::string_view rest = value;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string name(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto& names = sandbox::layer_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
      KFORGE_THROW(usage, "KFORGE_TOOL_SANDBOX: '{}' is not a confinement layer (one of: {}), nor 'off' or 'none'", name,
                   fmt::join(names, ", "));
    out.push_back(name);
  }
  return out;
}

} // namespace

sandbox::limits worker_limits(const problem::problem* p, const std::string& role) {
  sandbox::limits l;
  // A worker holds a few host copies of the problem's tensors (inputs, downloaded outputs, the
  // timing rotations' sets on the CPU backend): twelve, plus 2 GiB for the process itself.
  l.memory_bytes = 2 * gib + (p ? 12 * tensor_bytes(*p) : 0);
  if (p && p->eval.memory_limit_mb > 0) l.memory_bytes = static_cast<std::uint64_t>(p->eval.memory_limit_mb * mib);
  l.processes = p && p->eval.max_threads > 0 ? p->eval.max_threads : std::max(32, 2 * cores());
  if (is_tool(role)) { // compute-sanitizer and ncu run the worker as their child, with helpers of their own
    l.memory_bytes *= 4;
    l.processes *= 4;
  }
  l.file_bytes = is_tool(role) ? 4 * gib : 256 * mib; // the worker itself writes no file
  // CPU seconds over all threads: the wall-clock watchdog (timeout_s per step) ends a hang first.
  l.cpu_s = (p ? p->eval.timeout_s : 600.0) * total_cap_factor * cores();
  l.scratch_bytes = gib;
  return l;
}

launch confine_worker(const problem::problem* p, const std::string& role, const std::vector<fs::path>& libraries,
                      const std::vector<fs::path>& writable, const fs::path& tool) {
  if (auto why = sandbox::disabled_reason(); !why.empty()) return {{}, [] {}, why};
  // compute-sanitizer and ncu run confined like the worker (the tool profile: their own
  // loopback, /tmp and /proc; H200, 2026-12-04). KFORGE_TOOL_SANDBOX names layers to leave out
  // for them (a comma list), or "off"; every evaluation's confinement report says which.
  std::vector<std::string> tool_skip;
  if (is_tool(role))
    if (const char* v = std::getenv("KFORGE_TOOL_SANDBOX"); v && *v) {
      if (std::string_view(v) == "off")
        return {{}, [] {}, fmt::format("{} runs unconfined: KFORGE_TOOL_SANDBOX=off", role)};
      tool_skip = tool_layers_to_skip(v);
    }
  auto scratch = std::make_shared<sandbox::scratch_dir>();
  sandbox::policy pol;
  pol.read_paths = sandbox::system_read_paths();
  for (auto& d : sandbox::library_path_dirs()) pol.read_paths.push_back(d);
  pol.read_paths.push_back(default_worker_exe());
  if (p) { // problem.toml and what the worker reads beside it; never the cache or the database
    pol.read_paths.push_back(p->dir);
    pol.read_paths.push_back(p->toml_path);
  }
  // kforge's control answers (worker/screen.cpp: the [torch] other_seed control replays a file
  // from here): answers for other seeds' inputs, never an evaluation's truth.
  pol.read_paths.push_back(cache_root() / "controls");
  for (auto& l : libraries) { // exactly these files of the build cache
    pol.read_paths.push_back(l);
    if (l.extension() == ".cubin") pol.read_paths.push_back(l.string() + ".launch.json"); // its launch plan
    if (l.extension() == ".py") // a Python candidate: its interpreter, sys.path, build record, JIT caches
      for (auto& r : build::python_read_paths(l)) pol.read_paths.push_back(r);
  }
  if (!tool.empty()) { // the tool's installation: <root>/bin/compute-sanitizer, <root>/ncu
    std::error_code ec;
    const auto real = fs::canonical(tool, ec);
    pol.read_paths.push_back((ec ? tool : real).parent_path().parent_path());
    pol.read_paths.push_back((ec ? tool : real).parent_path()); // the same, unless that root is /tmp (private there)
  }
  pol.device_paths = sandbox::default_device_paths();
  if (p && p->backend == problem::backend_kind::cpu) // a CPU problem gets no GPU
    pol.device_paths.erase(std::remove_if(pol.device_paths.begin(), pol.device_paths.end(),
                                          [](const fs::path& d) { return d.filename().string().rfind("nvidia", 0) == 0; }),
                           pol.device_paths.end());
  pol.write_paths = writable;
  pol.scratch = scratch->path();
  pol.env = worker_environment();
  pol.lim = worker_limits(p, role);
  if (std::any_of(libraries.begin(), libraries.end(), [](const fs::path& l) { return l.extension() == ".py"; })) {
    // A Python candidate's worker holds an interpreter, torch and its CUDA libraries, and
    // Triton's or torch's threads: more than a C++ candidate's.
    pol.lim.memory_bytes += 6 * gib;
    pol.lim.processes *= 2;
  }
  pol.profile = is_tool(role) ? sandbox::syscall_profile::tool : sandbox::syscall_profile::worker;
  pol.skip = tool_skip;
  auto prefix = sandbox::confined_argv(pol, {default_worker_exe().string()}, 4);
  prefix.pop_back(); // the caller puts its wrapper (if any) and the worker after the "--"
  return {std::move(prefix), [scratch]() mutable { scratch.reset(); }, ""};
}

} // namespace kforge::worker
