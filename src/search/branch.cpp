// branch (after Stanford CRFM's KernelBench search): each round one call writes N ideas in
// natural language, conditioned on every idea tried so far and what it measured; each idea
// is implemented B times in parallel (on the best K candidates, round-robin); the best K of
// everything seed the next round. Ideas and their outcomes are stored and shown.
#include "search/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>

namespace kforge::search {

namespace {

class branch_strategy final : public strategy {
public:
  void run(session& s) override {
    propose::prompt_builder prompts;
    prompts.use_dialect(s.options().dialect);
    const auto dev = device_facts_of(s);
    const auto& p = s.problem();
    const auto& opt = s.options();
    std::vector<outcome> parents;
    auto seed = start_from_seed(s, opt.tune_budget);
    if (seed.passed()) parents.push_back(seed);
    s.end_round(0, "seed");
    if (parents.empty()) {
      s.emit({{"event", "note"}, {"message", "the seed did not pass: " + seed.message + "; branching from it anyway"}});
      parents.push_back(seed);
    }
    std::vector<propose::idea_outcome> tried;
    for (int round = 1; !s.stop_reason(); ++round) {
      auto req = prompts.ideas(p, dev, ref_of(parents.front()), tried, opt.ideas);
      req.replay_key = fmt::format("branch/r{}/ideas", round);
      int64_t call_id = 0;
      llm::response answer;
      try {
        answer = s.ask("ideas", req, &call_id);
      } catch (const llm::error& e) {
        if (e.kind() == llm::error_kind::budget || llm::ends_the_run(e)) throw;
        s.emit({{"event", "note"}, {"message", fmt::format("round {}: the ideas call failed: {}", round, e.what())}});
        s.end_round(round, "ideas call failed");
        continue;
      }
      auto ideas = propose::parse_ideas(answer.text, opt.ideas);
      if (ideas.empty()) {
        s.emit({{"event", "note"}, {"message", fmt::format("round {}: no numbered ideas in the answer", round)}});
        s.end_round(round, "no ideas");
        continue;
      }
      std::vector<int64_t> idea_ids;
      for (auto& i : ideas)
        idea_ids.push_back(s.put_idea(round, i.title, i.body, call_id ? std::optional<int64_t>(call_id) : std::nullopt));

      // Every implementation at once: LLM calls in flight together, builds on all cores,
      // the session's lanes serialising device work.
      std::vector<std::future<outcome>> jobs; // idea i's b-th at i * b_count + b
      const int b_count = std::max(1, opt.implementations);
      for (std::size_t i = 0; i < ideas.size(); ++i)
        for (int b = 0; b < b_count; ++b) {
          const outcome& parent = parents[(i * b_count + b) % parents.size()];
          auto ireq = prompts.implement_idea(p, dev, ref_of(parent), ideas[i].text());
          ireq.replay_key = fmt::format("branch/r{}/idea{}/impl{}", round, i + 1, b + 1);
          const std::string label = fmt::format("r{} idea {} #{}", round, i + 1, b + 1);
          jobs.push_back(std::async(std::launch::async, [&s, ireq, &parent, round, id = idea_ids[i], label] {
            return propose_and_judge(s, ireq, "code", &parent, "idea", round, id, label);
          }));
        }
      const std::vector<outcome> results = wait_all(jobs);
      std::vector<std::vector<const outcome*>> by_idea(ideas.size());
      for (std::size_t k = 0; k < results.size(); ++k) by_idea[k / b_count].push_back(&results[k]);

      // What each idea came to, for the next round's prompt and for `kforge show run`.
      for (std::size_t i = 0; i < ideas.size(); ++i) {
        const outcome* top = nullptr;
        for (auto* o : by_idea[i])
          if (o->passed() && (!top || *o->median_s < *top->median_s)) top = o;
        propose::idea_outcome io{.idea = ideas[i].text()};
        if (top) {
          io.speedup = top->speedup;
          io.outcome = top->speedup ? fmt::format("{:.2f}x the reference", *top->speedup) : "passed";
        } else {
          io.outcome = "failed: " + (by_idea[i].empty() ? std::string("not run") : by_idea[i].front()->status);
        }
        tried.push_back(io);
      }

      // The best K of parents and this round's passing candidates seed the next round.
      std::vector<outcome> pool;
      for (auto& o : parents)
        if (o.passed()) pool.push_back(o);
      for (auto& o : results)
        if (o.passed()) pool.push_back(o);
      std::stable_sort(pool.begin(), pool.end(), [](const outcome& a, const outcome& b) { return *a.median_s < *b.median_s; });
      std::vector<outcome> next;
      for (auto& o : pool) {
        if (static_cast<int>(next.size()) >= std::max(1, opt.keep)) break;
        bool dup = false;
        for (auto& n : next) dup = dup || n.candidate_id == o.candidate_id;
        if (!dup) next.push_back(o);
      }
      if (!next.empty()) parents = std::move(next);
      s.end_round(round);
    }
  }
};

} // namespace

std::unique_ptr<strategy> make_branch_strategy() { return std::make_unique<branch_strategy>(); }

} // namespace kforge::search
