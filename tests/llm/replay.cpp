// Record a run against a server, then replay it with no server: identical answers.
#include "llm/provider.hpp"
#include "llm/replay.hpp"
#include "mock_server.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kforge::llm;
using kforge::llm::test::mock_server;

namespace {

request ask(std::string text, bool stream = false) {
  return request{.system = "sys", .messages = {{role::user, std::move(text)}}, .max_tokens = 32, .stream = stream};
}

bool same(const response& a, const response& b) {
  return a.text == b.text && a.stop_reason == b.stop_reason && a.id == b.id && a.model == b.model &&
         a.usage.input_tokens == b.usage.input_tokens && a.usage.output_tokens == b.usage.output_tokens &&
         a.usage.cached_input_tokens == b.usage.cached_input_tokens;
}

} // namespace

TEST(replay, record_then_replay_gives_identical_answers_offline) {
  const auto path = std::filesystem::temp_directory_path() / ("kforge_llm_replay_" + std::to_string(getpid()) + ".jsonl");
  std::vector<response> recorded;
  {
    mock_server s;
    std::atomic<int> n{0};
    s.svr.Post(R"(.*/chat/completions)", [&](const httplib::Request& req, httplib::Response& res) {
      const int k = ++n; // every answer differs, even to the same question (sampling)
      const auto q = nlohmann::json::parse(req.body)["messages"][1]["content"].get<std::string>();
      if (q == "fail") {
        res.status = 400;
        res.set_content(R"({"error":{"message":"bad field","type":"invalid_request_error"}})", "application/json");
        return;
      }
      nlohmann::json body{{"id", "chatcmpl-" + std::to_string(k)},
                          {"model", "m-2026"},
                          {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", q + " #" + std::to_string(k)}}}, {"finish_reason", "stop"}}}},
                          {"usage", {{"prompt_tokens", 10 + k}, {"completion_tokens", k}, {"prompt_tokens_details", {{"cached_tokens", k}}}}}};
      res.set_content(body.dump(), "application/json");
    });
    s.start();
    setenv("KFORGE_TEST_REPLAY_KEY", "sk-replay-SECRET", 1);
    auto p = make_recording(make_provider("openai:m", {.base_url = s.base_url(), .key_env = "KFORGE_TEST_REPLAY_KEY"}), path);
    recorded.push_back(p->complete(ask("a")));
    recorded.push_back(p->complete(ask("b")));
    recorded.push_back(p->complete(ask("a"))); // same request, a different sample
    EXPECT_THROW((void)p->complete(ask("fail")), error);
  }
  {
    std::ifstream in(path);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(all.find("sk-replay-SECRET"), std::string::npos); // transcripts hold no keys
  }
  // No server now. Requests for different prompts come in another order; streaming or
  // not does not matter; repeats of one prompt get its answers in recorded order.
  auto r = make_provider("replay:" + path.string());
  std::string streamed;
  EXPECT_TRUE(same(r->complete(ask("b", true), [&](std::string_view t) { streamed += t; }), recorded[1]));
  EXPECT_EQ(streamed, recorded[1].text);
  EXPECT_TRUE(same(r->complete(ask("a")), recorded[0]));
  EXPECT_TRUE(same(r->complete(ask("a")), recorded[2]));
  try {
    (void)r->complete(ask("fail"));
    FAIL() << "expected the recorded error";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_request);
    EXPECT_NE(std::string(e.what()).find("bad field"), std::string::npos);
  }
  EXPECT_THROW((void)r->complete(ask("a")), error);     // no third answer was recorded
  EXPECT_THROW((void)r->complete(ask("never")), error); // never asked
  // A second replay of the same file gives the same answers again.
  auto r2 = make_provider("replay:" + path.string());
  EXPECT_TRUE(same(r2->complete(ask("a")), recorded[0]));
  std::filesystem::remove(path);
}

TEST(replay, missing_transcript_is_an_error) {
  EXPECT_THROW((void)make_provider("replay:/nonexistent/kforge.jsonl"), error);
}
