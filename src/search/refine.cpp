// refine (after CuTeGen): one lineage. Each round asks for a faster version of the best
// so far; a candidate that fails goes back to the model with its feedback (the failing
// check, the worst element, the compiler's diagnostics) for up to max_fixes attempts.
// Profiler digests stay out of the prompt until the lineage is profile_depth rounds deep:
// early on the structure still changes, and counters of a kernel about to be rewritten
// only distract.
#include "search/strategy.hpp"

#include <fmt/format.h>

namespace kforge::search {

namespace {

bool better(const outcome& o, const std::optional<outcome>& than) {
  return o.passed() && (!than || *o.median_s < *than->median_s);
}

class refine_strategy final : public strategy {
public:
  void run(session& s) override {
    propose::prompt_builder prompts;
    prompts.use_dialect(s.options().dialect);
    const auto dev = device_facts_of(s);
    const auto& p = s.problem();
    std::optional<outcome> best;
    auto seed = start_from_seed(s, s.options().tune_budget);
    if (seed.passed()) best = seed;
    s.end_round(0, "seed");
    outcome current = best ? *best : seed;
    for (int round = 1; !s.stop_reason(); ++round) {
      auto ref = ref_of(current);
      // Past profile_depth rounds the structure has settled: the current kernel's counters
      // (bottleneck, stalls, coalescing) join its feedback. A profiler failure leaves the
      // prompt with timings only.
      if (round > s.options().profile_depth && ref.eval && current.passed()) ref.profile = s.profile_digest(current);
      auto req = prompts.implement(p, dev, ref);
      req.replay_key = fmt::format("refine/r{}/implement", round);
      auto o = propose_and_judge(s, req, "code", &current, "implement", round, std::nullopt,
                                 fmt::format("refine r{}", round));
      for (int fix = 1; !o.passed() && fix <= s.options().max_fixes && !s.stop_reason(); ++fix) {
        if (o.status == "not_run") break;
        llm::request again;
        if (o.doc.is_object() && !o.doc.empty()) {
          again = prompts.fix(p, dev, ref_of(o), fix, s.options().max_fixes);
        } else {
          // Nothing was judged (the answer had no usable code, or the call failed): ask again.
          again = prompts.implement(p, dev, ref);
        }
        again.replay_key = fmt::format("refine/r{}/fix{}", round, fix);
        const outcome failed = o;
        o = propose_and_judge(s, again, "fix", failed.candidate_id ? &failed : &current, "fix", round, std::nullopt,
                              fmt::format("refine r{} fix {}", round, fix));
      }
      if (better(o, best)) {
        best = o;
        current = o;
      }
      s.end_round(round, o.passed() ? "" : "round failed: " + o.status + (o.message.empty() ? "" : ": " + o.message.substr(0, 160)));
    }
  }
};

} // namespace

std::unique_ptr<strategy> make_refine_strategy() { return std::make_unique<refine_strategy>(); }

} // namespace kforge::search
