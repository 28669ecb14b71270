#include "search/record.hpp"

#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/text.hpp"
#include "build/params.hpp"

#include <mutex>


namespace kforge::search {
namespace {

// Text a candidate produced may be anything: JSON is written with stray bytes replaced
// (U+FFFD), never thrown on (nlohmann's type_error 316).
std::string dump(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Candidate text made fit to pass on: no secret values, valid UTF-8.
std::string clean(std::string_view text) { return to_valid_utf8(scrub_secrets(text)); }

void scrub(nlohmann::json& j) {
  if (j.is_string()) j = clean(j.get_ref<const std::string&>());
  else if (j.is_structured())
    for (auto& v : j) scrub(v);
}

void scrub(eval::check_result& c) {
  c.message = clean(c.message);
  scrub(c.detail);
}

// What the candidate printed reaches the result in its check details, messages and build
// diagnostics (and its file name in commands); none of it may carry a secret further, nor
// bytes that make a JSON writer throw (the caller prints it, the MCP server sends it, a
// search quotes it to an LLM). The store cleans what it writes on its own.
void scrub(worker::evaluation& ev) {
  ev.message = clean(ev.message);
  ev.worker_output = clean(ev.worker_output);
  if (ev.failure) scrub(*ev.failure);
  for (auto& c : ev.checks) scrub(c);
  for (auto& b : ev.builds) {
    b.artifact.diagnostics = clean(b.artifact.diagnostics);
    b.artifact.command = clean(b.artifact.command);
  }
  for (auto& r : ev.review) r = clean(r);
}

} // namespace

void protect_llm_keys(const llm::llm_config& cfg) {
  for (auto& m : cfg.models) add_secret_variable(m.key_env);
  for (auto& [role, models] : cfg.roles)
    for (auto& m : models) add_secret_variable(m.key_env);
}

int64_t problem_id(store::store& db, const problem::problem& p) {
  return db.put_problem({p.name, std::filesystem::absolute(p.dir).string(),
                         hasher().add(p.toml_text).add(read_file(p.reference)).hex(), p.toml_text});
}

nlohmann::json evaluation_config(const problem::problem& p, const std::filesystem::path& candidate,
                                 const worker::evaluate_options& opts) {
  return {{"candidate", printable_path(std::filesystem::absolute(candidate).string())},
          {"seed", opts.seed ? nlohmann::json(*opts.seed) : nlohmann::json()},
          {"trials_per_case", opts.trials_per_case},
          {"time", opts.time},
          {"time_budget_s", opts.time_budget_s},
          {"sanitize", opts.sanitize},
          {"precision", p.tolerance.precision}}; // an opted-in lower precision is on record
}

recorded_evaluation evaluate_and_record(store::store& db, const problem::problem& p,
                                        const std::filesystem::path& given, const provenance& given_from,
                                        worker::evaluate_options opts) {
  static std::once_flag configured_keys;
  std::call_once(configured_keys, [] {
    try {
      if (auto cfg = llm::find_llm_config("", {})) protect_llm_keys(*cfg);
    } catch (const kforge::error&) {
    }
  });
  recorded_evaluation r;
  const auto pid = problem_id(db, p);
  std::filesystem::path candidate = given;
  provenance from = given_from;
  std::string source = read_file(candidate);
  // A source that declares tunable parameters is built at its declared defaults (the
  // tuner of kforge optimize searches the rest); the instance is what is recorded.
  if (build::declares_params(source)) {
    const auto space = build::parse_params(source, given.string());
    auto values = build::defaults(space);
    for (auto& [name, v] : from.params) {
      if (!space.find(name))
        KFORGE_THROW(usage, "{} declares no parameter '{}'; it declares:\n{}", given.string(), name, space.describe());
      values[name] = v;
    }
    if (auto why = space.rejection(values); !why.empty()) KFORGE_THROW(usage, "{}: {}", given.string(), why);
    source = build::instantiate(source, space, values);
    candidate = build::write_source(source, given);
    if (from.label.empty()) from.label = printable_path(given.filename().string()) + " [" + build::to_string(values) + "]";
  } else if (!from.params.empty()) {
    KFORGE_THROW(usage, "{} declares no tunable parameters (// kforge: param, docs/candidates.md)", given.string());
  }
  r.candidate_id = db.put_candidate(pid, source, from.origin,
                                    from.label.empty() ? printable_path(candidate.filename().string()) : from.label,
                                    from.parent_id);
  r.evaluation_id = db.begin_evaluation(r.candidate_id, std::nullopt, dump(evaluation_config(p, candidate, opts)));
  if (!from.hypothesis.empty() || from.predicted_s) db.set_experiment(r.evaluation_id, from.hypothesis, from.predicted_s);
  const auto best_before = db.best_median(pid);
  opts.observer.on_build = [&, user = opts.observer.on_build](const worker::role_build& b) {
    db.put_build({.candidate_id = r.candidate_id, .role = b.role, .compiler = b.artifact.compiler,
                  .flags = b.artifact.command, .cache_key = b.artifact.cache_key, .ok = b.artifact.ok,
                  .cached = b.artifact.cached, .diagnostics = b.artifact.diagnostics,
                  .duration_s = b.artifact.duration_s, .resources_json = dump(b.artifact.resources),
                  .sha256 = b.artifact.sha256, .cache_note = b.artifact.cache_note});
    if (user) user(b);
  };
  opts.observer.on_check = [&, user = opts.observer.on_check](const eval::check_result& c) {
    nlohmann::json d = c.detail;
    if (!c.message.empty()) d["message"] = c.message;
    if (!c.output.empty()) d["output"] = c.output;
    if (c.run) d["run"] = c.run;
    db.put_check(r.evaluation_id, {c.name, c.case_name, c.trial, c.passed, dump(d)});
    if (user) user(c);
  };
  opts.observer.on_timing = [&, user = opts.observer.on_timing](const eval::timing_summary& t) {
    db.put_timing(r.evaluation_id, {t.subject, t.samples, t.median_s, t.mean_s, t.min_s, t.max_s, t.stdev_s,
                                    t.ci_rel, t.p10_s, t.p90_s});
    if (user) user(t);
  };
  try {
    r.result = worker::evaluate(p, candidate, opts);
  } catch (const std::exception& e) {
    db.finish_evaluation(r.evaluation_id, "error", e.what(), "{}");
    throw;
  }
  scrub(r.result);
  r.json = worker::to_json(r.result, p);
  // The artifact's sha256 and any cache note, per build (kforge.eval/1 builds[]; to_json
  // lists the builds in this order).
  for (std::size_t i = 0; i < r.result.builds.size() && i < r.json["builds"].size(); ++i) {
    const auto& a = r.result.builds[i].artifact;
    r.json["builds"][i]["sha256"] = a.sha256.empty() ? nlohmann::json() : nlohmann::json(a.sha256);
    if (!a.cache_note.empty()) r.json["builds"][i]["cache_note"] = a.cache_note;
  }
  r.json["evaluation_id"] = r.evaluation_id;
  r.json["candidate"] = {{"id", r.candidate_id},
                         {"path", printable_path(std::filesystem::absolute(given).string())},
                         {"hash", sha256_hex(source)},
                         {"origin", from.origin}};
  // Kept: it beat every passing candidate of this problem before it (the log's "keep or revert").
  const auto* t = r.result.timing("candidate");
  const bool kept = r.result.passed() && t && (!best_before || t->median_s < *best_before);
  r.json["kept"] = kept;
  if (!from.hypothesis.empty()) r.json["hypothesis"] = from.hypothesis;
  if (from.predicted_s) r.json["predicted_s"] = *from.predicted_s;
  r.json = nlohmann::json::parse(dump(r.json)); // whatever else holds stray bytes: U+FFFD, once
  db.finish_evaluation(r.evaluation_id, r.result.status, r.result.message, dump(r.json), r.result.device_index,
                       r.result.device);
  if (kept) db.set_kept(r.evaluation_id, true);
  return r;
}

} // namespace kforge::search
