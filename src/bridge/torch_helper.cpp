#include "bridge/torch_helper.hpp"

#include "bridge/helper_process.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/subprocess.hpp"

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <cstdlib>
#include <mutex>
#include <random>
#include <unistd.h>
#include <sys/stat.h>

namespace kforge::bridge {
namespace fs = std::filesystem;
namespace {

fs::path helper_script() {
  if (const char* e = std::getenv("KFORGE_TORCH_HELPER"); e && *e) return e;
  return data_path("python/kforge_torch.py");
}

// $KFORGE_PYTHON; the venv scripts/setup.sh makes (.venv beside build/); python3 on PATH.
std::string find_python() {
  if (const char* e = std::getenv("KFORGE_PYTHON"); e && *e) return e;
  std::error_code ec;
  if (auto p = data_path(".venv/bin/python3"); fs::is_regular_file(p, ec)) return p.string();
  auto p = find_on_path("python3");
  return p.empty() ? std::string() : p.string();
}

bool says_no_torch(const std::string& output) { return output.find("No module named 'torch'") != std::string::npos; }

std::string no_torch_message(const std::string& python) {
  return fmt::format("{} cannot import torch: run scripts/setup.sh (it installs torch into .venv) or set "
                     "KFORGE_PYTHON to an interpreter that has it",
                     python);
}

} // namespace

scratch_dir::scratch_dir(std::string_view tag) {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  m_path = cache_root() / "tmp" /
           fmt::format("{}-{}-{}-{:08x}", tag, ::getpid(), counter++, static_cast<unsigned>(rd()));
  fs::create_directories(m_path);
}

scratch_dir::~scratch_dir() {
  if (const char* k = std::getenv("KFORGE_KEEP_BRIDGE_FILES"); k && *k) return;
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

namespace {

// Idle persistent helpers, one taken per call (so that concurrent evaluations on several
// devices do not wait for each other) and put back when it answered.
struct helper_pool {
  std::mutex mutex;
  std::vector<std::unique_ptr<helper_process>> idle;
  std::vector<held_helper*> held; // may be lent between their owners' commands
};
helper_pool& pool() {
  static helper_pool p;
  return p;
}

bool persistent() {
  const char* e = std::getenv("KFORGE_TORCH_ONESHOT");
  return !(e && *e && std::string_view(e) != "0");
}

struct helper_run {
  bool timed_out = false;
  bool ended = false;     // the process ended without answering
  std::string how;        // how it ended, when it did
  std::string output;     // what it printed meanwhile
};

std::unique_ptr<helper_process> take_helper(const std::string& python) {
  {
    std::lock_guard lock(pool().mutex);
    if (!pool().idle.empty()) {
      auto h = std::move(pool().idle.back());
      pool().idle.pop_back();
      return h;
    }
  }
  return std::make_unique<helper_process>(std::vector<std::string>{python, helper_script().string(), "serve"});
}

void give_back(std::unique_ptr<helper_process> h) {
  if (!h || !h->alive()) return; // a helper that timed out or died is never reused
  std::lock_guard lock(pool().mutex);
  pool().idle.push_back(std::move(h));
}

helper_run exchange_files(helper_process& h, std::string_view command, const fs::path& req, const fs::path& ans,
                          double timeout_s) {
  h.clear_output();
  const nlohmann::json line{{"command", command}, {"request_file", req.string()}, {"answer_file", ans.string()}};
  auto answer = h.exchange(line.dump() + "\n", timeout_s);
  helper_run r{.output = h.output_tail()};
  if (!answer) {
    r.how = h.ended();
    r.timed_out = r.how.rfind("timed out", 0) == 0;
    r.ended = !r.timed_out;
  }
  return r;
}

// One command through request and answer files: `run` makes the call. The answer, or an
// error a user can act on.
template <class Run>
nlohmann::json call_with(const std::string& python, std::string_view command, const nlohmann::json& request,
                         double timeout_s, Run&& run_it) {
  nlohmann::json answer;
  helper_run run;
  {
    const scratch_dir dir(command);
    const auto req = dir / "request.json", ans = dir / "answer.json";
    write_file_atomic(req, request.dump());
    run = run_it(req, ans);
    std::error_code ec;
    if (fs::exists(ans, ec)) answer = nlohmann::json::parse(read_file(ans), nullptr, false);
  }
  auto tail = [&] {
    const std::size_t keep = 3000;
    return run.output.size() > keep ? "..." + run.output.substr(run.output.size() - keep) : run.output;
  };
  if (says_no_torch(run.output)) KFORGE_THROW(usage, "{}", no_torch_message(python));
  if (run.timed_out)
    KFORGE_THROW(problem, "the PyTorch helper ({}) timed out after {:g} s{}", command, timeout_s,
                 run.output.empty() ? "" : ":\n" + tail());
  if (answer.is_object() && answer.contains("error"))
    KFORGE_THROW(problem, "the PyTorch helper ({}) failed: {}\n{}", command, answer["error"].get<std::string>(), tail());
  if (run.ended || !answer.is_object())
    KFORGE_THROW(problem, "the PyTorch helper ({}) ended without an answer ({}){}", command, run.how,
                 run.output.empty() ? "" : ":\n" + tail());
  return answer;
}

std::string require_python() {
  std::string python = find_python();
  if (python.empty()) KFORGE_THROW(usage, "the PyTorch bridge needs python3 (none on PATH; or set KFORGE_PYTHON)");
  return python;
}

} // namespace

void warm_helper() noexcept {
  try {
    if (!persistent()) return;
    {
      std::lock_guard lock(pool().mutex);
      if (!pool().idle.empty()) return;
    }
    (void)call_helper("probe", {{"light", true}}, 300); // its helper goes back to the pool
  } catch (...) {
  }
}

nlohmann::json call_helper(std::string_view command, const nlohmann::json& request, double timeout_s) {
  // No probe first (it costs an import of torch); a missing torch shows in the answer.
  const std::string python = require_python();
  return call_with(python, command, request, timeout_s, [&](const fs::path& req, const fs::path& ans) {
    if (persistent()) {
      helper_process* lent = nullptr;
      std::unique_lock<std::mutex> busy;
      {
        std::lock_guard lock(pool().mutex);
        if (pool().idle.empty())
          for (auto* held : pool().held)
            if ((busy = held->borrow(lent))) break;
      }
      if (lent) return exchange_files(*lent, command, req, ans, timeout_s);
      auto h = take_helper(python);
      auto r = exchange_files(*h, command, req, ans, timeout_s);
      give_back(std::move(h));
      return r;
    }
    auto r = run_command({python, helper_script().string(), std::string(command), req.string(), ans.string()}, timeout_s);
    return helper_run{.timed_out = r.timed_out, .ended = !r.timed_out && !r.ok(),
                      .how = r.signaled ? fmt::format("signal {}", r.signal) : fmt::format("exit code {}", r.exit_code),
                      .output = r.output};
  });
}

held_helper::held_helper() : m_python(require_python()) {
  if (!persistent()) KFORGE_THROW(usage, "KFORGE_TORCH_ONESHOT is set: no helper can be held between calls");
  m_h = take_helper(m_python);
  std::lock_guard lock(pool().mutex);
  pool().held.push_back(this);
}

held_helper::~held_helper() {
  {
    std::lock_guard lock(pool().mutex);
    std::erase(pool().held, this);
  }
  std::lock_guard busy(m_busy);
  give_back(std::move(m_h));
}

nlohmann::json held_helper::call(std::string_view command, const nlohmann::json& request, double timeout_s) {
  std::lock_guard busy(m_busy);
  if (!m_h) KFORGE_THROW(worker, "the PyTorch helper was retired");
  return call_with(m_python, command, request, timeout_s,
                   [&](const fs::path& req, const fs::path& ans) { return exchange_files(*m_h, command, req, ans, timeout_s); });
}

void held_helper::send_fd(const std::string& label, int fd) {
  std::lock_guard busy(m_busy);
  if (!m_h) KFORGE_THROW(worker, "the PyTorch helper was retired");
  m_h->send_fd(label, fd);
}

std::unique_lock<std::mutex> held_helper::borrow(helper_process*& process) {
  std::unique_lock lock(m_busy, std::try_to_lock);
  process = lock && m_h && m_h->alive() ? m_h.get() : nullptr;
  if (!process && lock) lock.unlock();
  return lock;
}

void held_helper::retire() {
  std::lock_guard busy(m_busy);
  m_h.reset();
}

namespace {

// The probe imports torch (about 2.7 s on the H200 machine), and every evaluation of a torch or
// Python problem starts with it. Its answer is kept per interpreter: the key covers the
// interpreter file, the helper's source, the device environment, and the modification times of
// the folders packages are installed in (an install, upgrade or removal changes a folder's
// entries, hence its mtime), so a changed environment is probed again.
std::string stat_key(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return p.string() + ":-";
  return fmt::format("{}:{}:{}.{}", p.string(), st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

std::string probe_key(const std::string& python, const fs::path& helper) {
  std::error_code ec;
  const fs::path exe = fs::weakly_canonical(python, ec);
  hasher h;
  h.add("torch-probe/1").add(python).add(stat_key(exe)).add(read_file(helper));
  for (const char* v : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH"})
    h.add(v).add(std::getenv(v) ? std::getenv(v) : "(unset)");
  for (const char* dev : {"/dev/nvidia0", "/dev/nvidiactl"}) h.add(fs::exists(dev, ec) ? "dev" : "nodev");
  // Where packages live: a venv beside the interpreter (bin/..), or the interpreter's prefix.
  for (const fs::path root : {fs::path(python).parent_path().parent_path(), exe.parent_path().parent_path()}) {
    for (const char* lib : {"lib", "lib64", "local/lib"})
      for (auto& e : fs::directory_iterator(root / lib, ec))
        if (e.path().filename().string().rfind("python3", 0) == 0)
          for (const char* sub : {"site-packages", "dist-packages"}) h.add(stat_key(e.path() / sub));
    h.add(stat_key(root / "pyvenv.cfg"));
  }
  h.add(stat_key("/usr/lib/python3/dist-packages"));
  return h.hex();
}

} // namespace

const torch_status& torch_probe() {
  static std::once_flag once;
  static torch_status s;
  std::call_once(once, [] {
    s.python = find_python();
    s.helper = helper_script().string();
    if (s.python.empty()) {
      s.why = "no python3 on PATH (set KFORGE_PYTHON to an interpreter with torch)";
      return;
    }
    std::error_code ec;
    if (!fs::is_regular_file(s.helper, ec)) {
      s.why = fmt::format("the bridge's Python helper is missing ({}; set KFORGE_TORCH_HELPER)", s.helper);
      return;
    }
    const auto found_torch = [](const nlohmann::json& j) { return j.is_object() && j.contains("torch_version"); };
    nlohmann::json a;
    command_result r;
    const fs::path cached = cache_root() / "torch-probe" / (probe_key(s.python, s.helper) + ".json");
    if (fs::is_regular_file(cached, ec)) a = nlohmann::json::parse(read_file(cached), nullptr, false);
    s.cached = found_torch(a);
    if (!s.cached) {
      const scratch_dir dir("probe");
      const auto ans = dir / "answer.json";
      r = run_command({s.python, s.helper, "probe", "-", ans.string()}, 120);
      a = fs::exists(ans, ec) ? nlohmann::json::parse(read_file(ans), nullptr, false) : nlohmann::json();
      // Only an answer that found torch is kept: a missing torch is looked for again next time.
      if (r.ok() && found_torch(a)) {
        try {
          fs::create_directories(cached.parent_path());
          write_file_atomic(cached, a.dump());
        } catch (const std::exception&) { // a read-only cache costs the next run a probe, nothing else
        }
      }
    }
    if (!s.cached && (!r.ok() || !found_torch(a))) {
      s.why = says_no_torch(r.output) ? no_torch_message(s.python)
                                      : fmt::format("{} {} probe failed: {}", s.python, s.helper, r.output.substr(0, 600));
      return;
    }
    s.available = true;
    s.version = a["torch_version"];
    s.cuda = a.value("cuda", false);
    s.device_name = a.value("device_name", "");
    if (a.contains("interpreter")) s.interpreter = a["interpreter"];
  });
  return s;
}

const torch_status& require_torch(std::string_view what) {
  const auto& s = torch_probe();
  if (!s.available) KFORGE_THROW(usage, "{} needs PyTorch: {}", what, s.why);
  return s;
}

} // namespace kforge::bridge
