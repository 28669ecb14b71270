// tune: search the parameters a candidate declares (`// kforge: param`, build/params.hpp)
// by grid, random or model-guided choice; every instance is an ordinary candidate, so the
// session's cache answers any instance judged before.
#include "core/error.hpp"
#include "core/fs.hpp"
#include "build/params.hpp"
#include "search/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <list>
#include <optional>
#include <set>

namespace kforge::search {

namespace {

// Model-guided choice: an additive model of log(time) in the parameters' values, fitted
// to what was measured; the next point is the untried admissible assignment (among
// neighbours of the best few and random draws) it predicts fastest. A value never measured gets an
// optimistic score, so every value is tried before the model trusts itself.
class additive_model {
public:
  void fit(const std::vector<std::pair<build::assignment, double>>& measured) {
    m_effect.clear();
    if (measured.empty()) return;
    double mean = 0;
    for (auto& [a, y] : measured) mean += y;
    mean /= static_cast<double>(measured.size());
    std::map<std::string, std::map<int64_t, std::pair<double, int>>> acc;
    for (auto& [a, y] : measured)
      for (auto& [name, v] : a) {
        auto& cell = acc[name][v];
        cell.first += y - mean;
        ++cell.second;
      }
    for (auto& [name, values] : acc)
      for (auto& [v, cell] : values) m_effect[name][v] = cell.first / cell.second;
  }
  [[nodiscard]] double predict(const build::assignment& a) const {
    double s = 0;
    for (auto& [name, v] : a) {
      auto p = m_effect.find(name);
      if (p == m_effect.end()) continue;
      auto e = p->second.find(v);
      s += e == p->second.end() ? -0.25 : e->second; // untried: assume a little better than average
    }
    return s;
  }

private:
  std::map<std::string, std::map<int64_t, double>> m_effect;
};

std::string with_params(const std::string& label, const build::assignment& a) {
  return label.empty() ? build::to_string(a) : label + " [" + build::to_string(a) + "]";
}

} // namespace

outcome tune_or_evaluate(session& s, const proposal& prop, int budget, const std::string& method) {
  if (!build::declares_params(prop.source)) return s.evaluate(prop);
  build::param_space space;
  build::assignment start;
  try {
    space = build::parse_params(prop.source, prop.label.empty() ? "candidate" : prop.label);
    start = build::defaults(space);
  } catch (const kforge::error& e) {
    outcome o;
    o.status = "invalid_params";
    o.message = e.what();
    o.source = prop.source;
    o.label = prop.label;
    return o;
  }
  // The template itself is a candidate (the parent of its instances), never built as is.
  const int64_t template_id = s.put_candidate(prop);
  auto instance = [&](const build::assignment& a) {
    proposal q = prop;
    q.source = build::instantiate(prop.source, space, a);
    q.origin = "tuner";
    q.label = with_params(prop.label, a);
    q.parent_id = template_id;
    q.step = "tune";
    q.params = nlohmann::json(a);
    return q;
  };

  const std::uint64_t size = space.size();
  std::string how = method;
  if (how == "auto") how = size <= static_cast<std::uint64_t>(std::max(1, budget)) ? "grid" : "model";
  if (how != "grid" && how != "random" && how != "model")
    KFORGE_THROW(usage, "unknown tune method '{}'; use grid, random, model or auto", method);

  std::set<std::string> tried; // submitted, finished or not
  std::vector<outcome> results;
  std::vector<std::pair<build::assignment, double>> measured; // log(median) of passing instances
  std::vector<build::assignment> failed;
  double worst = 0;
  const int left = std::max(1, budget);

  // The next point to try, or none when the space (or the grid) is exhausted. The declared
  // defaults come first: the author's guess is the baseline every other point must beat.
  const auto grid = how == "grid" ? build::grid(space, static_cast<std::size_t>(left)) : std::vector<build::assignment>{};
  std::size_t grid_at = 0;
  additive_model model;
  auto next_point = [&]() -> std::optional<build::assignment> {
    if (how == "grid") {
      while (grid_at < grid.size())
        if (const auto& a = grid[grid_at++]; !tried.count(build::key(a))) return a;
      return std::nullopt;
    }
    if (!tried.count(build::key(start))) return start;
    std::vector<build::assignment> pool;
    if (how == "random" || measured.empty()) {
      pool = build::sample(space, 64, s.rng());
    } else {
      // Failed instances count as slower than the slowest that passed.
      auto data = measured;
      for (auto& a : failed) data.emplace_back(a, worst + 1.0);
      model.fit(data);
      std::vector<std::pair<build::assignment, double>> by_time = measured;
      std::sort(by_time.begin(), by_time.end(), [](auto& x, auto& y) { return x.second < y.second; });
      for (std::size_t i = 0; i < by_time.size() && i < 3; ++i)
        for (auto& n : build::neighbours(space, by_time[i].first)) pool.push_back(n);
      for (auto& a : build::sample(space, 64, s.rng())) pool.push_back(a);
      std::vector<std::pair<double, build::assignment>> ranked;
      for (auto& a : pool)
        if (!tried.count(build::key(a))) ranked.emplace_back(model.predict(a), a);
      std::stable_sort(ranked.begin(), ranked.end(), [](auto& x, auto& y) { return x.first < y.first; });
      pool.clear();
      for (auto& [score, a] : ranked) pool.push_back(a);
    }
    for (auto& a : pool)
      if (!tried.count(build::key(a))) return a;
    return std::nullopt; // a small space, sampled out
  };

  // A sliding window of evaluations in flight, not batches with a barrier: while one
  // instance is timed on the GPU the next ones build (nvcc: seconds), so the GPU waits on
  // no compiler. Each is chosen when a place frees, from everything measured by then.
  struct in_flight {
    proposal prop;
    std::future<outcome> result;
  };
  std::list<in_flight> flying;
  const int window = std::max(1, s.lanes().devices()) + 2;
  bool spent = false; // an evaluation came back not run: the budget is spent
  std::exception_ptr first_error;
  auto take = [&](in_flight& f) {
    try {
      auto o = f.result.get();
      if (o.status == "not_run") {
        spent = true;
        return;
      }
      const auto a = f.prop.params.get<build::assignment>();
      if (o.passed()) {
        const double y = std::log(*o.median_s);
        worst = measured.empty() ? y : std::max(worst, y);
        measured.emplace_back(a, y);
      } else {
        failed.push_back(a);
      }
      results.push_back(std::move(o));
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  };
  for (;;) {
    while (!spent && !first_error && static_cast<int>(flying.size()) < window &&
           static_cast<int>(tried.size()) < left && !s.stop_reason()) {
      const auto a = next_point();
      if (!a) break;
      tried.insert(build::key(*a));
      auto& f = flying.emplace_back(in_flight{instance(*a), {}});
      f.result = std::async(std::launch::async, [&s, &f] { return s.evaluate(f.prop); });
    }
    if (flying.empty()) break;
    // The first to finish, whichever it is (with several GPUs they finish out of order).
    auto done = flying.end();
    while (done == flying.end()) {
      for (auto it = flying.begin(); it != flying.end() && done == flying.end(); ++it)
        if (it->result.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready) done = it;
      if (done == flying.end()) flying.front().result.wait_for(std::chrono::milliseconds(5));
    }
    take(*done);
    flying.erase(done);
  }
  if (first_error) std::rethrow_exception(first_error);

  // The fastest passing instance; else the first failure, so the caller sees why.
  const outcome* best = nullptr;
  for (auto& o : results)
    if (o.passed() && (!best || *o.median_s < *best->median_s)) best = &o;
  if (!best && !results.empty()) best = &results.front();
  if (!best) {
    outcome o;
    o.status = "not_run";
    o.message = "the evaluation budget was spent before any instance ran";
    o.source = prop.source;
    o.label = prop.label;
    return o;
  }
  outcome out = *best;
  out.message = fmt::format("{} (tuned: {} instances by {}, {} passed)", out.message, results.size(), how,
                            measured.size());
  return out;
}

outcome start_from_seed(session& s, int budget) {
  const auto& p = s.problem();
  // A [torch] problem's reference is Python: with no seed, the first candidate is the
  // LLM's, written from the module's source (which every prompt carries).
  if (p.torch && !p.seed)
    return outcome{.status = "not_run",
                   .message = "no seed: the first candidate is written from the PyTorch module's source"};
  const auto path = p.seed ? *p.seed : p.reference;
  proposal prop{.source = read_file(path), .origin = p.seed ? "seed" : "reference",
                .label = path.filename().string(), .step = "seed", .round = 0};
  return tune_or_evaluate(s, prop, budget, s.options().tune_method);
}

// The tune strategy: the seed's parameters, with the whole evaluation budget.
class tune_strategy final : public strategy {
public:
  void run(session& s) override {
    const auto& p = s.problem();
    if (p.torch && !p.seed)
      KFORGE_THROW(usage, "{}: a [torch] problem without a seed has nothing to tune (its reference is a PyTorch "
                          "module): write seed.{} beside problem.toml, or configure an LLM for refine or branch",
                   p.toml_path.string(), p.backend == problem::backend_kind::cuda ? "cu" : "cpp");
    const auto path = p.seed ? *p.seed : p.reference;
    const auto source = read_file(path);
    if (!build::declares_params(source))
      s.emit({{"event", "note"},
              {"message", fmt::format("{} declares no tunable parameters (// kforge: param, docs/candidates.md): "
                                      "judging it once; configure an LLM for refine or branch",
                                      path.filename().string())}});
    const int budget = s.options().max_evaluations > 0 ? s.options().max_evaluations : 64;
    (void)start_from_seed(s, budget);
    s.end_round(0, "tuned the seed");
  }
};

std::unique_ptr<strategy> make_tune_strategy() { return std::make_unique<tune_strategy>(); }

} // namespace kforge::search
