#include "llm/usage.hpp"

#include "core/error.hpp"
#include "llm/config.hpp"
#include "llm/retry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

namespace kforge::llm {

namespace {

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

/// The model part of "scheme:model".
std::string model_of(const std::string& spec) {
  const auto colon = spec.find(':');
  return colon == std::string::npos ? spec : spec.substr(colon + 1);
}

} // namespace

double cost_usd(const usage& u, const price& p) {
  const double cached_rate = p.cached_input < 0 ? p.input : p.cached_input;
  const double write_rate = p.cache_write < 0 ? p.input : p.cache_write;
  const int64_t uncached = std::max<int64_t>(0, u.input_tokens - u.cached_input_tokens - u.cache_write_tokens);
  return (static_cast<double>(uncached) * p.input + static_cast<double>(u.cached_input_tokens) * cached_rate +
          static_cast<double>(u.cache_write_tokens) * write_rate + static_cast<double>(u.output_tokens) * p.output) /
         1e6;
}

std::optional<price> price_for(const llm_config& cfg, std::string_view spec) {
  if (spec.starts_with("replay:")) return price{0, 0, 0, 0};
  if (auto it = cfg.prices.find(std::string(spec)); it != cfg.prices.end()) return it->second;
  return std::nullopt;
}

void require_prices(const llm_config& cfg, const budget& b) {
  if (!b.max_cost_usd) return;
  std::set<std::string> missing;
  auto scan = [&](const std::vector<model_entry>& models) {
    for (const auto& m : models)
      if (!price_for(cfg, m.spec)) missing.insert(m.spec);
  };
  for (std::string_view role : k_llm_roles) { // the models the roles use (router's rule)
    const auto own = cfg.roles.find(std::string(role));
    scan(own != cfg.roles.end() ? own->second : cfg.models);
  }
  if (missing.empty()) return;
  std::string tables;
  for (const auto& s : missing)
    tables += fmt::format("\n  [llm.prices.\"{}\"]\n  input = ...   # USD per million input tokens\n  output = ...", s);
  KFORGE_THROW(usage,
               "{}: a cost budget (max_cost_usd = {}) is set, but {} {} no price, so its cost could not be "
               "counted; add to kforge.toml:{}\n(a local model may be priced at 0), or drop the cost budget",
               cfg.source.empty() ? std::string("llm config") : cfg.source.string(), *b.max_cost_usd,
               missing.size() == 1 ? "this model" : "these models", missing.size() == 1 ? "has" : "have", tables);
}

void ledger::set_sink(sink s) {
  std::lock_guard lock(m_sink_mu);
  m_sink = std::move(s);
}

void ledger::check(std::string_view role) const {
  ledger_totals t;
  {
    std::lock_guard lock(m_mu);
    t = m_totals;
  }
  if (m_budget.max_tokens && t.tokens() >= *m_budget.max_tokens)
    throw error(error_kind::budget,
                fmt::format("llm: the token budget is spent: {} tokens (input + output) used of max_tokens = {}, "
                            "over {} calls; no further LLM call is made (role '{}' asked for one). To continue, "
                            "raise max_tokens in the [llm.budget] table of kforge.toml",
                            t.tokens(), *m_budget.max_tokens, t.calls, role));
  if (m_budget.max_cost_usd && t.cost_usd >= *m_budget.max_cost_usd)
    throw error(error_kind::budget,
                fmt::format("llm: the cost budget is spent: ${:.4f} used of max_cost_usd = {}, over {} calls; no "
                            "further LLM call is made (role '{}' asked for one). To continue, raise max_cost_usd "
                            "in the [llm.budget] table of kforge.toml",
                            t.cost_usd, *m_budget.max_cost_usd, t.calls, role));
}

void ledger::add(const call_record& r) {
  {
    std::lock_guard lock(m_mu);
    ++m_totals.calls;
    if (!r.error_kind.empty()) ++m_totals.failed_calls;
    m_totals.input_tokens += r.tokens.input_tokens;
    m_totals.output_tokens += r.tokens.output_tokens;
    m_totals.cached_input_tokens += r.tokens.cached_input_tokens;
    m_totals.cache_write_tokens += r.tokens.cache_write_tokens;
    if (r.tokens.estimated) ++m_totals.estimated_calls;
    if (r.cost_usd) m_totals.cost_usd += *r.cost_usd;
    else if (r.error_kind.empty()) ++m_totals.unpriced_calls;
  }
  std::lock_guard lock(m_sink_mu);
  if (m_sink) m_sink(r);
}

ledger_totals ledger::totals() const {
  std::lock_guard lock(m_mu);
  return m_totals;
}

int64_t estimate_tokens(std::size_t bytes) { return static_cast<int64_t>((bytes + 3) / 4); }

usage estimate_usage(const request& req, std::string_view answer) {
  std::size_t prompt = req.system.size();
  for (auto& m : req.messages) prompt += m.text.size();
  usage u;
  u.input_tokens = estimate_tokens(prompt);
  u.output_tokens = estimate_tokens(answer.size());
  u.estimated = true;
  return u;
}

response metered::complete(const request& req, const text_callback& on_text_delta) {
  m_book.check(m_role);
  call_record rec;
  rec.role = m_role;
  rec.provider_spec = m_inner.spec();
  rec.model = req.model.empty() ? model_of(rec.provider_spec) : req.model;
  rec.request = to_json(req);
  rec.started_at = utc_now_iso8601();
  const auto t0 = std::chrono::steady_clock::now();
  reset_slot_wait_this_thread();
  // The call's own time: its wait for a free slot at the endpoint is the queue's, not the server's.
  auto seconds = [&] {
    return std::max(0.0, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() -
                             slot_wait_s_this_thread());
  };
  response r;
  try {
    r = m_inner.complete(req, on_text_delta);
  } catch (const error& e) {
    rec.duration_s = seconds();
    rec.error_kind = std::string(error_kind_name(e.kind()));
    rec.error_message = e.what();
    // Part of an answer arrived before the failure: the server spent those tokens.
    if (!e.partial_text().empty()) {
      rec.response_text = e.partial_text();
      rec.tokens = estimate_usage(req, e.partial_text());
    }
    if (m_price) rec.cost_usd = rec.tokens.estimated ? cost_usd(rec.tokens, *m_price) : 0.0;
    m_book.add(rec);
    throw;
  }
  rec.duration_s = seconds();
  if (!r.model.empty()) rec.model = r.model;
  rec.response_text = r.text;
  rec.stop_reason = r.stop_reason;
  rec.response_id = r.id;
  // A server that sent no counts must not make the call free: the budget would never end a run.
  if (r.usage.input_tokens == 0 && r.usage.output_tokens == 0) r.usage = estimate_usage(req, r.text);
  rec.tokens = r.usage;
  if (m_price) rec.cost_usd = cost_usd(r.usage, *m_price);
  m_book.add(rec);
  return r;
}

} // namespace kforge::llm
