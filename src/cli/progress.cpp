#include "cli/progress.hpp"

#include "cli/format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kforge::cli {

void phase_printer::operator()(std::string_view phase, std::optional<double> seconds) {
  if (!seconds) { // started: only a terminal shows what runs now (it is overwritten below)
    if (m_terminal) m_out << fmt::format("\r\033[K  {:<8} ...", phase) << std::flush;
    return;
  }
  m_out << (m_terminal ? "\r\033[K" : "") << fmt::format("  {:<8} {}\n", phase, format_seconds(*seconds))
        << std::flush;
}

std::optional<double> eta_s(const budget_use& u) {
  std::optional<double> best;
  auto consider = [&](double left) {
    left = std::max(0.0, left);
    if (!best || left < *best) best = left;
  };
  // A budget spent at the pace so far: elapsed * (limit / used - 1).
  auto pace = [&](double used, double limit) {
    if (limit > 0 && used > 0 && u.elapsed_s > 0) consider(u.elapsed_s * (limit / used - 1));
  };
  pace(u.evaluations, u.max_evaluations);
  pace(static_cast<double>(u.tokens), static_cast<double>(u.max_tokens));
  pace(u.cost_usd, u.max_cost_usd);
  if (u.max_rounds > 0 && u.rounds > 0 && u.rounds_at_s > 0)
    consider(u.rounds_at_s * u.max_rounds / u.rounds - u.elapsed_s);
  if (u.max_wall_s > 0) consider(u.max_wall_s - u.elapsed_s);
  return best;
}

std::string format_duration(double s) {
  const long t = std::lround(std::max(0.0, s));
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

search_ticker::search_ticker(const search::search_options& o) {
  m_use.max_evaluations = o.max_evaluations;
  m_use.max_tokens = o.max_tokens;
  m_use.max_cost_usd = o.max_cost_usd;
  m_use.max_wall_s = o.max_wall_s;
  m_use.max_rounds = o.max_rounds;
}

std::optional<std::string> search_ticker::on_event(const nlohmann::json& e) {
  const std::string kind = e.value("event", "");
  m_use.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  if (kind == "round") { // the run's own totals, as the session counts them
    m_use.tokens = e.value("tokens", int64_t{0});
    m_use.cost_usd = e.value("cost_usd", 0.0);
    if (e.value("round", 0) > m_use.rounds) {
      m_use.rounds = e.value("round", 0);
      m_use.rounds_at_s = m_use.elapsed_s;
    }
    m_use.evaluations = std::max(m_use.evaluations, e.value("evaluations", 0));
    return std::nullopt;
  }
  if (kind == "llm_call") {
    m_use.tokens += e.value("input_tokens", int64_t{0}) + e.value("output_tokens", int64_t{0});
    return std::nullopt;
  }
  if (kind == "best") {
    if (e["median_s"].is_number()) m_best_s = e["median_s"].get<double>();
    if (e["speedup"].is_number()) m_best_speedup = e["speedup"].get<double>();
    return std::nullopt;
  }
  if (kind != "evaluation" || e.value("status", "") == "not_run") return std::nullopt;
  ++m_use.evaluations;
  std::string line = m_use.max_evaluations > 0 ? fmt::format("  evals {}/{}", m_use.evaluations, m_use.max_evaluations)
                                               : fmt::format("  evals {}", m_use.evaluations);
  line += m_best_s ? fmt::format("  best {}", format_seconds(*m_best_s)) : std::string("  best -");
  if (m_best_speedup) line += fmt::format(" {:.2f}x", *m_best_speedup);
  if (m_use.tokens > 0)
    line += m_use.tokens >= 10'000 ? fmt::format("  tokens {:.1f}k", m_use.tokens / 1e3) : fmt::format("  tokens {}", m_use.tokens);
  if (m_use.cost_usd > 0) line += fmt::format("  ${:.2f}", m_use.cost_usd);
  line += "  " + format_duration(m_use.elapsed_s);
  if (auto eta = eta_s(m_use)) line += "  ETA ~" + format_duration(*eta);
  return line;
}

} // namespace kforge::cli
