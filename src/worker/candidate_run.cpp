#include "worker/candidate_run.hpp"

#include "core/error.hpp"
#include "core/fd_passing.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <thread>

namespace kforge::worker {

std::optional<eval::check_result> process_failure(const worker_outcome& o, const std::string& phase,
                                                  const nlohmann::json& trials) {
  if (o.end == worker_end::done) return std::nullopt;
  eval::check_result c{.name = worker_end_name(o.end), .passed = false};
  std::string where = phase;
  const auto lp = o.last_progress.is_object() ? o.last_progress : nlohmann::json::object();
  if (lp.contains("trial") && lp["trial"].is_number_integer()) {
    const int t = lp["trial"];
    c.trial = t;
    if (t >= 0 && t < static_cast<int>(trials.size())) c.case_name = trials[t]["case"];
    c.run = lp.value("run", 0);
    where = fmt::format("{} on case '{}' (trial {}{})", phase, c.case_name, t, c.run ? ", repeat call" : "");
  }
  if (lp.value("phase", "") == "timing") where = "timing";
  if (lp.value("phase", "") == "workspace") where = "kf_workspace_bytes";
  // The sandbox's CPU time and file size limits end a worker by signal: named, not "crashed".
  // So does the sandbox's init where it counts processes itself (uid 0), and it says so.
  const bool limit = o.end == worker_end::crashed &&
                     (o.signal == SIGXCPU || o.signal == SIGXFSZ || !o.sandbox_ended.empty());
  switch (o.end) {
  case worker_end::crashed:
    if (limit) {
      c.name = "resource_limit";
      c.message = !o.sandbox_ended.empty()
                      ? fmt::format("the sandbox ended the candidate during {}: {}", where, o.sandbox_ended)
                      : fmt::format("the candidate exceeded the sandbox's {} ({}) during {}",
                                    o.signal == SIGXCPU ? "CPU time limit" : "file size limit", o.detail, where);
    } else {
      c.message = fmt::format("the candidate crashed with {} during {}", o.detail, where);
    }
    break;
  case worker_end::timeout: c.message = fmt::format("the candidate hung during {}: {}", where, o.detail); break;
  case worker_end::exited_early:
    c.message = fmt::format("the worker exited during {} without a result ({}): the candidate called exit()?", where, o.detail);
    break;
  default: c.message = fmt::format("the result channel was tampered with during {}: {}", where, o.detail); break;
  }
  c.detail = {{"how", o.detail}, {"exit_code", o.exit_code}, {"signal", o.signal}};
  if (!o.output.empty()) c.detail["output"] = o.output.substr(0, 2000);
  return c;
}

std::string with_place(const eval::check_result& c) {
  // A process failure's message names its place already.
  if (c.case_name.empty() || c.detail.contains("how") || c.name == "crashed" || c.name == "timeout" ||
      c.name == "exited_early" || c.name == "protocol_error")
    return c.message;
  return fmt::format("case '{}' (trial {}{}): {}", c.case_name, c.trial, c.run ? ", repeat call" : "", c.message);
}

eval::check_result check_of(const nlohmann::json& h, const nlohmann::json& trials) {
  eval::check_result c{.name = h.value("name", ""), .trial = h.value("trial", -1), .run = h.value("run", 0),
                       .output = h.value("output", ""), .passed = h.value("passed", false),
                       .message = h.value("message", "")};
  if (h.contains("detail")) c.detail = h["detail"];
  if (c.trial >= 0 && c.trial < static_cast<int>(trials.size())) c.case_name = trials[c.trial]["case"];
  return c;
}

namespace {
// Frames of a candidate's worker that become checks: "error" (load_failed, ...) and "check".
message_sink candidate_checks(const std::filesystem::path& candidate_source, const nlohmann::json& trials,
                              const check_sink& add) {
  return [&candidate_source, &trials, add](message& m) {
    const std::string type = m.header["type"];
    if (type == "error") {
      eval::check_result c{.name = m.header.value("reason", "load_failed"), .passed = false,
                           .message = m.header.value("message", "")};
      if (c.name == "load_failed") c.message = fmt::format("{}: {}", candidate_source.string(), c.message);
      add(c);
    } else if (type == "check") {
      add(check_of(m.header, trials));
    }
  };
}
} // namespace

verify_run verify_candidate(const worker_context& ctx, const std::filesystem::path& library,
                            const std::filesystem::path& candidate_source, const nlohmann::json& trials,
                            std::uint64_t canary_seed, judge& j, const check_sink& add) {
  using clock = std::chrono::steady_clock;
  verify_run out;
  out.outcome = run_worker(
      ctx.exe,
      {{"role", "verify"}, {"problem", ctx.p.dir.string()}, {"device", ctx.device},
       {"libraries", {{"candidate", library.string()}}}, {"trials", trials}, {"canary_seed", canary_seed}},
      {.timeout_s = ctx.timeout_s, .sink = [&, checks = candidate_checks(candidate_source, trials, add)](message& m) {
        const std::string type = m.header["type"];
        if (type == "error" || type == "check") {
          checks(m);
        } else if (type == "output") {
          const auto t0 = clock::now();
          j.output(m.header["trial"], m.header["run"], m.header["index"], tensor_of(m));
          out.judge_s += std::chrono::duration<double>(clock::now() - t0).count();
        }
      }, .problem = &ctx.p});
  return out;
}


namespace {
nlohmann::json call_job(const worker_context& ctx, const std::filesystem::path& library) {
  return {{"role", "call"}, {"problem", ctx.p.dir.string()}, {"libraries", {{"candidate", library.string()}}}};
}
} // namespace

std::unique_ptr<deferred_worker> defer_call_worker(const worker_context& ctx, const std::filesystem::path& library,
                                                   double timeout_s, const std::vector<std::string>& warm) {
  auto job = call_job(ctx, library);
  job["warm_modules"] = warm;
  return std::make_unique<deferred_worker>(ctx.exe, job, worker_options{.timeout_s = timeout_s, .problem = &ctx.p});
}

std::unique_ptr<worker_session> start_call_worker(const worker_context& ctx, const std::filesystem::path& library,
                                                  const std::filesystem::path& candidate_source, device_judge& j,
                                                  std::uint64_t canary_seed, double timeout_s,
                                                  const nlohmann::json& trials, const check_sink& add,
                                                  std::unique_ptr<deferred_worker> early) {
  const nlohmann::json rest = {{"device", ctx.device}, {"set_bytes", j.set_bytes()}, {"canary_seed", canary_seed}};
  std::vector<int> fds;
  for (int s : j.verify_sets()) fds.push_back(j.set_fd(s));
  auto sink = candidate_checks(candidate_source, trials, add);
  if (early) return early->complete(rest, fds, std::move(sink));
  int sv[2];
  make_fd_socket(sv);
  auto job = call_job(ctx, library);
  job.update(rest);
  auto w = std::make_unique<worker_session>(
      ctx.exe, job,
      worker_options{.timeout_s = timeout_s, .sink = std::move(sink), .problem = &ctx.p, .share_socket = sv[1]});
  ::close(sv[1]);
  try {
    send_fds(sv[0], "sets", fds);
  } catch (const error&) {
    // The worker is gone already: its outcome says how.
  }
  ::close(sv[0]);
  return w;
}

verify_run verify_on_device(std::unique_ptr<worker_session> w, const nlohmann::json& trials, device_judge& j,
                            const std::set<int>& keep, const check_sink& add, timeline* steps) {
  using clock = std::chrono::steady_clock;
  verify_run out;
  const auto& sets = j.verify_sets();
  // The judge's steps are timed apart: judge_s, like the host path's.
  auto judged = [&](auto&& step) {
    const auto t0 = clock::now();
    w->stop();
    step();
    w->resume();
    out.judge_s += std::chrono::duration<double>(clock::now() - t0).count();
  };
  auto t_step = clock::now();
  const auto ready = w->wait_for("ready");
  if (steps) steps->add("verify: call worker ready", t_step);
  // The worker's own account of its start (a Python candidate's interpreter and imports):
  // spans on the steady clock every process of the machine shares.
  if (steps && ready)
    for (auto& s : ready->value("load_steps", nlohmann::json::array()))
      if (s.is_array() && s.size() == 3 && s[0].is_string() && s[1].is_number_integer() && s[2].is_number_integer()) {
        const auto at = [](const nlohmann::json& ns) {
          return timeline::clock::time_point(std::chrono::nanoseconds(ns.get<std::int64_t>()));
        };
        steps->add("verify: call worker load: " + s[0].get<std::string>(), at(s[1]), at(s[2]));
      }
  bool going = ready.has_value();
  if (ready)
    out.launches = {{"watched", ready->value("launches_watched", false)}, {"why", ready->value("unwatched_because", "")}};
  for (std::size_t first = 0; going && first < trials.size(); first += sets.size()) {
    t_step = clock::now();
    const std::size_t n = std::min(sets.size(), trials.size() - first);
    auto trial = [&](std::size_t k) { return trials[first + k]["trial"].get<int>(); };
    judged([&] {
      for (std::size_t k = 0; k < n; ++k) j.load(sets[k], trial(k));
    });
    for (int run = 0; going && run < 2; ++run) {
      if (run == 1)
        judged([&] {
          for (std::size_t k = 0; k < n; ++k) j.poison(sets[k]);
        });
      // The second run goes through the sets the other way round, so each trial's two calls
      // differ in their place in the candidate's call count (a counter that nudges every
      // second call would otherwise nudge both calls of one trial and neither of the other).
      for (std::size_t i = 0; going && i < n; ++i) {
        const std::size_t k = run == 0 ? i : n - 1 - i;
        going = w->send({{"cmd", "call"}, {"slot", k}, {"trial", trial(k)}, {"run", run}}) &&
                w->wait_for("called").has_value();
        if (!going) break;
        const auto t0 = clock::now();
        j.snapshot(sets[k]);
        out.judge_s += std::chrono::duration<double>(clock::now() - t0).count();
      }
      if (!going) break;
      // One pause for the batch: the worker runs on after its last call, then is stopped.
      const auto t0 = clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(deferred_pause_ms));
      out.judge_s += std::chrono::duration<double>(clock::now() - t0).count();
      judged([&] {
        for (std::size_t k = 0; k < n; ++k) j.judge(sets[k], trial(k), run, false, add, k > 0);
      });
    }
    for (std::size_t k = 0; k < n; ++k)
      if (!keep.count(trial(k))) j.drop(trial(k));
    if (steps) steps->add(fmt::format("verify: trials {}-{}", first, first + n - 1), t_step);
  }
  t_step = clock::now();
  out.outcome = w->finish();
  if (steps) steps->add("verify: call worker end", t_step);
  return out;
}

} // namespace kforge::worker
