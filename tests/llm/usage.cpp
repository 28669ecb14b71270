// Cost of a call, the run's budget, and the metered provider that records every call.
#include "core/error.hpp"
#include "llm/config.hpp"
#include "llm/replay.hpp"
#include "llm/usage.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>
#include <unistd.h>

using namespace kforge::llm;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Answers with fixed usage, or throws the error it is given; counts its calls.
class fake_provider final : public provider {
public:
  explicit fake_provider(std::string spec) : m_spec(std::move(spec)) {}
  response complete(const request& req, const text_callback& on_text_delta) override {
    ++calls;
    if (fail) throw *fail;
    response r{.text = "answer to " + req.messages.at(0).text, .stop_reason = "end_turn", .usage = answer_usage,
               .model = "claude-sonnet-4-5-20250929", .id = "msg_1"};
    if (on_text_delta) on_text_delta(r.text);
    return r;
  }
  std::string spec() const override { return m_spec; }

  usage answer_usage{1000, 200, 0, 0};
  std::optional<error> fail;
  int calls = 0;

private:
  std::string m_spec;
};

request ask(std::string text) { return request{.system = "sys", .messages = {{role::user, std::move(text)}}, .max_tokens = 64}; }

call_record spent(int64_t in, int64_t out, std::optional<double> cost) {
  call_record r;
  r.role = "code";
  r.tokens = {in, out, 0, 0};
  r.cost_usd = cost;
  return r;
}

} // namespace

TEST(cost, openai_like_cached_prompt) {
  // gpt-5-mini-like: $1.25 in, $0.125 cached in, $10 out. 10,000 prompt tokens of which
  // 8,000 came from the cache, 500 out: 2,000 * 1.25 + 8,000 * 0.125 + 500 * 10 = 8,500 micro-USD.
  const price p{.input = 1.25, .output = 10, .cached_input = 0.125};
  EXPECT_NEAR(cost_usd({.input_tokens = 10'000, .output_tokens = 500, .cached_input_tokens = 8'000}, p), 0.0085, 1e-12);
}

TEST(cost, anthropic_like_cache_write_and_read) {
  // Sonnet-like: $3 in, $0.30 cache read, $3.75 cache write, $15 out. Anthropic reports
  // input 1,200 + cache_creation 5,000 + cache_read 20,000; usage.input_tokens is their sum.
  const price p{.input = 3, .output = 15, .cached_input = 0.30, .cache_write = 3.75};
  const usage u{.input_tokens = 26'200, .output_tokens = 1'000, .cached_input_tokens = 20'000, .cache_write_tokens = 5'000};
  // 1,200 * 3 + 20,000 * 0.3 + 5,000 * 3.75 + 1,000 * 15 = 3,600 + 6,000 + 18,750 + 15,000
  EXPECT_NEAR(cost_usd(u, p), 0.04335, 1e-12);
}

TEST(cost, unset_cache_prices_mean_the_input_price) {
  const price p{.input = 2, .output = 8};
  EXPECT_NEAR(cost_usd({.input_tokens = 1'000, .output_tokens = 100, .cached_input_tokens = 400, .cache_write_tokens = 100}, p),
              (1'000 * 2 + 100 * 8) / 1e6, 1e-12);
  EXPECT_EQ(cost_usd({}, p), 0);
  // A provider reporting more cached than total input: the uncached part is taken as 0, not negative.
  EXPECT_NEAR(cost_usd({.input_tokens = 10, .cached_input_tokens = 50}, {.input = 1, .cached_input = 0.5}), 25 / 1e6, 1e-15);
}

TEST(cost, replay_is_free_and_unknown_models_have_no_price) {
  llm_config c;
  c.prices["openai:a"] = {.input = 1, .output = 2};
  EXPECT_EQ(price_for(c, "openai:a")->output, 2);
  EXPECT_FALSE(price_for(c, "openai:b"));
  const auto r = price_for(c, "replay:run.jsonl");
  ASSERT_TRUE(r);
  EXPECT_EQ(cost_usd({.input_tokens = 1000, .output_tokens = 1000}, *r), 0);
}

TEST(require_prices, a_cost_budget_needs_a_price_for_every_model_in_use) {
  llm_config c;
  c.models = {{.spec = "anthropic:claude-sonnet-4-5"}, {.spec = "replay:old.jsonl"}};
  c.roles["fix"] = {{.spec = "openai:gpt-5-mini"}};
  c.prices["anthropic:claude-sonnet-4-5"] = {.input = 3, .output = 15};
  c.source = "kforge.toml";
  EXPECT_NO_THROW(require_prices(c, {}));                        // no cost budget: nothing to enforce
  EXPECT_NO_THROW(require_prices(c, {.max_tokens = 1'000'000})); // tokens need no price
  try {
    require_prices(c, {.max_cost_usd = 5});
    FAIL() << "expected a missing-price error";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), kforge::error_kind::usage);
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "kforge.toml")) << m;
    EXPECT_TRUE(contains(m, "[llm.prices.\"openai:gpt-5-mini\"]")) << m;
    EXPECT_FALSE(contains(m, "claude-sonnet")) << m; // priced
    EXPECT_FALSE(contains(m, "replay:")) << m;       // free
  }
  c.prices["openai:gpt-5-mini"] = {.input = 0.25, .output = 2};
  EXPECT_NO_THROW(require_prices(c, {.max_cost_usd = 5}));
  // A default model that every role overrides is never called: it needs no price.
  c.models = {{.spec = "openai:unused"}};
  c.roles["ideas"] = c.roles["code"] = c.roles["fix"];
  EXPECT_NO_THROW(require_prices(c, {.max_cost_usd = 5}));
}

TEST(ledger, token_budget_exhaustion_throws_kind_budget_with_what_to_do) {
  ledger book({.max_tokens = 1'000});
  EXPECT_NO_THROW(book.check("ideas"));
  book.add(spent(600, 300, std::nullopt));
  EXPECT_NO_THROW(book.check("ideas")); // 900 < 1000
  book.add(spent(50, 50, std::nullopt));
  try {
    book.check("ideas");
    FAIL() << "expected the budget to be spent";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::budget);
    EXPECT_FALSE(e.retryable());
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "token budget is spent")) << m;
    EXPECT_TRUE(contains(m, "1000 tokens")) << m;
    EXPECT_TRUE(contains(m, "max_tokens = 1000")) << m;
    EXPECT_TRUE(contains(m, "over 2 calls")) << m;
    EXPECT_TRUE(contains(m, "raise max_tokens in the [llm.budget] table of kforge.toml")) << m;
    EXPECT_TRUE(contains(m, "'ideas'")) << m;
  }
}

TEST(ledger, cost_budget_exhaustion_throws_kind_budget) {
  ledger book({.max_cost_usd = 1.0});
  book.add(spent(10, 10, 0.75));
  book.add(spent(10, 10, std::nullopt)); // unpriced: counted as a call, not as cost
  EXPECT_NO_THROW(book.check("code"));
  book.add(spent(10, 10, 0.30));
  try {
    book.check("code");
    FAIL() << "expected the budget to be spent";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::budget);
    const std::string m = e.what();
    EXPECT_TRUE(contains(m, "cost budget is spent: $1.0500 used of max_cost_usd = 1")) << m;
    EXPECT_TRUE(contains(m, "raise max_cost_usd")) << m;
  }
  const ledger_totals t = book.totals();
  EXPECT_EQ(t.calls, 3);
  EXPECT_EQ(t.unpriced_calls, 1);
  EXPECT_EQ(t.tokens(), 60);
  EXPECT_NEAR(t.cost_usd, 1.05, 1e-12);
}

TEST(ledger, no_budget_never_refuses) {
  ledger book;
  book.add(spent(1'000'000'000, 1'000'000'000, 1e6));
  EXPECT_NO_THROW(book.check("fix"));
}

TEST(ledger, totals_are_exact_under_concurrent_adds) {
  ledger book;
  int sink_calls = 0; // the sink is never called concurrently, so a plain int is safe
  book.set_sink([&](const call_record&) { ++sink_calls; });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) book.add(spent(3, 1, 0.5));
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(book.totals().calls, 2000);
  EXPECT_EQ(book.totals().tokens(), 8000);
  EXPECT_DOUBLE_EQ(book.totals().cost_usd, 1000);
  EXPECT_EQ(sink_calls, 2000);
}

TEST(metered, records_a_successful_call_through_the_sink) {
  fake_provider inner("anthropic:claude-sonnet-4-5");
  inner.answer_usage = {.input_tokens = 26'200, .output_tokens = 1'000, .cached_input_tokens = 20'000, .cache_write_tokens = 5'000};
  ledger book;
  std::vector<call_record> seen;
  book.set_sink([&](const call_record& r) { seen.push_back(r); });
  metered m(inner, "ideas", price{.input = 3, .output = 15, .cached_input = 0.30, .cache_write = 3.75}, book);
  EXPECT_EQ(m.spec(), "anthropic:claude-sonnet-4-5");

  std::string streamed;
  const request req = ask("q1");
  const response r = m.complete(req, [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.text, "answer to q1");
  EXPECT_EQ(streamed, r.text); // deltas pass through

  ASSERT_EQ(seen.size(), 1u);
  const call_record& rec = seen[0];
  EXPECT_EQ(rec.role, "ideas");
  EXPECT_EQ(rec.provider_spec, "anthropic:claude-sonnet-4-5");
  EXPECT_EQ(rec.model, "claude-sonnet-4-5-20250929"); // the model that answered
  EXPECT_EQ(rec.request, to_json(req));
  EXPECT_EQ(rec.response_text, "answer to q1");
  EXPECT_EQ(rec.stop_reason, "end_turn");
  EXPECT_EQ(rec.response_id, "msg_1");
  EXPECT_EQ(rec.tokens.cache_write_tokens, 5'000);
  ASSERT_TRUE(rec.cost_usd);
  EXPECT_NEAR(*rec.cost_usd, 0.04335, 1e-12);
  EXPECT_TRUE(rec.error_kind.empty());
  EXPECT_TRUE(rec.error_message.empty());
  EXPECT_GE(rec.duration_s, 0);
  // ISO-8601 UTC with milliseconds: 2026-01-31T12:00:00.123Z
  ASSERT_EQ(rec.started_at.size(), 24u) << rec.started_at;
  EXPECT_EQ(rec.started_at[10], 'T');
  EXPECT_EQ(rec.started_at.back(), 'Z');

  const ledger_totals t = book.totals();
  EXPECT_EQ(t.calls, 1);
  EXPECT_EQ(t.failed_calls, 0);
  EXPECT_EQ(t.input_tokens, 26'200);
  EXPECT_EQ(t.cached_input_tokens, 20'000);
  EXPECT_NEAR(t.cost_usd, 0.04335, 1e-12);
}

TEST(metered, records_a_failed_call_then_rethrows_it) {
  fake_provider inner("openai:gpt-5-mini");
  inner.fail = error(error_kind::rate_limit, "openai: HTTP 429: slow down", true, 429);
  ledger book;
  std::vector<call_record> seen;
  book.set_sink([&](const call_record& r) { seen.push_back(r); });
  metered m(inner, "fix", std::nullopt, book);
  try {
    (void)m.complete(ask("q"));
    FAIL() << "expected the provider's error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::rate_limit); // rethrown as it was
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(e.http_status(), 429);
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].role, "fix");
  EXPECT_EQ(seen[0].model, "gpt-5-mini"); // nothing answered: the model asked for
  EXPECT_EQ(seen[0].error_kind, "rate_limit");
  EXPECT_EQ(seen[0].error_message, "openai: HTTP 429: slow down");
  EXPECT_EQ(seen[0].tokens.input_tokens, 0);
  EXPECT_FALSE(seen[0].cost_usd); // no price
  EXPECT_TRUE(seen[0].response_text.empty());
  EXPECT_EQ(book.totals().failed_calls, 1);
  EXPECT_EQ(book.totals().unpriced_calls, 0);
}

TEST(metered, a_spent_budget_stops_the_call_before_the_provider) {
  fake_provider inner("openai:m");
  ledger book({.max_tokens = 1'500});
  int records = 0;
  book.set_sink([&](const call_record&) { ++records; });
  metered m(inner, "code", price{.input = 1, .output = 1}, book);
  (void)m.complete(ask("a")); // 1,200 tokens: under the budget when it started
  (void)m.complete(ask("b")); // 1,200 < 1,500 at its start; ends at 2,400 (the overshoot)
  try {
    (void)m.complete(ask("c"));
    FAIL() << "expected the budget error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::budget);
  }
  EXPECT_EQ(inner.calls, 2);
  EXPECT_EQ(records, 2); // a refused call is not a call
}

TEST(metered, the_api_key_never_reaches_a_record) {
  const std::string secret = "sk-test-METERED-SECRET-42";
  setenv("KFORGE_TEST_METERED_KEY", secret.c_str(), 1);
  // A real OpenAI client holding the key, pointed at a closed local port: the call fails
  // with a network error that is recorded.
  auto inner = make_provider("openai:gpt-5-mini", {.base_url = "http://127.0.0.1:9/v1",
                                                   .key_env = "KFORGE_TEST_METERED_KEY",
                                                   .retry = {.max_attempts = 1},
                                                   .connect_timeout = std::chrono::milliseconds(2'000)});
  ledger book;
  std::vector<call_record> seen;
  book.set_sink([&](const call_record& r) { seen.push_back(r); });
  metered m(*inner, "ideas", std::nullopt, book);
  EXPECT_THROW((void)m.complete(ask("hello")), error);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].error_kind.empty());
  const std::string all = seen[0].request.dump() + seen[0].error_message + seen[0].provider_spec + seen[0].model;
  EXPECT_FALSE(contains(all, secret)) << all;
  EXPECT_TRUE(contains(seen[0].request.dump(), "hello"));
  unsetenv("KFORGE_TEST_METERED_KEY");
}

TEST(error_kind, budget_round_trips_by_name_and_through_a_transcript) {
  EXPECT_EQ(error_kind_name(error_kind::budget), "budget");
  EXPECT_EQ(error_kind_from_name("budget"), error_kind::budget);
  for (auto k : {error_kind::auth, error_kind::rate_limit, error_kind::overloaded, error_kind::server, error_kind::timeout,
                 error_kind::bad_request, error_kind::network, error_kind::malformed, error_kind::budget})
    EXPECT_EQ(error_kind_from_name(error_kind_name(k)), k);

  const auto path = std::filesystem::temp_directory_path() / ("kforge_llm_budget_" + std::to_string(getpid()) + ".jsonl");
  {
    auto inner = std::make_unique<fake_provider>("openai:m");
    inner->fail = error(error_kind::budget, "llm: the cost budget is spent");
    auto rec = make_recording(std::move(inner), path);
    EXPECT_THROW((void)rec->complete(ask("x")), error);
  }
  auto again = make_provider("replay:" + path.string());
  try {
    (void)again->complete(ask("x"));
    FAIL() << "expected the recorded error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::budget);
  }
  std::filesystem::remove(path);
}
