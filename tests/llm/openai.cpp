// OpenAI Chat Completions against a local server speaking recorded wire bodies
// (shapes from docs research: /work/shared/research/protocols.md section 1).
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

constexpr const char* k_key = "sk-test-0123456789abcdefSECRET";

provider_options local(const mock_server& s) {
  setenv("KFORGE_TEST_OPENAI_KEY", k_key, 1);
  provider_options o{.base_url = s.base_url(), .key_env = "KFORGE_TEST_OPENAI_KEY"};
  o.retry.base_delay = std::chrono::milliseconds(1);
  return o;
}

request hello(bool stream) {
  return request{.system = "You are terse.",
                 .messages = {{role::user, "Say this is a test!"}},
                 .max_tokens = 256,
                 .temperature = 0.2,
                 .stop = {"END"},
                 .stream = stream};
}

constexpr const char* k_completion = R"({
  "id": "chatcmpl-A652Fhuqsr1kskKe5B63M0eiw3842", "object": "chat.completion", "created": 1726012687,
  "model": "gpt-4-0613",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "This is a test!", "refusal": null},
               "logprobs": null, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 13, "completion_tokens": 5, "total_tokens": 18,
            "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}},
  "system_fingerprint": null})";

// The stream split into events exactly as OpenAI sends them, with a keep-alive comment.
constexpr const char* k_stream =
    ": OPENROUTER PROCESSING\n\n"
    "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1726012687,\"model\":\"gpt-4o-mini\","
    "\"system_fingerprint\":\"fp_x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
    "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null,\"obfuscation\":\"k9\"}\n\n"
    "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1726012687,\"model\":\"gpt-4o-mini\","
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"This is\"},\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1726012687,\"model\":\"gpt-4o-mini\","
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a test!\"},\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1726012687,\"model\":\"gpt-4o-mini\","
    "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n"
    "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1726012687,\"model\":\"gpt-4o-mini\","
    "\"choices\":[],\"usage\":{\"prompt_tokens\":13,\"completion_tokens\":5,\"total_tokens\":18,"
    "\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n"
    "data: [DONE]\n\n";

} // namespace

TEST(openai, non_streaming_request_and_response) {
  mock_server s;
  std::string body, auth;
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request& req, httplib::Response& res) {
    body = req.body;
    auth = req.get_header_value("Authorization");
    res.set_content(k_completion, "application/json");
  });
  s.start();
  auto p = make_provider("openai:gpt-4-0613", local(s));
  std::string seen;
  const response r = p->complete(hello(false), [&](std::string_view t) { seen += t; });
  EXPECT_EQ(r.text, "This is a test!");
  EXPECT_EQ(seen, r.text);
  EXPECT_EQ(r.stop_reason, "stop");
  EXPECT_EQ(r.id, "chatcmpl-A652Fhuqsr1kskKe5B63M0eiw3842");
  EXPECT_EQ(r.model, "gpt-4-0613");
  EXPECT_EQ(r.usage.input_tokens, 13);
  EXPECT_EQ(r.usage.output_tokens, 5);
  EXPECT_EQ(r.usage.cached_input_tokens, 4);

  EXPECT_EQ(auth, std::string("Bearer ") + k_key);
  const auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["model"], "gpt-4-0613");
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["messages"][0]["role"], "system");
  EXPECT_EQ(j["messages"][0]["content"], "You are terse.");
  EXPECT_EQ(j["messages"][1]["role"], "user");
  EXPECT_EQ(j["max_tokens"], 256); // custom base URL: the field compatible servers read
  EXPECT_DOUBLE_EQ(j["temperature"].get<double>(), 0.2);
  EXPECT_EQ(j["stop"], nlohmann::json::array({"END"}));
  EXPECT_FALSE(j.contains("stream"));
}

TEST(openai, streaming_byte_by_byte_with_usage_chunk) {
  mock_server s;
  std::string body;
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request& req, httplib::Response& res) {
    body = req.body;
    stream_sse(res, k_stream, 1);
  });
  s.start();
  auto p = make_provider("openai:gpt-4o-mini", local(s));
  std::vector<std::string> deltas;
  const response r = p->complete(hello(true), [&](std::string_view t) { deltas.emplace_back(t); });
  EXPECT_EQ(r.text, "This is a test!");
  EXPECT_EQ(deltas, (std::vector<std::string>{"This is", " a test!"}));
  EXPECT_EQ(r.stop_reason, "stop");
  EXPECT_EQ(r.id, "chatcmpl-abc");
  EXPECT_EQ(r.usage.input_tokens, 13);
  EXPECT_EQ(r.usage.output_tokens, 5);
  EXPECT_EQ(r.usage.cached_input_tokens, 8);
  const auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
}

TEST(openai, stream_without_done_is_truncated_output) {
  mock_server s;
  std::string cut = k_stream;
  cut.resize(cut.find("data: [DONE]"));
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) { stream_sse(res, cut, 7); });
  s.start();
  auto o = local(s);
  o.retry.max_attempts = 1;
  auto p = make_provider("openai:m", o);
  try {
    (void)p->complete(hello(true));
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::truncated);
    EXPECT_NE(std::string(e.what()).find("[DONE]"), std::string::npos);
    EXPECT_EQ(e.partial_text(), "This is a test!") << "what arrived is kept";
  }
}

TEST(openai, error_object_inside_a_200_stream) {
  mock_server s;
  std::atomic<int> calls{0};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    stream_sse(res,
               "data: {\"id\":\"gen-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
               "data: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"}}\n\n",
               3);
  });
  s.start();
  auto p = make_provider("openai:m", local(s));
  try {
    (void)p->complete(hello(true));
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::server);
    EXPECT_NE(std::string(e.what()).find("Provider returned error"), std::string::npos);
  }
  EXPECT_EQ(calls.load(), 1); // text was already streamed: not retried
}

TEST(openai, stalled_stream_times_out) {
  mock_server s;
  std::atomic<bool> release{false};
  s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream", [&](std::size_t, httplib::DataSink& sink) {
      const std::string first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
      sink.write(first.data(), first.size());
      for (int i = 0; i < 500 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return false; // hang up without finishing
    });
  });
  s.start();
  auto o = local(s);
  o.retry.max_attempts = 1;
  o.stream_idle_timeout = std::chrono::milliseconds(300);
  auto p = make_provider("openai:m", o);
  std::string seen;
  try {
    (void)p->complete(hello(true), [&](std::string_view t) { seen += t; });
    FAIL() << "expected a timeout";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::timeout) << e.what();
  }
  EXPECT_EQ(seen, "Hi");
  release = true;
}

TEST(openai, missing_key_for_the_official_endpoint_says_which_variable) {
  unsetenv("KFORGE_TEST_NO_SUCH_KEY");
  try {
    (void)make_provider("openai:gpt-4o", {.key_env = "KFORGE_TEST_NO_SUCH_KEY"});
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::auth);
    EXPECT_NE(std::string(e.what()).find("KFORGE_TEST_NO_SUCH_KEY"), std::string::npos);
  }
}

TEST(provider, bad_specs_are_rejected) {
  EXPECT_THROW((void)make_provider("gpt-4o"), error);
  EXPECT_THROW((void)make_provider("openai:"), error);
  EXPECT_THROW((void)make_provider("gemini:pro"), error);
}
