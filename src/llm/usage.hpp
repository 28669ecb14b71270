#pragma once
// What LLM calls cost, and the run's budget for them: every call through a `metered`
// provider is checked against the `ledger`'s budget before it starts, and recorded in the
// ledger (running totals, and one call_record handed to the ledger's sink) when it ends.
//   llm::ledger book({.max_cost_usd = 20.0});
//   book.set_sink([&](const llm::call_record& r) { /* e.g. write it to the database */ });
//   llm::metered m(*inner, "ideas", llm::price_for(cfg, inner->spec()), book);
//   llm::response r = m.complete(req);  // throws llm::error (budget) once $20 are spent
//
// Budgets are checked before each call, not during it: with N calls in flight when the
// budget runs out, those N still finish and are counted, so the spend can overshoot the
// budget by at most what the calls already in flight cost (calls queued for an endpoint
// slot count as in flight: they were checked before queueing). No call starts after that.
// Tokens, for the token budget, are input_tokens + output_tokens (cached input included).
#include "llm/message.hpp"
#include "llm/provider.hpp"

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kforge::llm {

struct llm_config; // config.hpp

/// USD per million tokens. A negative cached_input or cache_write means "same as input".
struct price {
  double input = 0;
  double output = 0;
  double cached_input = -1; // prompt-cache reads (OpenAI cached_tokens, Anthropic cache_read)
  double cache_write = -1;  // prompt-cache writes (Anthropic cache_creation)
};

/// (uncached * input + cached * cached_input + cache_write * cache_write + output * output) / 1e6,
/// where uncached = input_tokens - cached_input_tokens - cache_write_tokens (input_tokens
/// counts both, message.hpp); uncached is taken as 0 if a provider reports less.
[[nodiscard]] double cost_usd(const usage& u, const price& p);

/// The price of a model spec: cfg.prices[spec]; a zero price for "replay:..." (replayed
/// calls cost nothing); nullopt when the spec has no [llm.prices."SPEC"] table.
[[nodiscard]] std::optional<price> price_for(const llm_config& cfg, std::string_view spec);

struct budget {
  std::optional<int64_t> max_tokens;  // input + output tokens over the whole run
  std::optional<double> max_cost_usd; // over the whole run
};

/// Startup check: with a cost budget set, every model a role uses (its [llm.roles] list,
/// else the default models; replay excepted) must have a price, or the budget could not
/// be enforced.
/// @throws kforge::error (usage) naming each model without a price and the
///         [llm.prices."SPEC"] table to add.
void require_prices(const llm_config& cfg, const budget& b);

/// Tokens in `bytes` of text by kforge's one rule of thumb: about four bytes a token (English
/// prose and code with common BPE vocabularies). Every estimate kforge shows uses it.
[[nodiscard]] int64_t estimate_tokens(std::size_t bytes);

/// Counts for a call whose server sent none, by estimate_tokens: the prompt from the system
/// and message texts. Marked `estimated`; budgets spend it like reported counts.
[[nodiscard]] usage estimate_usage(const request& req, std::string_view answer);

/// One finished LLM call, successful or not.
struct call_record {
  std::string role;           // ideas, code, fix, ...
  std::string provider_spec;  // provider::spec(), e.g. "anthropic:claude-sonnet-4-5" (no key)
  std::string model;          // the model that answered (else the one asked for)
  nlohmann::json request;     // llm::to_json(request): messages and settings, never a key
  std::string response_text, stop_reason, response_id;
  usage tokens;                   // zero for a failed call
  std::optional<double> cost_usd; // nullopt when the model has no price
  double duration_s = 0;
  std::string error_kind, error_message; // empty on success; error_kind_name() otherwise
  std::string started_at;                // ISO-8601 UTC, e.g. "2026-01-31T12:00:00.123Z"
};

struct ledger_totals {
  int64_t calls = 0;        // finished calls, failed ones included
  int64_t failed_calls = 0;
  int64_t input_tokens = 0; // whole prompts, cached or not
  int64_t output_tokens = 0;
  int64_t cached_input_tokens = 0;
  int64_t cache_write_tokens = 0;
  double cost_usd = 0;        // of the calls whose model has a price
  int64_t unpriced_calls = 0; // successful calls whose cost is unknown (no price)
  int64_t estimated_calls = 0; // calls whose tokens were estimated (usage::estimated)
  [[nodiscard]] int64_t tokens() const { return input_tokens + output_tokens; }
};

/// The run's budget and spend. Thread-safe: any number of calls may check() and add() at once.
class ledger {
public:
  using sink = std::function<void(const call_record&)>;

  explicit ledger(llm::budget b = {}, sink s = {}) : m_budget(b), m_sink(std::move(s)) {}
  ledger(const ledger&) = delete;
  ledger& operator=(const ledger&) = delete;

  /// Called once per record, after the totals include it. Calls are serialised (never two
  /// at once) and made on the thread that finished the LLM call. An exception from the sink
  /// propagates to the caller of add().
  void set_sink(sink s);

  /// @throws llm::error (budget, not retryable) when the spent tokens >= max_tokens or the
  ///         spent cost >= max_cost_usd; the message says which budget, what was spent, and
  ///         how to raise it. `role` is the role about to call, for the message.
  void check(std::string_view role) const;

  /// Adds the record to the totals, then hands it to the sink.
  void add(const call_record& r);

  [[nodiscard]] ledger_totals totals() const;
  [[nodiscard]] const llm::budget& limits() const { return m_budget; }

private:
  const llm::budget m_budget;
  mutable std::mutex m_mu; // guards m_totals
  ledger_totals m_totals;
  std::mutex m_sink_mu;    // guards m_sink and serialises its calls
  sink m_sink;
};

/// A provider that checks the budget before each call and records each call in a ledger.
/// Does not own `inner` or `book`; both must outlive it.
class metered final : public provider {
public:
  /// @param p the model's price; nullopt records the cost as unknown.
  metered(provider& inner, std::string role, std::optional<price> p, ledger& book)
      : m_inner(inner), m_role(std::move(role)), m_price(p), m_book(book) {}

  /// ledger.check(role), then the inner call. On success, records tokens and cost; on an
  /// llm::error, records the failed call (its kind and message, zero tokens) and rethrows.
  /// @throws llm::error (budget) without calling the inner provider when the budget is spent.
  response complete(const request& req, const text_callback& on_text_delta = {}) override;
  std::string spec() const override { return m_inner.spec(); }
  [[nodiscard]] const std::string& role() const { return m_role; }

private:
  provider& m_inner;
  std::string m_role;
  std::optional<price> m_price;
  ledger& m_book;
};

} // namespace kforge::llm
