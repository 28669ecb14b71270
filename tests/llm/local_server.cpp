// What a real local server does that the first mocks did not (llama-cpp-python's
// llama_cpp.server with Gemma 3 270M on loopback; bench/real_llm.sh runs the real thing):
// streams without a usage chunk, streams cut short by a second request, an empty stream
// for a prompt longer than the context, slow streaming, a refused connection, a base URL
// without /v1. The stream bodies in tests/llm/data/ were recorded from that server.
#include "core/error.hpp"
#include "llm/config.hpp"
#include "llm/provider.hpp"
#include "llm/usage.hpp"
#include "mock_server.hpp"
#include "search/llm_gateway.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

using namespace kforge::llm;
using kforge::llm::test::mock_server;
using kforge::llm::test::stream_sse;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

std::string recorded(const std::string& name) { return kforge::test::read_test_file("llm/data/" + name); }

// A base URL of the test's own (the prefix), so endpoint limits of other tests never apply.
provider_options local(const mock_server& s, std::string_view prefix) {
  provider_options o{.base_url = s.base_url(prefix)};
  o.retry.base_delay = 1ms;
  return o;
}

request ask(std::string text = "Write a kernel.") {
  return request{.system = "You write CUDA kernels.", .messages = {{role::user, std::move(text)}}, .max_tokens = 64,
                 .stream = true};
}

// The one event llama.cpp-style servers put last: finish_reason set, no usage anywhere.
std::string chunk(std::string_view content, std::string_view finish = "") {
  nlohmann::json c{{"index", 0}, {"delta", content.empty() ? nlohmann::json::object() : nlohmann::json{{"content", content}}},
                   {"finish_reason", finish.empty() ? nlohmann::json() : nlohmann::json(finish)}};
  nlohmann::json j{{"id", "chatcmpl-local"}, {"object", "chat.completion.chunk"}, {"model", "gemma-3-270m"},
                   {"choices", nlohmann::json::array({c})}};
  return "data: " + j.dump() + "\r\n\r\n";
}

} // namespace

TEST(local_server, a_stream_without_usage_is_estimated_not_free) {
  mock_server s;
  const std::string body = recorded("llama_cpp_stream_no_usage.sse");
  ASSERT_FALSE(contains(body, "\"usage\":{")) << "the recording holds no usage";
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) { stream_sse(res, body, 5); });
  s.start();
  auto p = make_provider("openai:gemma", local(s, "/no-usage"));
  const request req = ask();
  const response r = p->complete(req);
  EXPECT_FALSE(r.text.empty());
  EXPECT_FALSE(r.stop_reason.empty());
  EXPECT_EQ(r.usage.input_tokens + r.usage.output_tokens, 0) << "the server sent no counts";

  // Through the meter: counted from the text, marked estimated, and a budget stops the run.
  ledger book({.max_tokens = 10});
  std::vector<call_record> seen;
  book.set_sink([&](const call_record& c) { seen.push_back(c); });
  metered m(*p, "code", std::nullopt, book);
  const response metered_r = m.complete(req);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].tokens.estimated);
  EXPECT_GT(seen[0].tokens.input_tokens, 0);
  EXPECT_EQ(seen[0].tokens.output_tokens, static_cast<int64_t>((metered_r.text.size() + 3) / 4));
  EXPECT_EQ(book.totals().estimated_calls, 1);
  try {
    (void)m.complete(req);
    FAIL() << "the estimated tokens spent the budget";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::budget);
  }
}

TEST(local_server, done_without_a_finish_reason_is_truncated_and_keeps_the_partial_answer) {
  mock_server s;
  const std::string body = recorded("llama_cpp_stream_interrupted.sse");
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) { stream_sse(res, body, 9); });
  s.start();
  auto o = local(s, "/cut");
  auto p = make_provider("openai:gemma", o);
  try {
    (void)p->complete(ask());
    FAIL() << "a stream cut short is not an answer";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::truncated) << e.what();
    EXPECT_TRUE(contains(e.what(), "no finish_reason")) << e.what();
    EXPECT_FALSE(e.retryable()) << "the caller records the partial answer, then asks again";
    EXPECT_FALSE(e.partial_text().empty());
  }

  // The meter records the partial answer and what it cost.
  ledger book;
  std::vector<call_record> seen;
  book.set_sink([&](const call_record& c) { seen.push_back(c); });
  metered m(*p, "code", std::nullopt, book);
  EXPECT_THROW((void)m.complete(ask()), error);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].error_kind, "truncated");
  EXPECT_FALSE(seen[0].response_text.empty());
  EXPECT_TRUE(seen[0].tokens.estimated);
  EXPECT_GT(seen[0].tokens.output_tokens, 0);
}

TEST(local_server, a_server_that_cuts_streams_under_load_gets_fewer_calls_at_once) {
  // Like llama-cpp-python's server: a new request ends the running stream with [DONE] and
  // no finish_reason. kforge sees the cut while two calls ran and sends one at a time.
  mock_server s;
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, arrived = 0, peak = 0;
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    int me = 0;
    {
      std::lock_guard lock(mu);
      me = ++arrived;
      peak = std::max(peak, ++running);
    }
    cv.notify_all();
    res.set_chunked_content_provider("text/event-stream", [&, me](std::size_t, httplib::DataSink& sink) {
      std::string out = chunk("__global__ void k() {}");
      sink.write(out.data(), out.size());
      bool interrupted = false;
      {
        std::unique_lock lock(mu);
        // The first stream runs until a second request arrives (or 5 s pass).
        if (me == 1) interrupted = cv.wait_for(lock, 5s, [&] { return arrived > 1; });
      }
      // The second stream outlasts the first: the cut is seen while both run.
      if (me == 2) std::this_thread::sleep_for(1s);
      out = interrupted ? "data: [DONE]\r\n\r\n" : chunk("", "stop") + "data: [DONE]\r\n\r\n";
      sink.write(out.data(), out.size());
      {
        std::lock_guard lock(mu);
        --running;
      }
      sink.done();
      return true;
    });
  });
  s.start();
  auto o = local(s, "/learn");
  o.max_concurrency = 4;
  auto p = make_provider("openai:gemma", o);
  std::vector<std::string> warnings;
  set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
  std::atomic<int> truncated{0}, ok{0};
  std::thread first([&] {
    try {
      (void)p->complete(ask());
      ++ok;
    } catch (const error& e) {
      if (e.kind() == error_kind::truncated) ++truncated;
    }
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return arrived >= 1; });
  }
  std::thread second([&] {
    if (!p->complete(ask()).text.empty()) ++ok;
  });
  first.join();
  second.join();
  set_warning_sink({});
  EXPECT_EQ(truncated.load(), 1);
  EXPECT_EQ(ok.load(), 1);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "at most 1 at a time")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], s.base_url("/learn"))) << warnings[0];
  EXPECT_EQ(endpoint_slots(s.base_url("/learn"), 99)->limit(), 1);

  // From now on calls to that endpoint run one at a time.
  {
    std::lock_guard lock(mu);
    arrived = 100; // no more interruptions
    peak = 0;
  }
  std::vector<std::thread> callers;
  for (int i = 0; i < 3; ++i) callers.emplace_back([&] { (void)p->complete(ask()); });
  for (auto& t : callers) t.join();
  EXPECT_EQ(peak, 1);
}

TEST(local_server, an_empty_stream_says_the_prompt_may_not_fit_the_context) {
  mock_server s;
  std::atomic<int> calls{0};
  const std::string body = recorded("llama_cpp_stream_context_overflow.sse");
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    stream_sse(res, body, 64);
  });
  s.start();
  auto p = make_provider("openai:gemma", local(s, "/overflow"));
  try {
    (void)p->complete(ask(std::string(40'000, 'x')));
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_request) << e.what();
    EXPECT_TRUE(contains(e.what(), "context")) << e.what();
    EXPECT_TRUE(contains(e.what(), "about 10")) << "the prompt's size: " << e.what();
  }
  EXPECT_EQ(calls.load(), 1) << "the same prompt would not fit again";
}

TEST(local_server, a_slow_stream_ends_on_silence_not_on_length) {
  // 25 tokens 60 ms apart (1.5 s in all) with a 400 ms idle limit and no total limit: the
  // answer arrives whole. Then a stream that stops sending: a timeout, part of it kept.
  mock_server s;
  std::atomic<bool> stall{false};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [&](std::size_t, httplib::DataSink& sink) {
      for (int i = 0; i < 25; ++i) {
        const std::string c = chunk("t" + std::to_string(i) + " ");
        if (!sink.write(c.data(), c.size())) return false;
        std::this_thread::sleep_for(stall && i == 3 ? 2s : 60ms);
        if (stall && i == 3) return false;
      }
      const std::string end = chunk("", "stop") + "data: [DONE]\r\n\r\n";
      sink.write(end.data(), end.size());
      sink.done();
      return true;
    });
  });
  s.start();
  llm_config cfg;
  cfg.idle_timeout_s = 0.4;
  const model_entry e{.spec = "openai:slow", .base_url = s.base_url("/slow")};
  const provider_options o = options_for(e, cfg);
  EXPECT_EQ(o.total_timeout, 0ms) << "streams have no total limit";
  EXPECT_EQ(o.stream_idle_timeout, 400ms);
  auto p = make_provider(e.spec, o);
  const response r = p->complete(ask());
  EXPECT_TRUE(contains(r.text, "t24")) << r.text;
  EXPECT_EQ(r.stop_reason, "stop");

  stall = true;
  std::string seen;
  try {
    (void)p->complete(ask(), [&](std::string_view t) { seen += t; });
    FAIL() << "expected a timeout";
  } catch (const error& err) {
    EXPECT_EQ(err.kind(), error_kind::timeout) << err.what();
    EXPECT_EQ(err.partial_text(), "t0 t1 t2 t3 ");
    EXPECT_EQ(seen, err.partial_text());
  }
}

TEST(local_server, a_refused_connection_ends_the_run_and_names_the_url) {
  const int port = kforge::test::closed_loopback_port();
  ASSERT_GT(port, 0);
  provider_options o{.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1"};
  o.retry.base_delay = 1ms;
  auto p = make_provider("openai:m", o);
  try {
    (void)p->complete(ask());
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::unreachable) << e.what();
    EXPECT_TRUE(ends_the_run(e));
    EXPECT_TRUE(contains(e.what(), o.base_url + "/chat/completions")) << e.what();
    EXPECT_TRUE(contains(e.what(), "is the server running")) << e.what();
  }
}

TEST(local_server, a_base_url_without_v1_is_a_404_naming_the_url) {
  mock_server s;
  s.svr.Post(R"(/v1/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    stream_sse(res, chunk("x", "stop") + "data: [DONE]\r\n\r\n");
  });
  s.svr.Post(R"(/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content(R"({"detail":"Not Found"})", "application/json");
  });
  s.start();
  const std::string without_v1 = "http://127.0.0.1:" + std::to_string(s.port);
  auto p = make_provider("openai:m", {.base_url = without_v1});
  try {
    (void)p->complete(ask());
    FAIL() << "expected a 404";
  } catch (const error& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_TRUE(ends_the_run(e));
    EXPECT_TRUE(contains(e.what(), without_v1 + "/chat/completions")) << e.what();
  }
}

TEST(local_server, endpoint_defaults_suit_where_the_server_is) {
  EXPECT_TRUE(is_loopback_url("http://127.0.0.1:8080/v1"));
  EXPECT_TRUE(is_loopback_url("http://localhost/v1"));
  EXPECT_TRUE(is_loopback_url("http://[::1]:8000/v1"));
  EXPECT_FALSE(is_loopback_url("https://api.openai.com/v1"));
  EXPECT_FALSE(is_loopback_url("http://localhost.example.com/v1"));
  EXPECT_FALSE(is_loopback_url(""));

  llm_config cfg;
  const model_entry hosted{.spec = "openai:gpt-5-mini"};
  const model_entry mine{.spec = "openai:gemma", .base_url = "http://127.0.0.1:8080/v1"};
  unsetenv("OPENAI_BASE_URL");
  EXPECT_EQ(options_for(hosted, cfg).max_concurrency, k_max_concurrency_hosted);
  EXPECT_EQ(options_for(mine, cfg).max_concurrency, k_max_concurrency_local);
  const request base{.messages = {{role::user, "hi"}}};
  EXPECT_EQ(with_defaults(base, hosted, cfg).max_tokens, k_max_tokens_hosted);
  EXPECT_EQ(with_defaults(base, mine, cfg).max_tokens, k_max_tokens_local);
  cfg.stream = false;
  EXPECT_EQ(options_for(mine, cfg).total_timeout, std::chrono::seconds(600)) << "unstreamed: silent until done";
  cfg.stream = true;

  // The entry beats [llm], which beats the endpoint's default.
  cfg.max_concurrency = 3;
  EXPECT_EQ(options_for(mine, cfg).max_concurrency, 3);
  model_entry tuned = mine;
  tuned.max_concurrency = 2;
  tuned.timeout_s = 900;
  tuned.idle_timeout_s = 30;
  EXPECT_EQ(options_for(tuned, cfg).max_concurrency, 2);
  EXPECT_EQ(options_for(tuned, cfg).total_timeout, std::chrono::seconds(900));
  EXPECT_EQ(options_for(tuned, cfg).stream_idle_timeout, std::chrono::seconds(30));

  // $OPENAI_BASE_URL serves entries without a base_url; --base-url beats everything.
  setenv("OPENAI_BASE_URL", "http://localhost:9000/v1", 1);
  EXPECT_EQ(base_url_for(hosted, cfg), "http://localhost:9000/v1");
  EXPECT_EQ(base_url_for(mine, cfg), "http://127.0.0.1:8080/v1");
  EXPECT_EQ(base_url_for({.spec = "anthropic:claude"}, cfg), "");
  cfg.base_url = "http://127.0.0.1:7000/v1";
  EXPECT_EQ(base_url_for(hosted, cfg), cfg.base_url);
  EXPECT_EQ(base_url_for(mine, cfg), cfg.base_url);
  unsetenv("OPENAI_BASE_URL");
  EXPECT_THROW((void)checked_base_url("127.0.0.1:8080/v1", "--base-url"), kforge::error);
}

TEST(slots, a_lowered_limit_waits_for_holders_and_the_wait_is_counted) {
  slots s(3);
  s.acquire();
  s.acquire();
  EXPECT_EQ(s.in_flight(), 2);
  EXPECT_TRUE(s.lower_to(1));
  EXPECT_FALSE(s.lower_to(2)) << "never raised";
  EXPECT_EQ(s.limit(), 1);
  std::atomic<bool> got{false};
  double waited = 0;
  std::thread t([&] {
    reset_slot_wait_this_thread();
    s.acquire();
    got = true;
    waited = slot_wait_s_this_thread();
    s.release();
  });
  std::this_thread::sleep_for(50ms);
  s.release();
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(got) << "one still held, the limit is 1";
  s.release();
  t.join();
  EXPECT_TRUE(got);
  EXPECT_GE(waited, 0.05);
}

TEST(local_server, the_search_gateway_records_a_cut_stream_and_asks_again) {
  // The first answer is cut ([DONE] without a finish reason), the second is whole: the caller
  // gets the second; the database holds both, the first with what arrived of it.
  mock_server s;
  std::atomic<int> calls{0};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    const bool cut = ++calls == 1;
    stream_sse(res, chunk(cut ? "__global__ void half" : "__global__ void whole() {}") +
                        (cut ? "" : chunk("", "stop")) + "data: [DONE]\r\n\r\n", 16);
  });
  s.start();
  kforge::test::temp_dir dir;
  kforge::store::store db(dir / "k.db");
  const int64_t run = db.begin_run(db.put_problem({.name = "p", .path = "/p", .spec_hash = "h", .spec_toml = ""}),
                                   "refine", "{}");
  llm_config cfg;
  cfg.models.push_back({.spec = "openai:gemma", .base_url = s.base_url("/gateway")});
  auto gw = kforge::search::make_llm_gateway(db, cfg, {}, 1);
  std::vector<nlohmann::json> events;
  gw->set_event_sink([&](const nlohmann::json& e) { events.push_back(e); });
  int64_t call_id = 0;
  request req = ask();
  req.replay_key = "refine/r1/implement";
  const response r = gw->ask("code", req, run, &call_id);
  gw->set_event_sink({});
  EXPECT_EQ(r.text, "__global__ void whole() {}");
  EXPECT_EQ(calls.load(), 2);

  // Both calls are recorded; the caller's id is the one that answered.
  const auto rows = db.llm_calls_of(run);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].error_kind, "truncated");
  EXPECT_EQ(rows[0].response_text, "__global__ void half") << "the partial answer is kept";
  EXPECT_EQ(rows[0].usage_source, "estimated");
  EXPECT_GT(rows[0].output_tokens, 0);
  EXPECT_EQ(rows[1].error_kind, "");
  EXPECT_EQ(rows[1].id, call_id);

  bool noted = false, progress = false;
  for (const auto& e : events) {
    noted |= e.value("event", "") == "note" && contains(e.value("message", ""), "asking again (2 of 3)");
    progress |= e.value("event", "") == "llm_progress" && e.value("tokens", 0) > 0;
  }
  EXPECT_TRUE(noted);
  EXPECT_TRUE(progress) << "streamed text shows as progress";
}
