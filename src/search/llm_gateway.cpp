#include "search/llm_gateway.hpp"

#include "core/hash.hpp"

namespace kforge::search {

namespace {

// What the ledger's sink needs to know about the call in flight on this thread (the sink
// runs on the thread that made the call, inside complete()).
struct call_context {
  std::optional<int64_t> run_id;
  std::string replay_key, request_hash;
  int64_t* id = nullptr;
};
thread_local call_context t_call;

class config_gateway final : public llm_gateway {
public:
  config_gateway(store::store& db, const llm::llm_config& cfg, llm::budget budget, std::uint64_t seed)
      : m_db(db), m_cfg(cfg), m_seed(seed), m_book(budget), m_router(cfg, &m_book) {
    m_book.set_sink([this](const llm::call_record& r) {
      store::llm_call_record c;
      c.run_id = t_call.run_id;
      c.role = r.role;
      c.provider = r.provider_spec;
      c.model = r.model;
      c.replay_key = t_call.replay_key;
      c.request_hash = t_call.request_hash;
      c.request_json = r.request.dump();
      c.response_text = r.response_text;
      c.stop_reason = r.stop_reason;
      c.response_id = r.response_id;
      c.input_tokens = r.tokens.input_tokens;
      c.output_tokens = r.tokens.output_tokens;
      c.cached_input_tokens = r.tokens.cached_input_tokens;
      c.cache_write_tokens = r.tokens.cache_write_tokens;
      c.cost_usd = r.cost_usd;
      c.duration_s = r.duration_s;
      c.error_kind = r.error_kind;
      c.error_message = r.error_message;
      c.started_at = r.started_at;
      const int64_t id = m_db.put_llm_call(c);
      if (t_call.id) *t_call.id = id;
    });
  }

  llm::response ask(const std::string& role, llm::request req, std::optional<int64_t> run_id,
                    int64_t* call_id) override {
    auto& team = m_router.for_role(role);
    // The model is picked from the call's own name, not from a shared generator, so calls
    // made in parallel pick the same models in every re-run of the search.
    std::mt19937_64 pick(m_seed ^ std::hash<std::string>{}(req.replay_key.empty() ? req.system : req.replay_key));
    const std::size_t i = team.pick_index(pick);
    req = llm::with_defaults(std::move(req), team.entry(i), m_cfg);
    int64_t id = 0;
    t_call = {run_id, req.replay_key, llm::request_hash(req), &id};
    struct reset {
      ~reset() { t_call = {}; }
    } r_;
    auto r = team.at(i).complete(req);
    if (call_id) *call_id = id;
    return r;
  }

  nlohmann::json totals() const override {
    auto t = m_book.totals();
    return {{"calls", t.calls},           {"failed_calls", t.failed_calls}, {"input_tokens", t.input_tokens},
            {"output_tokens", t.output_tokens}, {"cached_input_tokens", t.cached_input_tokens},
            {"cost_usd", t.cost_usd}};
  }

private:
  store::store& m_db;
  llm::llm_config m_cfg;
  std::uint64_t m_seed;
  llm::ledger m_book;
  llm::router m_router;
};

} // namespace

std::shared_ptr<llm_gateway> make_llm_gateway(store::store& db, const llm::llm_config& cfg, llm::budget budget,
                                              std::uint64_t seed, const store::llm_totals& prior) {
  if (budget.max_tokens) *budget.max_tokens = std::max<int64_t>(0, *budget.max_tokens - prior.input_tokens - prior.output_tokens);
  if (budget.max_cost_usd) *budget.max_cost_usd = std::max(0.0, *budget.max_cost_usd - prior.cost_usd);
  llm::require_prices(cfg, budget);
  return std::make_shared<config_gateway>(db, cfg, budget, seed);
}

} // namespace kforge::search
