#include "worker/device_judge.hpp"

#include "bridge/torch_device.hpp"
#include "bridge/torch_reference.hpp"
#include "core/error.hpp"
#include "core/fd_passing.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "eval/compare.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

namespace kforge::worker {
namespace {
bool bridge_oneshot() {
  const char* e = std::getenv("KFORGE_TORCH_ONESHOT");
  return e && *e && std::string_view(e) != "0";
}
} // namespace

std::string device_path_refused(const problem::problem& p) {
  if (p.backend != problem::backend_kind::cuda) return "a CPU problem";
  if (p.torch && bridge_oneshot())
    return "KFORGE_TORCH_ONESHOT is set: a [torch] problem's module runs on the device only in a persistent helper";
  if (const char* v = std::getenv("KFORGE_EVAL_PATH"); v && std::string_view(v) == "host") return "KFORGE_EVAL_PATH=host";
  return "";
}

device_judge::device_judge(const worker_context& ctx, const role_artifacts& builds, const nlohmann::json& trials,
                           int sets, std::uint64_t canary_seed)
    : device_judge(ctx, builds, trials, sets, canary_seed, start_only) {
  await_ready();
}

device_judge::device_judge(const worker_context& ctx, const role_artifacts& builds, const nlohmann::json& trials,
                           int sets, std::uint64_t canary_seed, start_only_t)
    : m_p(ctx.p), m_ctx{.p = m_p, .exe = ctx.exe, .device = ctx.device, .timeout_s = ctx.timeout_s}, m_trials(trials),
      m_sets(sets), m_key(key_of(ctx, builds, sets, trials.size())) {
  if (!builds.kernels.ok)
    throw device_path_unavailable(fmt::format("kforge's device kernels did not build: {}",
                                              builds.kernels.diagnostics.substr(0, 400)));
  int sv[2];
  make_fd_socket(sv);
  const auto& p = m_p; // its own copy: a judge kept for a search outlives the evaluation's
  m_session = std::make_unique<worker_session>(
      ctx.exe,
      nlohmann::json{{"role", "judge"},
                     {"problem", p.dir.string()},
                     {"device", ctx.device},
                     {"libraries",
                      {{"reference", builds.reference.library.string()},
                       {"oracle", builds.oracle.library.string()},
                       {"kernels", builds.kernels.library.string()}}},
                     {"trials", trials},
                     {"sets", sets},
                     {"canary_seed", canary_seed}},
      worker_options{.timeout_s = ctx.timeout_s * 4,
                     .sink =
                         [this](message& m) {
                           const std::string type = m.header["type"];
                           if (type == "check" && m_add) {
                             m_add(check_of(m.header, m_trials));
                           } else if (type == "reference_error") {
                             m_ref_errors[{m.header.value("trial", 0), m.header.value("index", std::size_t{0})}] = {
                                 m.header.value("max_abs", 0.0), m.header.value("rel_l2", 0.0),
                                 m.header.value("max_abs_oracle", 0.0)};
                           } else if (type == "error") {
                             m_error = m.header.value("message", "");
                           }
                         },
                     .problem = &p,
                     .share_socket = sv[1]});
  ::close(sv[1]);
  m_share_socket = sv[0];
}

void device_judge::await_ready() {
  KFORGE_ASSERT(m_share_socket >= 0);
  const int share = std::exchange(m_share_socket, -1);
  const auto& p = m_p;
  const int sets = m_sets;
  // The fds come first on the socket, then "ready" on the channel; an error instead means this
  // machine cannot share device memory (or the reference does not load).
  const auto ready = m_session->wait_for("ready");
  if (!ready) {
    ::close(share);
    const auto end = m_session->finish();
    const std::string why = !m_error.empty() ? m_error : fmt::format("the judge {} ({})", worker_end_name(end.end), end.detail);
    if (why.rfind("reference: ", 0) == 0) KFORGE_THROW(problem, "{}: {}", p.reference.string(), why);
    throw device_path_unavailable(why);
  }
  auto got = recv_fds(share);
  ::close(share);
  m_fds = std::move(got.fds);
  m_set_bytes = ready->value("set_bytes", std::size_t{0});
  m_verify_sets = {0};
  if (ready->contains("verify_sets"))
    for (auto& v : (*ready)["verify_sets"])
      if (v.is_number_integer() && v.get<int>() == sets) m_verify_sets.push_back(sets); // the one set past the asked ones
  const int extra = static_cast<int>(m_verify_sets.size()) - 1;
  if (const auto got_n = m_fds.size(); static_cast<int>(got_n) != sets + extra + (p.torch ? 1 : 0)) {
    for (int fd : m_fds) ::close(fd);
    m_fds.clear();
    KFORGE_THROW(worker, "the judge sent {} descriptors for {} sets", got_n, sets);
  }
  if (p.torch) {
    // The module's side of the exchange (the last fd): a helper that cannot map it (a torch
    // without CUDA, say) leaves the evaluation to the host path, which says why.
    const int fd = m_fds.back();
    m_fds.pop_back();
    try {
      m_module = std::make_unique<bridge::device_truth>(p, m_ctx.device, fd, (*ready)["exchange"], m_ctx.timeout_s * 4);
    } catch (const error& e) {
      ::close(fd);
      for (int f : m_fds) ::close(f);
      m_fds.clear();
      (void)m_session->finish();
      if (e.kind() == error_kind::usage) throw;
      throw device_path_unavailable(fmt::format("the PyTorch helper cannot map the judge's memory: {}", e.what()));
    }
    ::close(fd);
  }
}

device_judge::~device_judge() {
  if (m_share_socket >= 0) ::close(m_share_socket);
  for (int fd : m_fds) ::close(fd);
}

void device_judge::command(const nlohmann::json& cmd, const char* answer) {
  if (!m_session->send(cmd) || !m_session->wait_for(answer)) {
    const auto end = m_session->finish();
    // Without the judge nothing can be judged; the reference failing is the problem's fault.
    if (!m_error.empty()) KFORGE_THROW(problem, "{}: {}", m_ctx.p.reference.string(), m_error);
    KFORGE_THROW(worker, "the judge {} ({}){}", worker_end_name(end.end), end.detail,
                 end.output.empty() ? "" : ":\n" + end.output.substr(0, 2000));
  }
}

void device_judge::load(int s, int t) {
  if (m_module && !m_module_ran.contains(t)) {
    // The module's truth for t, first: inputs drawn into the exchange, the module run on them
    // in the helper, its outputs kept by the judge.
    command({{"cmd", "draw"}, {"trial", t}}, "drawn");
    m_module->run(t);
    command({{"cmd", "truth"}, {"trial", t}}, "kept");
    m_module_ran.insert(t);
  }
  command({{"cmd", "load"}, {"set", s}, {"trial", t}}, "loaded");
}

void device_judge::rotation(int s, const std::string& case_name, std::uint64_t seed) {
  command({{"cmd", "rotation"}, {"set", s}, {"case", case_name}, {"seed", seed}}, "loaded");
}

std::vector<bridge::torch_timing> device_judge::time_module(const std::vector<bridge::torch_subject>& subjects,
                                                            const bridge::torch_timing_config& cfg, double timeout_s) {
  KFORGE_ASSERT(m_module);
  int r = 0;
  for (auto& [case_name, seed] : bridge::torch_rotations(m_p, cfg)) {
    command({{"cmd", "stage"}, {"case", case_name}, {"seed", seed}}, "staged");
    m_module->stage(r++);
  }
  return bridge::torch_timings_of(m_module->time(bridge::torch_time_request(m_p, subjects, cfg, m_ctx.device), timeout_s));
}

void device_judge::poison(int s) { command({{"cmd", "poison"}, {"set", s}}, "poisoned"); }

void device_judge::snapshot(int s) { command({{"cmd", "snapshot"}, {"set", s}}, "snapped"); }

void device_judge::judge(int s, int t, int run, bool timed, const check_sink& add, bool waited) {
  m_add = add;
  command({{"cmd", "judge"}, {"set", s}, {"trial", t}, {"run", run}, {"timed", timed}, {"waited", waited}}, "judged");
  m_add = nullptr;
}

void device_judge::drop(int t) {
  m_module_ran.erase(t);
  (void)m_session->send({{"cmd", "drop"}, {"trial", t}});
}

std::string device_judge::key_of(const worker_context& ctx, const role_artifacts& builds, int sets, std::size_t trials) {
  // The problem's text (tensors, cases, tolerance) and module, and the very builds loaded.
  return sha256_hex(fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", ctx.p.toml_text,
                                ctx.p.torch ? read_file(ctx.p.torch->module) : "", ctx.p.dir.string(), ctx.exe.string(),
                                fmt::format("{} {}", ctx.device, ctx.timeout_s), builds.reference.library.string(), builds.oracle.library.string(),
                                builds.kernels.library.string(), sets, trials));
}

void device_judge::reset(const nlohmann::json& trials, std::uint64_t canary_seed) {
  m_trials = trials;
  m_ref_errors.clear();
  m_module_ran.clear();
  m_error.clear();
  command({{"cmd", "reset"}, {"trials", trials}, {"canary_seed", canary_seed}}, "reset");
}

nlohmann::json device_judge::confinement() const { return m_session->confinement(); }

std::vector<case_reference_error> device_judge::reference_errors() const {
  std::vector<case_reference_error> out;
  const auto outs = m_ctx.p.outputs();
  for (auto& [key, e] : m_ref_errors)
    if (key.first < static_cast<int>(m_trials.size()) && key.second < outs.size())
      out.push_back({m_trials[key.first]["case"], outs[key.second]->name, e});
  return out;
}

void device_judge::begin_finish() {
  if (m_finishing) return;
  m_module.reset(); // the helper lets the exchange go before its owner ends
  (void)m_session->send({{"cmd", "finish"}});
  m_finishing = true;
}

nlohmann::json device_judge::finish() {
  begin_finish();
  return m_session->finish().confinement;
}

} // namespace kforge::worker
