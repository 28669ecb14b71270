// Retries, backoff, the per-endpoint concurrency limit and key redaction.
#include "llm/provider.hpp"
#include "llm/retry.hpp"
#include "mock_server.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

using namespace kforge::llm;
using namespace std::chrono_literals;
using kforge::llm::test::mock_server;

namespace {

constexpr const char* k_key = "sk-proj-REDACTME-4242424242";

constexpr const char* k_ok = R"({"id":"chatcmpl-1","object":"chat.completion","model":"m",
  "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
  "usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})";

provider_options local(const std::string& base) {
  setenv("KFORGE_TEST_RETRY_KEY", k_key, 1);
  provider_options o{.base_url = base, .key_env = "KFORGE_TEST_RETRY_KEY"};
  o.retry.base_delay = 1ms;
  return o;
}

request ask() { return request{.messages = {{role::user, "hi"}}, .max_tokens = 16}; }

} // namespace

TEST(retry, statuses) {
  for (long s : {408L, 409L, 429L, 500L, 502L, 503L, 504L, 529L}) EXPECT_TRUE(retryable_status(s)) << s;
  for (long s : {200L, 400L, 401L, 403L, 404L, 413L}) EXPECT_FALSE(retryable_status(s)) << s;
}

TEST(retry, server_delay_headers) {
  EXPECT_EQ(server_retry_delay({{"retry-after-ms", "250"}, {"retry-after", "9"}}), 250ms);
  EXPECT_EQ(server_retry_delay({{"retry-after", "1.5"}}), 1500ms);
  const auto now = std::chrono::system_clock::from_time_t(784111767); // Sun, 06 Nov 1994 08:49:27 GMT
  EXPECT_EQ(server_retry_delay({{"retry-after", "Sun, 06 Nov 1994 08:49:37 GMT"}}, now), 10'000ms);
  EXPECT_EQ(server_retry_delay({{"retry-after", "soon"}}), std::nullopt);
  EXPECT_EQ(server_retry_delay({}), std::nullopt);
}

TEST(retry, backoff_is_exponential_capped_and_jittered_down) {
  retry_policy p{.base_delay = 500ms, .max_delay = 8000ms};
  EXPECT_EQ(backoff_delay(p, 0, 0.0), 500ms);
  EXPECT_EQ(backoff_delay(p, 2, 0.0), 2000ms);
  EXPECT_EQ(backoff_delay(p, 10, 0.0), 8000ms);
  EXPECT_EQ(backoff_delay(p, 10, 1.0), 6000ms);
}

TEST(retry, honours_retry_after_ms_then_succeeds) {
  mock_server s;
  std::atomic<int> calls{0};
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  std::mutex mu;
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard lock(mu);
      arrivals.push_back(std::chrono::steady_clock::now());
    }
    if (++calls == 1) {
      res.status = 429;
      res.set_header("retry-after-ms", "50");
      res.set_content(R"({"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}})",
                      "application/json");
      return;
    }
    res.set_content(k_ok, "application/json");
  });
  s.start();
  auto p = make_provider("openai:m", local(s.base_url()));
  EXPECT_EQ(p->complete(ask()).text, "ok");
  ASSERT_EQ(calls.load(), 2);
  EXPECT_GE(arrivals[1] - arrivals[0], 50ms); // the backoff alone would be ~1 ms
}

TEST(retry, server_errors_exhaust_the_attempts) {
  mock_server s;
  std::atomic<int> calls{0};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 500;
    res.set_header("x-request-id", "req_abc");
    res.set_content(R"({"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}})",
                    "application/json");
  });
  s.start();
  auto o = local(s.base_url());
  o.retry.max_attempts = 4;
  auto p = make_provider("openai:m", o);
  try {
    (void)p->complete(ask());
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::server);
    EXPECT_EQ(e.http_status(), 500);
    EXPECT_NE(std::string(e.what()).find("req_abc"), std::string::npos);
  }
  EXPECT_EQ(calls.load(), 4);
}

TEST(retry, a_spent_quota_is_not_retried) {
  mock_server s;
  std::atomic<int> calls{0};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.status = 429;
    res.set_content(R"({"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}})",
                    "application/json");
  });
  s.start();
  auto p = make_provider("openai:m", local(s.base_url()));
  try {
    (void)p->complete(ask());
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::rate_limit);
    EXPECT_FALSE(e.retryable());
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(retry, unauthorized_is_not_retried_and_the_key_is_redacted) {
  mock_server s;
  std::atomic<int> calls{0};
  std::string auth;
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request& req, httplib::Response& res) {
    ++calls;
    auth = req.get_header_value("Authorization");
    res.status = 401;
    // OpenAI echoes the key it was given; the error must not carry it on.
    res.set_content(std::string(R"({"error":{"message":"Incorrect API key provided: )") + k_key +
                        R"(. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})",
                    "application/json");
  });
  s.start();
  auto p = make_provider("openai:m", local(s.base_url()));
  try {
    (void)p->complete(ask());
    FAIL() << "expected an error";
  } catch (const error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), error_kind::auth);
    EXPECT_EQ(msg.find(k_key), std::string::npos) << msg;
    EXPECT_NE(msg.find("[redacted]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("KFORGE_TEST_RETRY_KEY"), std::string::npos) << msg; // says where to fix it
  }
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(auth, std::string("Bearer ") + k_key);
}

TEST(retry, a_network_error_names_no_key) {
  // Nothing listens on port 1: connection refused, retried, then "unreachable".
  auto o = local("http://127.0.0.1:1/v1");
  o.retry.max_attempts = 2;
  auto p = make_provider("openai:m", o);
  try {
    (void)p->complete(ask());
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::unreachable);
    EXPECT_EQ(std::string(e.what()).find(k_key), std::string::npos);
  }
}

TEST(retry, concurrency_is_limited_per_endpoint) {
  mock_server s;
  std::atomic<int> now{0}, peak{0}, calls{0};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    const int n = ++now;
    for (int p = peak.load(); n > p && !peak.compare_exchange_weak(p, n);) {}
    std::this_thread::sleep_for(100ms);
    --now;
    res.set_content(k_ok, "application/json");
  });
  s.start();
  // A base URL of its own, so no other test's limit for this port applies.
  auto o = local(s.base_url("/limit-test"));
  o.max_concurrency = 2;
  auto p = make_provider("openai:m", o);
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i)
    callers.emplace_back([&] {
      if (p->complete(ask()).text == "ok") ++ok;
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(calls.load(), 6);
  EXPECT_EQ(peak.load(), 2);
}

TEST(redact, replaces_every_occurrence) {
  EXPECT_EQ(redact("a KEY b KEYKEY", "KEY"), "a [redacted] b [redacted][redacted]");
  EXPECT_EQ(redact("nothing", ""), "nothing");
}
