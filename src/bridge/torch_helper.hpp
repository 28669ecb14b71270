#pragma once
// The PyTorch bridge's process boundary: finds a Python with torch and runs
// python/kforge_torch.py in a subprocess (probe, describe, run, time). Requests and answers
// are JSON files; tensors cross in safetensors files (bridge/safetensors.hpp). kforge never
// embeds Python: a model that crashes, hangs or prints takes down a helper process, not the
// harness. Helpers persist between calls (bridge/helper_process.hpp: `import torch` is
// paid once per kforge process); KFORGE_TORCH_ONESHOT=1 starts one process per call.
//   auto& t = bridge::torch_probe();          // cached; t.available, t.version, t.why
//   auto answer = bridge::call_helper("describe", {{"model", "model.py"}}, 120);
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace kforge::bridge {

struct torch_status {
  bool available = false;
  std::string python;      // the interpreter: $KFORGE_PYTHON, <kforge>/../.venv, or python3 on PATH
  std::string helper;      // python/kforge_torch.py
  std::string version;     // torch.__version__
  bool cuda = false;       // torch.cuda.is_available() in that interpreter
  std::string device_name; // GPU 0's name, when cuda
  std::string why;         // when !available: what is missing and how to get it
  nlohmann::json interpreter = nlohmann::json::object(); // libpython, home, sys.path: for Python candidates
  bool cached = false;     // answered from <cache>/torch-probe (the same interpreter, helper and packages)
};

/// Looks for torch once per process (about a second: python imports torch).
[[nodiscard]] const torch_status& torch_probe();

/// @return torch_probe() when torch is available.
/// @throws kforge::error (usage) "WHAT needs PyTorch: WHY" otherwise.
const torch_status& require_torch(std::string_view what);

/// Runs `kforge_torch.py COMMAND` on `request`; the answer's JSON.
/// @throws kforge::error (problem) with the helper's message and the tail of what the
///         Python side printed, when it fails, times out or answers nothing.
[[nodiscard]] nlohmann::json call_helper(std::string_view command, const nlohmann::json& request, double timeout_s);

class helper_process;

/// One persistent helper held by its owner alone until destroyed, then put back in the pool
/// when it still answers: for calls that keep state in the helper between them (GPU memory
/// it mapped, bridge/torch_device.hpp).
class held_helper {
public:
  /// @throws kforge::error (usage) without python, or with KFORGE_TORCH_ONESHOT set
  held_helper();
  ~held_helper();
  held_helper(const held_helper&) = delete;
  held_helper& operator=(const held_helper&) = delete;
  /// As call_helper(), on this helper.
  [[nodiscard]] nlohmann::json call(std::string_view command, const nlohmann::json& request, double timeout_s);
  /// Hands the helper a descriptor (it stays open here); its next command takes it.
  void send_fd(const std::string& label, int fd);
  /// Ends the helper instead of putting it back (its state cannot be trusted any more).
  void retire();

  /// The helper's process while it is not busy (call_helper borrows an idle held helper
  /// instead of starting another process: a second torch is half a gigabyte); the lock keeps
  /// the owner's commands, and the owner's end, waiting until it is let go.
  /// @return an unlocked lock (and nullptr) when busy or retired
  [[nodiscard]] std::unique_lock<std::mutex> borrow(helper_process*& process);

private:
  std::string m_python;
  std::mutex m_busy; // one command at a time, the owner's or a borrower's
  std::unique_ptr<helper_process> m_h;
};

/// Starts a persistent helper and lets it import torch, so that the next call finds it
/// ready: evaluate() runs this beside the candidate's build. Never throws (a helper that
/// cannot start is reported by the call that needs it); a no-op with KFORGE_TORCH_ONESHOT.
void warm_helper() noexcept;

/// A fresh private directory for one call's files, removed when this object dies (also
/// on an exception): truth files must be gone before candidate code runs, which could read
/// them. KFORGE_KEEP_BRIDGE_FILES keeps them for a post-mortem, never for judging.
class scratch_dir {
public:
  explicit scratch_dir(std::string_view tag);
  ~scratch_dir();
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  [[nodiscard]] std::filesystem::path operator/(std::string_view file) const { return m_path / file; }

private:
  std::filesystem::path m_path;
};

} // namespace kforge::bridge
