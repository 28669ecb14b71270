#include "search/options.hpp"

namespace kforge::search {

#define KFORGE_SEARCH_FIELDS(X)                                                                                      \
  X(strategy) X(seed) X(max_evaluations) X(max_tokens) X(max_cost_usd) X(max_wall_s) X(target_fraction) X(patience) \
  X(max_rounds) X(tune_method) X(tune_budget) X(max_fixes) X(profile_depth) X(ideas) X(implementations) X(keep) X(islands) X(migrate_every)    \
  X(devices) X(build_jobs) X(trials) X(time_budget_s) X(sanitize_best) X(llm) X(dialect)

nlohmann::json search_options::to_json() const {
  nlohmann::json j;
#define X(f) j[#f] = f;
  KFORGE_SEARCH_FIELDS(X)
#undef X
  return j;
}

search_options search_options::from_json(const nlohmann::json& j) {
  search_options o;
#define X(f) if (j.contains(#f)) j.at(#f).get_to(o.f);
  KFORGE_SEARCH_FIELDS(X)
#undef X
  return o;
}

#undef KFORGE_SEARCH_FIELDS

} // namespace kforge::search
