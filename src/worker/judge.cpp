#include "worker/judge.hpp"

#include "core/dtype.hpp"
#include "eval/compare.hpp"

#include <fmt/format.h>

namespace kforge::worker {

judge::judge(const problem::problem& p, const nlohmann::json& trials, std::set<int> keep, truth& t, check_sink add)
    : m_p(p), m_trials(trials), m_keep(std::move(keep)), m_truth(t), m_add(std::move(add)) {}

void judge::output(int t, int run, std::size_t k, eval::host_tensor got) {
  const auto outs = m_p.outputs();
  if (t < 0 || t >= static_cast<int>(m_trials.size()) || k >= outs.size() || run < 0 || run > 1) return;
  m_any_output = true;
  const std::size_t want = static_cast<std::size_t>(outs[k]->numel()) * dtype_size(outs[k]->dtype);
  if (got.bytes.size() != want) {
    m_add({.name = "protocol_error", .passed = false,
           .message = fmt::format("output '{}' arrived with {} bytes, expected {}", outs[k]->name, got.bytes.size(), want)});
    return;
  }
  const auto truth_o = m_truth.oracle.find({t, 0, k}), truth_r = m_truth.reference.find({t, 0, k});
  if (truth_o == m_truth.oracle.end() || truth_r == m_truth.reference.end()) { // dropped: this call was judged already
    m_add({.name = "protocol_error", .passed = false,
           .message = fmt::format("output '{}' of trial {} arrived a second time", outs[k]->name, t)});
    return;
  }
  const std::string cname = m_trials[t]["case"];
  for (auto& c : eval::compare_output(*outs[k], m_p.tolerance, got, truth_o->second, truth_r->second)) {
    c.case_name = cname;
    c.trial = t;
    c.run = run;
    m_add(std::move(c));
  }
  if (run == 0) {
    if (m_p.tolerance.deterministic) m_first_call[{t, 0, k}] = std::move(got);
    return;
  }
  auto first = m_first_call.find({t, 0, k});
  if (m_p.tolerance.deterministic && first != m_first_call.end() && first->second.bytes.size() == got.bytes.size()) {
    auto c = eval::compare_repeat(*outs[k], first->second, got);
    c.case_name = cname;
    c.trial = t;
    c.run = 1;
    m_add(std::move(c));
  }
  if (first != m_first_call.end()) m_first_call.erase(first);
  if (!m_keep.count(t)) {
    m_truth.oracle.erase({t, 0, k});
    m_truth.reference.erase({t, 0, k});
  }
}

void judge::timed_outputs(const nlohmann::json& rechecks, const std::map<output_key, eval::host_tensor>& timed) const {
  static constexpr const char* recheck_where[] = {"an early timed call, this trial's inputs in its timed buffers",
                                                  "a timed call after sampling, this trial's inputs in the timed buffers",
                                                  "a timed call after sampling, this trial's inputs in new buffers"};
  const auto outs = m_p.outputs();
  for (std::size_t i = 0; i < rechecks.size() && i < std::size(recheck_where); ++i) {
    const int t = rechecks[i]["trial"];
    eval::check_result verdict{
        .name = "timed_output", .case_name = rechecks[i]["case"].get<std::string>(), .trial = t, .passed = true};
    bool seen = false;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      auto it = timed.find({static_cast<int>(i), 0, k});
      if (it == timed.end()) continue; // timing stopped early: already a failed check
      seen = true;
      const std::size_t want = static_cast<std::size_t>(outs[k]->numel()) * dtype_size(outs[k]->dtype);
      if (it->second.bytes.size() != want) {
        verdict.passed = false;
        verdict.message = fmt::format("{}: output '{}' arrived with {} bytes", recheck_where[i], outs[k]->name,
                                      it->second.bytes.size());
        break;
      }
      for (auto& c : eval::compare_output(*outs[k], m_p.tolerance, it->second, m_truth.oracle.at({t, 0, k}),
                                          m_truth.reference.at({t, 0, k})))
        if (!c.passed && verdict.passed) {
          verdict.passed = false;
          verdict.output = c.output;
          verdict.message = fmt::format("{} ({} there): {}", recheck_where[i], c.name, c.message);
          verdict.detail = {{"check", c.name}, {"where", recheck_where[i]}, {"detail", c.detail}};
        }
    }
    if (seen) m_add(verdict);
  }
}

} // namespace kforge::worker
