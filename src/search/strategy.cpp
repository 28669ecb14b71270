#include "search/strategy.hpp"

#include "core/error.hpp"
#include "device/calibration.hpp"
#include "propose/extract.hpp"
#include "propose/prompt.hpp"

#include <fmt/format.h>

namespace kforge::search {

std::unique_ptr<strategy> make_tune_strategy();   // tune.cpp
std::unique_ptr<strategy> make_refine_strategy(); // refine.cpp
std::unique_ptr<strategy> make_branch_strategy(); // branch.cpp
std::unique_ptr<strategy> make_evolve_strategy(); // evolve.cpp

std::unique_ptr<strategy> make_strategy(const std::string& name) {
  if (name == "tune") return make_tune_strategy();
  if (name == "refine") return make_refine_strategy();
  if (name == "branch") return make_branch_strategy();
  if (name == "evolve") return make_evolve_strategy();
  KFORGE_THROW(usage, "unknown strategy '{}'; known: tune, refine, branch, evolve", name);
}

void run_search(session& s, strategy& st) {
  try {
    st.run(s);
  } catch (const llm::error& e) {
    if (llm::ends_the_run(e)) { // the endpoint is wrong: every later call would fail the same way
      s.fail(fmt::format("LLM endpoint failed: {}", e.what()));
      KFORGE_THROW(usage, "the LLM endpoint cannot answer ({}): {}; run {} stopped at once (fix the URL, key or "
                   "model, then `kforge optimize ... --resume {}`)",
                   llm::error_kind_name(e.kind()), e.what(), s.run_id(), s.run_id());
    }
    if (e.kind() != llm::error_kind::budget) {
      s.fail(fmt::format("LLM call failed: {}", e.what()));
      throw;
    }
    s.finish(e.what()); // the token or cost budget: a normal end
    return;
  } catch (const std::exception& e) {
    s.fail(e.what());
    throw;
  }
  s.finish(s.stop_reason().value_or("done: the strategy finished"));
}

propose::device_facts device_facts_of(const session& s) {
  return {.name = s.device_model(), .ceilings = device::load_ceilings(s.device_model())};
}

propose::candidate_ref ref_of(const outcome& o) {
  return {.source = o.source, .label = o.label, .eval = o.doc.is_object() && !o.doc.empty() ? &o.doc : nullptr};
}

outcome propose_and_judge(session& s, const llm::request& req, const std::string& role, const outcome* parent,
                          const std::string& step, int round, std::optional<int64_t> idea_id, const std::string& label) {
  store::proposal_record rec{.round = round, .step = step, .idea_id = idea_id};
  if (parent && parent->candidate_id) rec.parent_candidate_id = parent->candidate_id;
  outcome failed;
  failed.label = label;
  int64_t call_id = 0;
  llm::response answer;
  try {
    answer = s.ask(role, req, &call_id);
  } catch (const llm::error& e) {
    if (e.kind() == llm::error_kind::budget) throw;
    if (call_id) rec.llm_call_id = call_id;
    rec.status = "llm_error";
    rec.error = e.what();
    s.put_proposal(rec);
    if (llm::ends_the_run(e)) throw; // recorded; run_search ends the run
    failed.status = "llm_error";
    failed.message = e.what();
    s.emit({{"event", "proposal"}, {"round", round}, {"step", step}, {"label", label}, {"status", "llm_error"},
            {"error_kind", std::string(llm::error_kind_name(e.kind()))}, {"message", e.what()}});
    return failed;
  }
  if (call_id) rec.llm_call_id = call_id;
  const std::string language = propose::is_python_dialect(s.options().dialect) ? "python"
                               : s.problem().backend == problem::backend_kind::cuda ? "cuda"
                                                                                     : "cpp";
  auto ex = propose::extract_candidate(answer.text, parent ? parent->source : "", {.language = language});
  rec.notes_json = nlohmann::json(ex.notes).dump();
  if (!ex.ok) {
    rec.status = "malformed";
    rec.error = ex.error;
    s.put_proposal(rec);
    failed.status = "malformed";
    failed.message = "the answer held no usable candidate: " + ex.error;
    s.emit({{"event", "proposal"}, {"round", round}, {"step", step}, {"label", label}, {"status", "malformed"},
            {"message", ex.error}});
    return failed;
  }
  proposal prop{.source = ex.source, .origin = "llm", .label = label, .step = step, .round = round, .idea_id = idea_id};
  if (parent && parent->candidate_id) prop.parent_id = parent->candidate_id;
  auto o = tune_or_evaluate(s, prop, s.options().tune_budget, s.options().tune_method);
  rec.status = "ok";
  if (o.candidate_id) rec.candidate_id = o.candidate_id;
  if (o.status == "invalid_params") {
    rec.status = "malformed";
    rec.error = o.message;
  }
  s.put_proposal(rec);
  return o;
}

} // namespace kforge::search
