#include "search/session.hpp"

#include "build/compiler.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/process_owner.hpp"
#include "device/backend.hpp"
#include "device/calibration.hpp"
#include "profile/digest.hpp"
#include "search/record.hpp"
#include "worker/profile_run.hpp"
#include "worker/sanitize.hpp"

#include <fmt/format.h>

#include <future>

namespace kforge::search {

namespace {

std::optional<double> number_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return std::nullopt;
    cur = &(*cur)[k];
  }
  return cur->is_number() ? std::optional<double>(cur->get<double>()) : std::nullopt;
}

} // namespace

session::session(store::store& db, const problem::problem& p, search_options opts, event_sink events,
                 std::shared_ptr<llm_gateway> llm)
    : m_db(db), m_problem(p), m_opts(std::move(opts)), m_events(std::move(events)), m_llm(std::move(llm)),
      m_started(std::chrono::steady_clock::now()) {
  m_problem_id = problem_id(db, p);
  if (m_llm) m_llm->set_event_sink([this](const nlohmann::json& e) { emit(e); });
  if (m_opts.resume_run) {
    auto run = db.get_run(*m_opts.resume_run);
    if (!run) KFORGE_THROW(usage, "no run {} in the database; `kforge show --runs` lists them", *m_opts.resume_run);
    if (run->problem != p.name)
      KFORGE_THROW(usage, "run {} is a search of problem '{}', not '{}'", run->id, run->problem, p.name);
    // Two processes continuing one run would each replay and extend it: refuse while its
    // kforge still runs (a killed one was marked "interrupted" when the database opened).
    if (run->status == "running")
      if (auto owner = parse_process_owner(run->owner);
          owner && owner_state(*owner) == owner_liveness::alive && !(*owner == current_process_owner()))
        KFORGE_THROW(usage, "run {} is still running (kforge pid {} on this machine); wait for it to end, or stop it, "
                     "then --resume {}",
                     run->id, owner->pid, run->id);
    // The stored settings win (the run continues as it was started); where the devices
    // are is this machine's business.
    auto stored = search_options::from_json(nlohmann::json::parse(run->config_json));
    stored.resume_run = run->id;
    stored.devices = m_opts.devices;
    stored.build_jobs = m_opts.build_jobs;
    m_opts = stored;
    m_run_id = run->id;
    for (auto& r : db.run_evaluations(m_run_id)) m_prior_evals[r.candidate_id].push_back(r);
    for (auto& c : db.llm_calls_of(m_run_id))
      if (c.error_kind.empty() && !c.replay_key.empty()) m_prior_calls[c.replay_key].push_back(c);
    for (auto& i : db.ideas_of(m_run_id)) m_prior_ideas[{i.round, i.title}].push_back(i.id);
    m_prior_proposals = db.proposals_of(m_run_id);
    db.resume_run(m_run_id);
  } else {
    if (m_opts.seed == 0) m_opts.seed = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    m_run_id = db.begin_run(m_problem_id, m_opts.strategy, m_opts.to_json().dump());
  }
  m_rng.seed(m_opts.seed);

  int devices = m_opts.devices;
  if (devices <= 0) devices = p.backend == problem::backend_kind::cuda ? device::device_count(p.backend) : 1;
  if (devices <= 0) KFORGE_THROW(usage, "no CUDA device is visible; a backend = \"cuda\" problem needs one");
  m_device_model = device::device_model(p.backend, 0);
  m_scheduler = std::make_unique<scheduler>(scheduler_options{.devices = devices, .build_jobs = m_opts.build_jobs});
  // Sources live content-addressed in the cache, so one source has one path and therefore
  // one evaluation config: the result cache then works across runs too.
  emit({{"event", "run"}, {"resumed", m_opts.resume_run.has_value()}, {"problem", p.name},
        {"strategy", m_opts.strategy}, {"devices", devices}, {"device", m_device_model},
        {"options", m_opts.to_json()}});
}

session::~session() {
  if (m_llm) m_llm->set_event_sink({}); // the gateway may outlive the session
}

void session::emit(nlohmann::json event) const {
  if (!m_events) return;
  event["schema"] = "kforge.optimize-event/1";
  event["run"] = m_run_id;
  m_events(event);
}

std::filesystem::path session::source_path(const std::string& source) const {
  // A ModelNew file (a Python seed, or an answer in a Python dialect) is built as Python.
  if (build::is_python_source(source)) return build::write_source(source, "x.py");
  return build::write_source(source, m_problem.backend == problem::backend_kind::cuda ? "x.cu" : "x.cpp");
}

int64_t session::put_candidate(const proposal& prop) {
  return m_db.put_candidate(m_problem_id, prop.source, prop.origin, prop.label, prop.parent_id);
}

outcome session::evaluate(const proposal& prop) {
  const int64_t cand = m_db.put_candidate(m_problem_id, prop.source, prop.origin, prop.label, prop.parent_id);
  const auto path = source_path(prop.source);
  {
    std::unique_lock lock(m_mu);
    auto it = m_prior_evals.find(cand);
    if (it != m_prior_evals.end() && !it->second.empty()) {
      auto rec = it->second.front();
      it->second.pop_front();
      lock.unlock();
      ++m_evaluations;
      return finish_outcome(prop, cand, rec.evaluation_id, rec.reused);
    }
  }
  if (m_opts.max_evaluations > 0 && m_evaluations.fetch_add(1) >= m_opts.max_evaluations) {
    --m_evaluations;
    outcome o;
    o.candidate_id = cand;
    o.status = "not_run";
    o.message = fmt::format("evaluation budget spent ({} evaluations)", m_opts.max_evaluations);
    o.source = prop.source;
    o.label = prop.label;
    return o;
  }
  if (m_opts.max_evaluations <= 0) ++m_evaluations;

  worker::evaluate_options eo;
  eo.trials_per_case = m_opts.trials;
  eo.time_budget_s = m_opts.time_budget_s;
  eo.reuse_torch_baselines = true; // eager and torch.compile do not change between a search's candidates
  eo.judges = m_judges;            // nor does the judge's reference: one judge per device for the search
  const std::string config = evaluation_config(m_problem, path, eo).dump();
  if (auto prior = m_db.find_evaluation(cand, m_device_model, config)) {
    m_db.put_run_evaluation({.run_id = m_run_id, .evaluation_id = *prior, .candidate_id = cand, .round = prop.round,
                             .step = prop.step, .idea_id = prop.idea_id, .params_json = prop.params.dump(),
                             .reused = true});
    return finish_outcome(prop, cand, *prior, true);
  }
  auto fut = m_scheduler->submit([&](const acquire_fn& acquire) {
    auto o = eo;
    o.acquire_device = acquire;
    return evaluate_and_record(m_db, m_problem, path,
                               {.origin = prop.origin, .label = prop.label, .parent_id = prop.parent_id}, o);
  });
  auto rec = fut.get(); // a broken problem throws here, to the strategy and the command
  m_db.put_run_evaluation({.run_id = m_run_id, .evaluation_id = rec.evaluation_id, .candidate_id = cand,
                           .round = prop.round, .step = prop.step, .idea_id = prop.idea_id,
                           .params_json = prop.params.dump(), .reused = false});
  return finish_outcome(prop, cand, rec.evaluation_id, false);
}

std::vector<outcome> session::evaluate_all(const std::vector<proposal>& props) {
  std::vector<std::future<outcome>> futs;
  futs.reserve(props.size());
  for (auto& p : props) futs.push_back(std::async(std::launch::async, [this, &p] { return evaluate(p); }));
  return wait_all(futs);
}

std::vector<outcome> wait_all(std::vector<std::future<outcome>>& futures) {
  std::vector<outcome> out;
  out.reserve(futures.size());
  std::exception_ptr first;
  for (auto& f : futures) {
    try {
      out.push_back(f.get());
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return out;
}

outcome session::finish_outcome(const proposal& prop, int64_t candidate_id, int64_t evaluation_id, bool reused) {
  outcome o;
  o.candidate_id = candidate_id;
  o.evaluation_id = evaluation_id;
  o.reused = reused;
  o.source = prop.source;
  o.label = prop.label;
  auto ev = m_db.get_evaluation(evaluation_id);
  if (!ev) KFORGE_THROW(store, "evaluation {} vanished from the database", evaluation_id);
  o.status = ev->status;
  o.message = ev->message;
  o.doc = nlohmann::json::parse(ev->summary_json.empty() ? "{}" : ev->summary_json, nullptr, false);
  if (o.doc.is_discarded()) o.doc = nlohmann::json::object();
  o.median_s = number_at(o.doc, {"timing", "candidate", "median_s"});
  o.reference_median_s = number_at(o.doc, {"timing", "reference", "median_s"});
  o.speedup = number_at(o.doc, {"timing", "speedup"});
  o.roofline_fraction = number_at(o.doc, {"timing", "roofline", "candidate_fraction"});
  consider_best(o);
  emit({{"event", "evaluation"}, {"candidate_id", o.candidate_id}, {"evaluation_id", o.evaluation_id},
        {"label", o.label}, {"step", prop.step}, {"round", prop.round}, {"status", o.status}, {"message", o.message},
        {"reused", o.reused}, {"median_s", o.median_s ? nlohmann::json(*o.median_s) : nlohmann::json()},
        {"speedup", o.speedup ? nlohmann::json(*o.speedup) : nlohmann::json()},
        {"device_index", o.doc.value("device_index", -1)}});
  return o;
}

void session::consider_best(outcome& o) {
  if (!o.passed()) return;
  std::lock_guard lock(m_mu);
  if (m_best && *m_best->median_s <= *o.median_s) return;
  const bool gain = !m_best || *o.median_s < *m_best->median_s * 0.99; // under 1% is noise, not progress
  m_best = o;
  m_gain_this_round = m_gain_this_round || gain;
  // A new best on a GPU runs under compute-sanitizer before it is accepted (confirm_best, at
  // the end of the round): a race or an out-of-bounds read that happened to give right
  // answers must not become the result. Once per round, not per improvement, so that the
  // sanitizer's minutes do not stall the round's evaluations.
  m_best_confirmed = !(m_opts.sanitize_best && m_problem.backend == problem::backend_kind::cuda);
  if (m_best_confirmed) accept_best_locked();
}

void session::accept_best_locked() {
  const auto& o = *m_best;
  m_confirmed_best = o;
  m_db.set_run_best(m_run_id, o.candidate_id, o.evaluation_id);
  emit({{"event", "best"}, {"candidate_id", o.candidate_id}, {"label", o.label}, {"median_s", *o.median_s},
        {"speedup", o.speedup ? nlohmann::json(*o.speedup) : nlohmann::json()},
        {"roofline_fraction", o.roofline_fraction ? nlohmann::json(*o.roofline_fraction) : nlohmann::json()}});
}

void session::confirm_best() {
  std::optional<outcome> o;
  {
    std::lock_guard lock(m_mu);
    if (!m_best || m_best_confirmed) return;
    o = m_best;
  }
  const auto path = source_path(o->source);
  auto s = m_scheduler
               ->submit([&](const acquire_fn& acquire) {
                 auto lease = acquire();
                 worker::sanitize_options so{.device = lease.ordinal};
                 return worker::sanitize(m_problem, path, so);
               })
               .get();
  for (auto& c : s.checks) {
    nlohmann::json d = c.detail;
    if (!c.message.empty()) d["message"] = c.message;
    m_db.put_check(o->evaluation_id, {c.name, c.case_name, c.trial, c.passed, d.dump()});
    if (!c.passed && o->status == "passed") {
      o->status = c.name;
      o->message = "passed verification, then failed compute-sanitizer: " + c.message;
    }
  }
  std::lock_guard lock(m_mu);
  if (!s.passed()) {
    m_db.set_evaluation_status(o->evaluation_id, o->status, o->message);
    emit({{"event", "sanitize_failed"}, {"candidate_id", o->candidate_id}, {"message", o->message}});
    // The last accepted best stands (a better one of this round that was not the best is
    // not tried: the round's strategies build on what passed).
    m_best = m_confirmed_best;
    m_best_confirmed = true;
    return;
  }
  m_best_confirmed = true;
  accept_best_locked();
}

llm::response session::ask(const std::string& role, const llm::request& req, int64_t* call_id) {
  if (!req.replay_key.empty()) {
    std::unique_lock lock(m_mu);
    auto it = m_prior_calls.find(req.replay_key);
    if (it != m_prior_calls.end() && !it->second.empty()) {
      auto c = it->second.front();
      it->second.pop_front();
      lock.unlock();
      if (call_id) *call_id = c.id;
      emit({{"event", "llm_call"}, {"role", role}, {"key", req.replay_key}, {"resumed", true}});
      return {.text = c.response_text, .stop_reason = c.stop_reason,
              .usage = {c.input_tokens, c.output_tokens, c.cached_input_tokens, c.cache_write_tokens},
              .model = c.model, .id = c.response_id};
    }
  }
  if (!m_llm)
    throw llm::error(llm::error_kind::bad_request,
                     "no LLM configured: add [llm] models to kforge.toml or pass --llm provider:model");
  int64_t id = 0;
  auto r = m_llm->ask(role, req, m_run_id, &id);
  if (call_id) *call_id = id;
  emit({{"event", "llm_call"}, {"role", role}, {"key", req.replay_key}, {"model", r.model},
        {"input_tokens", r.usage.input_tokens}, {"output_tokens", r.usage.output_tokens}});
  return r;
}

std::string session::profile_digest(const outcome& o) {
  {
    std::lock_guard lock(m_mu);
    if (auto it = m_profiles.find(o.candidate_id); it != m_profiles.end()) return it->second;
  }
  std::string text, failure;
  nlohmann::json dj = nlohmann::json::object();
  if (m_problem.backend != problem::backend_kind::cuda) {
    failure = "profiling needs a GPU problem";
  } else {
    const auto path = source_path(o.source);
    auto run = m_scheduler
                   ->submit([&](const acquire_fn& acquire) {
                     auto lease = acquire(); // ncu replays kernels: nothing else may run on this device meanwhile
                     return worker::profile_candidate(m_problem, path, {.device = lease.ordinal});
                   })
                   .get();
    const auto doc = worker::profile_document(m_problem, run);
    if (run.ok()) {
      dj = doc["digest"];
      text = doc["text"];
    } else {
      failure = run.failure;
    }
  }
  m_db.put_profile({.candidate_id = o.candidate_id,
                    .evaluation_id = o.evaluation_id ? std::optional<int64_t>(o.evaluation_id) : std::nullopt,
                    .device = m_device_model, .ok = failure.empty(), .failure = failure, .digest_json = dj.dump(),
                    .digest_text = text});
  emit({{"event", "profile"}, {"candidate_id", o.candidate_id}, {"ok", failure.empty()}, {"failure", failure}});
  std::lock_guard lock(m_mu);
  return m_profiles[o.candidate_id] = text;
}

int64_t session::put_idea(int round, const std::string& title, const std::string& body,
                          std::optional<int64_t> call_id) {
  {
    std::lock_guard lock(m_mu);
    auto it = m_prior_ideas.find({round, title});
    if (it != m_prior_ideas.end() && !it->second.empty()) {
      auto id = it->second.front();
      it->second.pop_front();
      return id;
    }
  }
  auto id = m_db.put_idea({.run_id = m_run_id, .round = round, .title = title, .body = body, .llm_call_id = call_id});
  emit({{"event", "idea"}, {"round", round}, {"idea_id", id}, {"title", title}});
  return id;
}

void session::put_proposal(store::proposal_record p) {
  {
    std::lock_guard lock(m_mu);
    for (auto& q : m_prior_proposals)
      if (q.round == p.round && q.step == p.step && q.llm_call_id == p.llm_call_id && q.llm_call_id) return;
  }
  p.run_id = m_run_id;
  m_db.put_proposal(p);
}

void session::end_round(int round, const std::string& note) {
  confirm_best();
  nlohmann::json ev{{"event", "round"}, {"round", round}, {"evaluations", m_evaluations.load()}, {"note", note}};
  {
    std::lock_guard lock(m_mu);
    if (round > 0) ++m_rounds; // the seed's round 0 asks no LLM: --rounds counts the rounds that do
    m_rounds_without_gain = m_gain_this_round ? 0 : m_rounds_without_gain + 1;
    m_gain_this_round = false;
    if (m_best) {
      ev["best_median_s"] = *m_best->median_s;
      ev["best_label"] = m_best->label;
      if (m_best->speedup) ev["speedup"] = *m_best->speedup;
      if (m_best->roofline_fraction) ev["roofline_fraction"] = *m_best->roofline_fraction;
    }
    ev["rounds_without_gain"] = m_rounds_without_gain;
  }
  auto t = m_db.llm_totals_of(m_run_id);
  ev["tokens"] = t.input_tokens + t.output_tokens;
  if (t.estimated_calls > 0) ev["tokens_estimated_calls"] = t.estimated_calls;
  ev["cost_usd"] = t.cost_usd;
  emit(ev);
}

std::optional<std::string> session::stop_reason() const {
  const int used = m_evaluations.load();
  if (m_opts.max_evaluations > 0 && used >= m_opts.max_evaluations)
    return fmt::format("budget: {} evaluations", m_opts.max_evaluations);
  if (m_opts.max_tokens > 0 || m_opts.max_cost_usd > 0) {
    auto t = m_db.llm_totals_of(m_run_id);
    if (m_opts.max_tokens > 0 && t.input_tokens + t.output_tokens >= m_opts.max_tokens)
      return fmt::format("budget: {} tokens spent of {}{}", t.input_tokens + t.output_tokens, m_opts.max_tokens,
                         t.estimated_calls > 0 ? fmt::format(" ({} of the calls' tokens estimated from their text: "
                                                             "the server sent no counts)",
                                                             t.estimated_calls)
                                               : "");
    if (m_opts.max_cost_usd > 0 && t.cost_usd >= m_opts.max_cost_usd)
      return fmt::format("budget: ${:.2f} spent of ${:.2f}", t.cost_usd, m_opts.max_cost_usd);
  }
  const double wall = m_prior_wall_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
  if (m_opts.max_wall_s > 0 && wall >= m_opts.max_wall_s)
    return fmt::format("budget: {:.0f} s of wall time", m_opts.max_wall_s);
  std::lock_guard lock(m_mu);
  if (m_opts.target_fraction > 0 && m_best && m_best->roofline_fraction &&
      *m_best->roofline_fraction >= m_opts.target_fraction)
    return fmt::format("target: {:.0f}% of the roofline reached ({:.0f}%)", 100 * m_opts.target_fraction,
                       100 * *m_best->roofline_fraction);
  if (m_opts.patience > 0 && m_rounds_without_gain >= m_opts.patience)
    return fmt::format("no gain in {} rounds", m_rounds_without_gain);
  if (m_opts.max_rounds > 0 && m_rounds >= m_opts.max_rounds) return fmt::format("{} rounds done", m_rounds);
  return std::nullopt;
}

void session::finish(const std::string& reason) {
  confirm_best();
  m_db.finish_run(m_run_id, "finished", reason);
  nlohmann::json ev{{"event", "stopped"}, {"reason", reason}, {"evaluations", m_evaluations.load()}};
  if (auto b = best()) {
    ev["best_candidate_id"] = b->candidate_id;
    ev["best_median_s"] = *b->median_s;
    if (b->speedup) ev["speedup"] = *b->speedup;
  }
  emit(ev);
}

void session::fail(const std::string& reason) {
  m_db.finish_run(m_run_id, "failed", reason);
  emit({{"event", "stopped"}, {"reason", reason}, {"failed", true}});
}

std::optional<outcome> session::best() const {
  std::lock_guard lock(m_mu);
  return m_best;
}

} // namespace kforge::search
