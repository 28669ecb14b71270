// Anthropic Messages against a local server speaking recorded wire bodies
// (shapes from /work/shared/research/protocols.md section 3).
#include "llm/provider.hpp"
#include "mock_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>

using namespace kforge::llm;
using kforge::llm::test::mock_server;
using kforge::llm::test::stream_sse;

namespace {

constexpr const char* k_key = "sk-ant-api03-TESTSECRETxyz";

provider_options local(const mock_server& s) {
  setenv("KFORGE_TEST_ANTHROPIC_KEY", k_key, 1);
  provider_options o{.base_url = s.base_url(), .key_env = "KFORGE_TEST_ANTHROPIC_KEY"};
  o.retry.base_delay = std::chrono::milliseconds(1);
  return o;
}

request race(bool stream) {
  return request{.system = "<long stable instructions>",
                 .messages = {{role::user, "Find the race condition in this scheduler."}},
                 .max_tokens = 16000,
                 .stop = {"\n\nEND"},
                 .stream = stream,
                 .cache_system = true};
}

constexpr const char* k_message = R"({
  "id": "msg_01RFuVPPnYCFGL9ucejc3Rd4", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
  "content": [
    {"type": "thinking", "thinking": "Let me look at the lock order", "signature": "EqQBCgIYAhIM"},
    {"type": "text", "text": "The race is between "},
    {"type": "text", "text": "enqueue and steal."}
  ],
  "stop_reason": "end_turn", "stop_sequence": null,
  "usage": {"input_tokens": 42, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1850,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 912, "service_tier": "standard"}})";

constexpr const char* k_stream =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01RFuVPPnYCFGL9ucejc3Rd4\",\"type\":\"message\","
    "\"role\":\"assistant\",\"model\":\"claude-sonnet-4-20250514\",\"content\":[],\"stop_reason\":null,"
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":16,\"cache_creation_input_tokens\":100,"
    "\"cache_read_input_tokens\":0,\"output_tokens\":5,\"service_tier\":\"standard\"}}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Olá! \"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Tudo bem?\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
    "\"usage\":{\"output_tokens\":15}}\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n";

} // namespace

TEST(anthropic, non_streaming_with_prompt_caching) {
  mock_server s;
  std::string body, key, version;
  s.svr.Post(R"(.*/messages)", [&](const httplib::Request& req, httplib::Response& res) {
    body = req.body;
    key = req.get_header_value("x-api-key");
    version = req.get_header_value("anthropic-version");
    res.set_content(k_message, "application/json");
  });
  s.start();
  auto p = make_provider("anthropic:claude-sonnet-4-5", local(s));
  const response r = p->complete(race(false));
  EXPECT_EQ(r.text, "The race is between enqueue and steal."); // thinking blocks left out
  EXPECT_EQ(r.stop_reason, "end_turn");
  EXPECT_EQ(r.id, "msg_01RFuVPPnYCFGL9ucejc3Rd4");
  EXPECT_EQ(r.usage.input_tokens, 42 + 1850);
  EXPECT_EQ(r.usage.cached_input_tokens, 1850);
  EXPECT_EQ(r.usage.cache_write_tokens, 0);
  EXPECT_EQ(r.usage.output_tokens, 912);

  EXPECT_EQ(key, k_key);
  EXPECT_EQ(version, "2023-06-01");
  const auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["model"], "claude-sonnet-4-5");
  EXPECT_EQ(j["max_tokens"], 16000);
  ASSERT_TRUE(j["system"].is_array());
  EXPECT_EQ(j["system"][0]["text"], "<long stable instructions>");
  EXPECT_EQ(j["system"][0]["cache_control"]["type"], "ephemeral");
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["stop_sequences"][0], "\n\nEND");
  EXPECT_FALSE(j.contains("temperature"));
}

TEST(anthropic, system_is_a_plain_string_without_caching) {
  mock_server s;
  std::string body;
  s.svr.Post(R"(.*/messages)", [&](const httplib::Request& req, httplib::Response& res) {
    body = req.body;
    res.set_content(k_message, "application/json");
  });
  s.start();
  auto p = make_provider("anthropic:claude-sonnet-4-5", local(s));
  request r = race(false);
  r.cache_system = false;
  (void)p->complete(r);
  EXPECT_EQ(nlohmann::json::parse(body)["system"], "<long stable instructions>");
}

TEST(anthropic, streaming_split_at_every_byte) {
  mock_server s;
  s.svr.Post(R"(.*/messages)", [&](const httplib::Request&, httplib::Response& res) { stream_sse(res, k_stream, 1); });
  s.start();
  auto p = make_provider("anthropic:claude-sonnet-4-20250514", local(s));
  std::string seen;
  const response r = p->complete(race(true), [&](std::string_view t) { seen += t; });
  EXPECT_EQ(r.text, "Olá! Tudo bem?");
  EXPECT_EQ(seen, r.text);
  EXPECT_EQ(r.stop_reason, "end_turn");
  EXPECT_EQ(r.model, "claude-sonnet-4-20250514");
  EXPECT_EQ(r.usage.input_tokens, 116);
  EXPECT_EQ(r.usage.cache_write_tokens, 100);
  EXPECT_EQ(r.usage.output_tokens, 15); // message_delta's count is cumulative
}

TEST(anthropic, error_event_inside_a_200_stream) {
  mock_server s;
  std::atomic<int> calls{0};
  std::string body = k_stream;
  body.resize(body.find("event: content_block_stop"));
  body += "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
  s.svr.Post(R"(.*/messages)", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    stream_sse(res, body, 5);
  });
  s.start();
  auto p = make_provider("anthropic:m", local(s));
  try {
    (void)p->complete(race(true));
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::overloaded);
    EXPECT_NE(std::string(e.what()).find("Overloaded"), std::string::npos);
  }
  EXPECT_EQ(calls.load(), 1); // part of the answer was streamed: not retried
}

TEST(anthropic, overloaded_529_is_retried_then_succeeds) {
  mock_server s;
  std::atomic<int> calls{0};
  s.svr.Post(R"(.*/messages)", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 529;
      res.set_content(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"})",
                      "application/json");
      return;
    }
    res.set_content(k_message, "application/json");
  });
  s.start();
  auto p = make_provider("anthropic:m", local(s));
  EXPECT_EQ(p->complete(race(false)).stop_reason, "end_turn");
  EXPECT_EQ(calls.load(), 2);
}
