#pragma once
// Workers started before the candidate's build has ended. A Python candidate's call and timing
// workers each start an interpreter and import torch (3.4 s on the H100 machine's host) before
// they can load it; started as the build begins, those imports overlap the build instead of
// following it. Nothing of the candidate reaches them before the build has ended: each starts
// on a staged build record (what the build will record, from the same plan: its interpreter and
// JIT folder) in a folder of its own, and imports only kforge's host and modules the source
// names; once the build is done the candidate's file is copied into that folder and each worker
// gets the rest of its job with the judge's sets (a deferred job, worker_process.cpp).
//   auto early = worker::start_early_python_workers(p, source, exe, timeout_s, step_s, timing, sink);
//   ...  builds  ...
//   if (early && !early->stage(builds.candidate)) early.reset(); // killed unused
//   auto call = start_call_worker(..., early ? early->take_call() : nullptr);
#include "build/compiler.hpp"
#include "sandbox/launch.hpp"
#include "worker/supervisor.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kforge::worker {

/// A worker whose job arrives in two parts: what is known at its start (with "deferred": true),
/// then the rest with the judge's sets on its share socket. Its frames go to the sink given to
/// complete() (none are read before it). Destroyed uncompleted, it is killed.
class deferred_worker {
public:
  /// @throws kforge::error (worker) when it cannot be started
  deferred_worker(const std::filesystem::path& exe, nlohmann::json job, worker_options opts);
  ~deferred_worker();
  deferred_worker(const deferred_worker&) = delete;
  deferred_worker& operator=(const deferred_worker&) = delete;
  /// The rest of the job (merged into it) and the sets' fds (sent, still the caller's): the
  /// session, going on. Once. A worker that is gone already is still returned: its outcome says how.
  [[nodiscard]] std::unique_ptr<worker_session> complete(const nlohmann::json& rest, const std::vector<int>& fds,
                                                         message_sink sink);

private:
  std::shared_ptr<message_sink> m_sink;
  std::unique_ptr<worker_session> m_session;
  int m_socket = -1;
};

/// A Python candidate's early workers and the folder they read the candidate from.
class early_python_workers {
public:
  early_python_workers(build::python_plan plan, sandbox::scratch_dir stage)
      : m_plan(std::move(plan)), m_stage(std::move(stage)) {}
  ~early_python_workers();
  /// Where the workers load the candidate from: <stage>/candidate.py (and its record beside it).
  [[nodiscard]] std::filesystem::path library() const { return m_stage.path() / "candidate.py"; }
  /// After the build: the built candidate into the stage, if its build recorded what the
  /// workers were started on. @return false when it did not (or failed): start workers anew
  [[nodiscard]] bool stage(const build::artifact& candidate);
  void set_call(std::unique_ptr<deferred_worker> w) { m_call = std::move(w); }
  void set_time(std::unique_ptr<deferred_worker> w) { m_time = std::move(w); }
  /// The workers, once staged; null where none was started (or it was taken).
  [[nodiscard]] std::unique_ptr<deferred_worker> take_call();
  [[nodiscard]] std::unique_ptr<deferred_worker> take_time();

private:
  build::python_plan m_plan;
  sandbox::scratch_dir m_stage; // destroyed after the workers (declared first)
  bool m_staged = false;
  std::unique_ptr<deferred_worker> m_call, m_time;
};

/// The stage for `plan`: a private folder holding the build record the workers start on (with
/// "stage": the folder, so their sandbox may read the candidate that appears there later), and
/// the plan's JIT folder made (its sandbox rule binds the folder; the build empties it in place).
[[nodiscard]] std::unique_ptr<early_python_workers> stage_python_workers(build::python_plan plan);

/// Modules a Python candidate's source names that its workers may import before it loads:
/// triton, torch.utils.cpp_extension (load_inline). Trusted packages, imported before any
/// candidate code.
[[nodiscard]] std::vector<std::string> warm_modules(const std::string& source_text);

} // namespace kforge::worker
