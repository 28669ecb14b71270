#include "search/llm_gateway.hpp"

#include "core/hash.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

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
      c.usage_source = r.tokens.estimated ? "estimated" : "reported";
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
    // A cut stream (a server that ended it without a finish reason, or went silent part-way)
    // is recorded with what arrived, then asked again: each attempt is a call of its own.
    for (int attempt = 1;; ++attempt) {
      int64_t id = 0;
      t_call = {run_id, req.replay_key, llm::request_hash(req), &id};
      struct reset {
        ~reset() { t_call = {}; }
      } r_;
      const int64_t key = m_next_stream++;
      progress_begin(key);
      struct end_progress {
        config_gateway* g;
        int64_t key;
        ~end_progress() { g->progress_end(key); }
      } p_{this, key};
      try {
        auto r = team.at(i).complete(req, [&](std::string_view t) { progress_add(key, t.size()); });
        if (call_id) *call_id = id;
        return r;
      } catch (const llm::error& e) {
        const bool cut = e.kind() == llm::error_kind::truncated ||
                         (!e.partial_text().empty() &&
                          (e.kind() == llm::error_kind::timeout || e.kind() == llm::error_kind::network));
        if (!cut || attempt >= k_cut_attempts) {
          if (call_id) *call_id = id; // the failed call's row, for the proposal that names it
          throw;
        }
        emit({{"event", "note"},
              {"message", fmt::format("{} call cut short ({}); asking again ({} of {})", role,
                                      std::string(e.what()).substr(0, 200), attempt + 1, k_cut_attempts)}});
      }
    }
  }

  void set_event_sink(event_sink sink) override {
    std::lock_guard lock(m_progress_mu);
    m_events = std::move(sink);
  }

  nlohmann::json totals() const override {
    auto t = m_book.totals();
    return {{"calls", t.calls},           {"failed_calls", t.failed_calls}, {"input_tokens", t.input_tokens},
            {"output_tokens", t.output_tokens}, {"cached_input_tokens", t.cached_input_tokens},
            {"cost_usd", t.cost_usd},     {"estimated_calls", t.estimated_calls}};
  }

private:
  static constexpr int k_cut_attempts = 3;

  struct stream_state {
    std::chrono::steady_clock::time_point started;
    std::size_t bytes = 0;
  };

  void emit(const nlohmann::json& e) {
    std::lock_guard lock(m_progress_mu);
    if (m_events) m_events(e);
  }
  void progress_begin(int64_t key) {
    std::lock_guard lock(m_progress_mu);
    m_streams[key] = {std::chrono::steady_clock::now(), 0};
  }
  void progress_end(int64_t key) {
    std::lock_guard lock(m_progress_mu);
    m_streams.erase(key);
  }
  // Text arriving: at most one "llm_progress" event a second, over every call streaming.
  // Tokens are estimated (llm::estimate_tokens): the server's own count comes only at the
  // end, if at all.
  void progress_add(int64_t key, std::size_t bytes) {
    std::lock_guard lock(m_progress_mu);
    auto it = m_streams.find(key);
    if (it == m_streams.end()) return;
    it->second.bytes += bytes;
    const auto now = std::chrono::steady_clock::now();
    if (!m_events || now - m_last_progress < std::chrono::seconds(1)) return;
    m_last_progress = now;
    double rate = 0, oldest = 0;
    int64_t tokens = 0;
    for (const auto& [k, st] : m_streams) {
      const double s = std::chrono::duration<double>(now - st.started).count();
      const int64_t t = llm::estimate_tokens(st.bytes);
      tokens += t;
      if (s > 0) rate += t / s;
      oldest = std::max(oldest, s);
    }
    m_events({{"event", "llm_progress"}, {"calls", m_streams.size()}, {"tokens", tokens},
              {"tokens_per_s", std::round(rate * 10) / 10}, {"elapsed_s", std::round(oldest)}});
  }

  store::store& m_db;
  llm::llm_config m_cfg;
  std::uint64_t m_seed;
  llm::ledger m_book;
  llm::router m_router;
  std::mutex m_progress_mu;
  event_sink m_events;
  std::map<int64_t, stream_state> m_streams;
  std::atomic<int64_t> m_next_stream{0};
  std::chrono::steady_clock::time_point m_last_progress{};
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
