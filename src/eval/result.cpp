#include "eval/result.hpp"

#include <iterator>

namespace kforge::eval {

int check_priority(const std::string& name) {
  for (std::size_t i = 0; i < std::size(check_order); ++i)
    if (name == check_order[i]) return static_cast<int>(i);
  return static_cast<int>(std::size(check_order));
}

nlohmann::json to_json(const check_result& c) {
  nlohmann::json j{{"name", c.name}, {"passed", c.passed}};
  if (!c.case_name.empty()) j["case"] = c.case_name;
  if (c.trial >= 0) j["trial"] = c.trial;
  if (c.run) j["run"] = c.run;
  if (!c.output.empty()) j["output"] = c.output;
  if (!c.message.empty()) j["message"] = c.message;
  if (!c.detail.empty()) j["detail"] = c.detail;
  return j;
}

nlohmann::json to_json(const timing_summary& t) {
  return {{"subject", t.subject}, {"samples", t.samples},    {"median_s", t.median_s}, {"mean_s", t.mean_s},
          {"min_s", t.min_s},     {"max_s", t.max_s},        {"stdev_s", t.stdev_s},   {"p10_s", t.p10_s},
          {"p90_s", t.p90_s},     {"ci_rel", t.ci_rel},      {"converged", t.converged}};
}

} // namespace kforge::eval
