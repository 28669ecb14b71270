#pragma once
// What long commands show while they run: `kforge eval`'s phases as they happen, and
// `kforge optimize`'s line per evaluation (best so far, evaluations, tokens, cost, the time
// left against the budget). On a terminal the line is rewritten in place; to a file or a
// pipe each is a plain line; --json output never comes here.
//   cli::phase_printer show(std::cerr, isatty(2));  eo.observer.on_phase = show.callback();
//   cli::search_ticker t(opts);  if (auto line = t.on_event(e)) std::cout << *line;
#include "search/options.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace kforge::cli {

/// Prints "  build    1.23 s" as each evaluation phase ends (and, on a terminal, the phase
/// running now, overwritten when it ends).
class phase_printer {
public:
  phase_printer(std::ostream& out, bool terminal) : m_out(out), m_terminal(terminal) {}
  void operator()(std::string_view phase, std::optional<double> seconds);
  [[nodiscard]] std::function<void(std::string_view, std::optional<double>)> callback() {
    return [this](std::string_view p, std::optional<double> s) { (*this)(p, s); };
  }

private:
  std::ostream& m_out;
  bool m_terminal;
};

/// How much of a run's budget is used, and what is allowed (0: no limit).
struct budget_use {
  double elapsed_s = 0;
  int evaluations = 0, max_evaluations = 0;
  int64_t tokens = 0, max_tokens = 0;
  double cost_usd = 0, max_cost_usd = 0;
  double max_wall_s = 0;
  int rounds = 0, max_rounds = 0; // LLM rounds done (round 0, the seed's, not counted)
  double rounds_at_s = 0;          // elapsed when the last of those rounds ended
};

/// Seconds until the first budget runs out at the pace so far: the soonest over the budgets
/// that are set. nullopt when none is set or nothing has been spent yet.
///   {elapsed 10 s, 5 of 40 evaluations} -> 70 s;   {elapsed 10 s, wall 60 s} -> 50 s
/// Rounds are paced from when the last one ended, so the estimate falls during a round:
///   {elapsed 40 s, 1 of 2 rounds ended at 30 s} -> 20 s
[[nodiscard]] std::optional<double> eta_s(const budget_use& u);

/// "1m05s", "42s", "2h03m".
[[nodiscard]] std::string format_duration(double s);

/// Follows kforge.optimize-event/1 events and says where the run stands after each
/// evaluation: "  evals 7/40  best 17.66 ms 1.90x  tokens 15.5k  $0.02  0m25s  ETA ~1m10s".
class search_ticker {
public:
  explicit search_ticker(const search::search_options& o);
  /// The line to show after this event, or nullopt (the event moves no counter shown).
  [[nodiscard]] std::optional<std::string> on_event(const nlohmann::json& e);
  [[nodiscard]] const budget_use& use() const { return m_use; }

private:
  budget_use m_use;
  std::optional<double> m_best_s, m_best_speedup;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
};

} // namespace kforge::cli
