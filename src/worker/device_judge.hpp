#pragma once
// The parent's side of a GPU-resident evaluation (role_judge.cpp): the trusted judge process
// that owns every buffer a candidate touches, draws inputs and keeps the truth on the
// device, and judges outputs in place. The parent sequences it with the candidate's
// workers, stopping a worker's process group whenever the judge writes or reads its set.
//   device_judge j(ctx, builds, plan.trials, 1 + rotations + 1, seed);   // throws device_path_unavailable
//   j.load(0, t);  ... candidate call ...  j.judge(0, t, run, false, add);
// Set 0 holds verification trials; the timing workers get the others (timing.cpp).
#include "worker/build_roles.hpp"
#include "worker/stage.hpp"
#include "worker/supervisor.hpp"

#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace kforge::bridge {
class device_truth;
struct torch_subject;
struct torch_timing;
struct torch_timing_config;
} // namespace kforge::bridge

namespace kforge::worker {

/// The judge could not start on this machine (no VMM fd sharing, no device kernels): the
/// evaluation takes the host path instead, and says why.
struct device_path_unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Empty when an evaluation of `p` may take the GPU-resident path; else why not (a CPU or
/// KFORGE_EVAL_PATH=host, a [torch] problem with KFORGE_TORCH_ONESHOT).
[[nodiscard]] std::string device_path_refused(const problem::problem& p);

/// How long a candidate's worker runs on after its call's snapshot before it is stopped: a
/// thread that outlives the call changes the outputs then (deferred_work).
inline constexpr int deferred_pause_ms = 20;

class device_judge {
public:
  /// Starts the judge with `sets` shared sets and receives their fds.
  /// @throws device_path_unavailable when it cannot share memory here; kforge::error (problem)
  /// when the reference cannot be loaded
  device_judge(const worker_context& ctx, const role_artifacts& builds, const nlohmann::json& trials, int sets,
               std::uint64_t canary_seed);
  /// Starts the judge's process and returns at once; await_ready() finishes what the other
  /// constructor does. Call both on the thread that keeps the judge: the process ends with the
  /// thread that started it (PR_SET_PDEATHSIG follows the parent thread).
  struct start_only_t {};
  static constexpr start_only_t start_only{};
  device_judge(const worker_context& ctx, const role_artifacts& builds, const nlohmann::json& trials, int sets,
               std::uint64_t canary_seed, start_only_t);
  /// @throws as the first constructor
  void await_ready();
  ~device_judge();
  device_judge(const device_judge&) = delete;
  device_judge& operator=(const device_judge&) = delete;

  [[nodiscard]] int set_fd(int s) const { return m_fds.at(s); }
  [[nodiscard]] std::size_t set_bytes() const { return m_set_bytes; }
  /// The sets verification calls go to, in turn (the judge's choice: 0, and the last set
  /// where device memory allows a second snapshot, so two calls share one deferred-work pause).
  [[nodiscard]] const std::vector<int>& verify_sets() const { return m_verify_sets; }

  /// Trial t's inputs into set s, its outputs poisoned (the truth computed on first use; for a
  /// [torch] problem by the module, in the bridge's helper, on memory the judge shares).
  /// @throws kforge::error (problem) when the reference fails on it
  void load(int s, int t);
  /// A timing rotation's inputs (case, seed) into set s: values without truth.
  void rotation(int s, const std::string& case_name, std::uint64_t seed);
  void poison(int s);
  /// The answer of the call just made on set s, copied at once; then the candidate runs on
  /// for deferred_pause before it is stopped and judged.
  void snapshot(int s);
  /// Judges the call just made on set s (after snapshot(s)) (trial t, call `run`): each check to `add`, with its
  /// case and trial. `timed`: the outputs alone (a re-verified timed call). `waited`: the
  /// worker has been stopped since an earlier judge command of the same batch paused for
  /// deferred work, so this one does not pause again.
  void judge(int s, int t, int run, bool timed, const check_sink& add, bool waited = false);
  void drop(int t);

  /// [torch]: whether the module runs in the bridge's helper on memory this judge shares.
  [[nodiscard]] bool shares_module() const { return m_module != nullptr; }
  /// [torch], shares_module(): PyTorch eager/compile timed in that helper on the rotations
  /// torch_time would draw (bridge::torch_rotations), drawn here into the exchange: no file.
  [[nodiscard]] std::vector<bridge::torch_timing> time_module(const std::vector<bridge::torch_subject>& subjects,
                                                              const bridge::torch_timing_config& cfg, double timeout_s);

  /// The reference's error on the first trial of each case (sent as the truth is computed).
  [[nodiscard]] std::vector<case_reference_error> reference_errors() const;
  /// Ends the judge. @return its confinement report
  nlohmann::json finish();
  /// Asks the judge to end without waiting (its CUDA teardown overlaps the caller's next
  /// steps); finish() then collects its report.
  void begin_finish();

  /// The next evaluation of a search on this judge (judge_keeper.hpp): `trials` (as many as
  /// it was started with) replace the last ones, whose truth goes; every set gets fresh canaries.
  void reset(const nlohmann::json& trials, std::uint64_t canary_seed);
  /// Its confinement report so far (it lives on between evaluations).
  [[nodiscard]] nlohmann::json confinement() const;
  /// What a judge serves: the problem, the device, the builds it loaded, the sets.
  [[nodiscard]] const std::string& key() const { return m_key; }
  [[nodiscard]] static std::string key_of(const worker_context& ctx, const role_artifacts& builds, int sets,
                                          std::size_t trials);

private:
  void command(const nlohmann::json& cmd, const char* answer);
  problem::problem m_p;
  worker_context m_ctx; // on m_p
  nlohmann::json m_trials;
  std::unique_ptr<worker_session> m_session;
  int m_share_socket = -1; // until await_ready(): where the judge sends the sets' fds
  int m_sets = 0;
  std::vector<int> m_fds;
  std::size_t m_set_bytes = 0;
  std::vector<int> m_verify_sets{0};
  bool m_finishing = false;
  check_sink m_add; // where the current judge command's checks go
  std::string m_error;
  std::map<std::pair<int, std::size_t>, eval::reference_error> m_ref_errors;
  std::unique_ptr<bridge::device_truth> m_module; // [torch]: the module, run in the bridge's helper
  std::set<int> m_module_ran;                     // the trials whose truth it computed
  std::string m_key;
};

} // namespace kforge::worker
