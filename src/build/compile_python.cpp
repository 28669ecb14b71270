// The "python" toolchain: a Python candidate (ModelNew, docs/candidates.md). Its build is
// its first run: python/kforge_candidate.py imports the file (load_inline compiles then),
// constructs ModelNew and calls it once at the problem's shapes (Triton JITs then), confined
// like a compiler but with the GPU, writing only the candidate's own JIT folder
// (<cache>/jit/<build key>). The cache entry holds candidate.py and, beside it, what the
// worker needs to embed the interpreter (<library>.python.json), written here from the torch
// probe's answer: nothing the candidate's code printed or wrote decides what a worker may read.
#include "build/build_cache.hpp"
#include "build/compiler.hpp"

#include "bridge/torch_helper.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/subprocess.hpp"
#include "sandbox/launch.hpp"
#include "sandbox/policy.hpp"

#include <fmt/format.h>

namespace kforge::build {
namespace fs = std::filesystem;

namespace {

// What the interpreter reads: its home, its sys.path, the venv it runs from.
std::vector<fs::path> interpreter_paths(const bridge::torch_status& t) {
  std::vector<fs::path> out;
  const auto& i = t.interpreter;
  for (const char* k : {"home", "prefix", "libpython"})
    if (i.contains(k) && !i[k].get<std::string>().empty()) out.emplace_back(i[k].get<std::string>());
  if (i.contains("path"))
    for (auto& p : i["path"]) out.emplace_back(p.get<std::string>());
  out.push_back(fs::path(t.python).parent_path().parent_path()); // the venv
  return out;
}

} // namespace

fs::path python_jit_dir(const std::string& cache_key) { return cache_root() / "jit" / cache_key; }

std::vector<fs::path> python_read_paths(const fs::path& library) {
  std::vector<fs::path> out = {library, library.string() + ".python.json"};
  std::error_code ec;
  try {
    const auto info = nlohmann::json::parse(read_file(library.string() + ".python.json"));
    const auto& i = info["interpreter"];
    for (const char* k : {"home", "prefix", "libpython"})
      if (i.contains(k)) out.emplace_back(i[k].get<std::string>());
    for (auto& p : i.value("path", nlohmann::json::array())) out.emplace_back(p.get<std::string>());
    if (info.contains("venv")) out.emplace_back(info["venv"].get<std::string>());
    if (info.contains("jit_dir")) out.emplace_back(info["jit_dir"].get<std::string>());
    // A record staged before the build (worker/early_workers.cpp): the library appears in that
    // folder only after the worker's sandbox is made, so the rule names the folder.
    if (info.contains("stage")) out.emplace_back(info["stage"].get<std::string>());
  } catch (const std::exception&) {
    // Unreadable: the worker says so when it loads the candidate.
  }
  return out;
}

python_plan plan_python_build(const request& rq) {
  python_plan plan;
  const auto& t = bridge::torch_probe();
  if (!t.available) {
    plan.why_not = "a Python candidate needs PyTorch: " + t.why;
    return plan;
  }
  if (t.interpreter.value("libpython", "").empty()) {
    plan.why_not = t.interpreter.value("why_no_libpython", std::string("the Python has no shared libpython"));
    return plan;
  }
  plan.compiler = fmt::format("python {} torch {} ({})", t.interpreter.value("version", "?"), t.version, t.python);
  hasher h;
  h.add("python").add(plan.compiler).add(read_file(data_path("python/kforge_candidate.py")));
  h.add(read_file(data_path("python/kforge_torch.py")));
  h.add(read_file(fs::absolute(rq.source))).add(rq.python_spec.dump());
  plan.cache_key = h.hex();
  plan.jit_dir = python_jit_dir(plan.cache_key);
  // The trusted record: written by kforge, never by the candidate's process.
  plan.record = {{"interpreter", t.interpreter}, {"venv", fs::path(t.python).parent_path().parent_path()},
                 {"python", t.python}, {"jit_dir", plan.jit_dir.string()}};
  return plan;
}

artifact compile_python(const request& rq, problem_backend b) {
  artifact a;
  a.toolchain = "python";
  const auto plan = plan_python_build(rq);
  if (!plan.why_not.empty()) {
    a.diagnostics = plan.why_not;
    return a;
  }
  const auto& t = bridge::torch_probe();
  a.compiler = plan.compiler;
  const auto src = fs::absolute(rq.source);
  const std::string source_text = read_file(src);
  const fs::path host = data_path("python/kforge_candidate.py");
  a.cache_key = plan.cache_key;
  const fs::path& jit = plan.jit_dir;
  const std::string output = "candidate.py";
  if (auto entry = cache_lookup(a.cache_key, output, &a.cache_note)) {
    a.ok = entry->ok && fs::is_directory(jit);
    a.cached = true;
    a.library = a.ok ? entry->library : fs::path();
    a.sha256 = entry->sha256;
    a.diagnostics = entry->diagnostics;
    a.command = entry->command;
    if (!a.ok && entry->ok) a.diagnostics = fmt::format("the candidate's JIT folder {} is gone; rebuild it (kforge "
                                                        "cache clear)", jit.string());
    return a;
  }
  auto work = cache_begin(a.cache_key);
  write_file_atomic(work.dir / output, source_text);
  auto spec = rq.python_spec;
  spec["jit_dir"] = jit.string();
  write_file_atomic(work.dir / "spec.json", spec.dump());
  write_file_atomic(work.dir / (output + ".python.json"), plan.record.dump(1));
  // Emptied, not made anew: a worker started during the build (worker/early_workers.hpp) has
  // its sandbox's read rule on this folder, which binds the folder, not its name.
  std::error_code ec;
  fs::create_directories(jit);
  for (auto& e : fs::directory_iterator(jit)) fs::remove_all(e.path(), ec);
  const fs::path answer = jit / "build.json";
  std::vector<std::string> argv = {t.python, host.string(), "build", (work.dir / output).string(),
                                   (work.dir / "spec.json").string(), answer.string()};
  a.command = join_command(argv);
  a.confinement = "kforge-confine";
  sandbox::scratch_dir scratch;
  if (auto why = sandbox::disabled_reason(); !why.empty()) {
    a.confinement = why;
  } else {
    sandbox::policy pol;
    pol.read_paths = sandbox::system_read_paths();
    for (auto& d : sandbox::library_path_dirs()) pol.read_paths.push_back(d);
    for (auto& p : interpreter_paths(t)) pol.read_paths.push_back(p);
    pol.read_paths.push_back(host.parent_path());
    pol.read_paths.push_back(work.dir);
    pol.device_paths = b == problem_backend::cuda ? sandbox::default_device_paths()
                                                  : std::vector<fs::path>{"/dev/null", "/dev/zero", "/dev/urandom"};
    pol.write_paths = {jit};
    pol.scratch = scratch.path();
    pol.env = {{"LC_ALL", "C"}, {"PYTHONNOUSERSITE", "1"}, {"PYTHONDONTWRITEBYTECODE", "1"}};
    for (const char* pass : {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME"})
      if (const char* v = std::getenv(pass); v && *v) pol.env[pass] = v;
    pol.lim = {.memory_bytes = std::uint64_t{16} << 30, .processes = 256, .file_bytes = std::uint64_t{2} << 30,
               .cpu_s = 1200, .scratch_bytes = std::uint64_t{4} << 30};
    pol.profile = sandbox::syscall_profile::compiler;
    argv = sandbox::confined_argv(pol, argv, -1);
  }
  auto r = run_command(argv, 600, 256 * 1024);
  a.duration_s = r.duration_s;
  nlohmann::json ans = nlohmann::json::object();
  if (fs::is_regular_file(answer, ec)) ans = nlohmann::json::parse(read_file(answer), nullptr, false);
  std::string error = ans.is_object() ? ans.value("error", "") : "";
  a.ok = r.ok() && ans.is_object() && error.empty() && !r.timed_out;
  a.diagnostics = r.timed_out ? "the build (import and first call) timed out after 600 s\n" : "";
  // Where a long build was (kforge_candidate.py dumps its stacks every 45 s).
  if (const auto stalled = jit / "build-stalled.txt"; (r.timed_out || !a.ok) && fs::is_regular_file(stalled, ec))
    if (const std::string where = read_file(stalled); !where.empty())
      a.diagnostics += "where the build was (Python stacks, every 45 s; the last):\n" +
                       where.substr(where.size() > 4000 ? where.size() - 4000 : 0) + "\n";
  if (!error.empty()) a.diagnostics += error + "\n";
  else if (!a.ok && !ans.is_object()) a.diagnostics += "the build wrote no answer\n";
  if (ans.is_object() && ans.contains("first_call_s"))
    a.diagnostics += fmt::format("import {:.2f} s, first call (JIT) {:.2f} s\n", ans.value("import_s", 0.0),
                                 ans.value("first_call_s", 0.0));
  a.diagnostics += r.output;
  const auto entry = cache_commit(work, {a.ok, a.diagnostics, a.command}, output);
  a.ok = entry.ok;
  a.library = a.ok ? entry.library : fs::path();
  a.sha256 = entry.sha256;
  return a;
}

} // namespace kforge::build
