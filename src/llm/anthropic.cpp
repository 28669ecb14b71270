#include "llm/anthropic.hpp"

#include "llm/http.hpp"
#include "llm/http_error.hpp"
#include "llm/http_provider.hpp"
#include "llm/sse.hpp"

#include <nlohmann/json.hpp>

namespace kforge::llm {

namespace anthropic {

nlohmann::json request_body(const request& req) {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : req.messages)
    msgs.push_back({{"role", m.role == role::user ? "user" : "assistant"}, {"content", m.text}});
  nlohmann::json body{{"model", req.model}, {"max_tokens", req.max_tokens}, {"messages", std::move(msgs)}};
  if (!req.system.empty()) {
    if (req.cache_system)
      body["system"] = nlohmann::json::array(
          {{{"type", "text"}, {"text", req.system}, {"cache_control", {{"type", "ephemeral"}}}}});
    else
      body["system"] = req.system;
  }
  if (req.temperature) body["temperature"] = *req.temperature;
  if (!req.stop.empty()) body["stop_sequences"] = req.stop;
  if (req.stream) body["stream"] = true;
  return body;
}

} // namespace anthropic

namespace {

int64_t int_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}


// Anthropic counts uncached, cache-written and cache-read input apart; usage::input_tokens
// is their sum. Fields absent from a partial usage (message_delta) keep their value.
void read_usage(const nlohmann::json& u, usage& out) {
  if (!u.is_object()) return;
  const bool has_input = u.contains("input_tokens");
  if (u.contains("cache_read_input_tokens")) out.cached_input_tokens = int_at(u, "cache_read_input_tokens");
  if (u.contains("cache_creation_input_tokens")) out.cache_write_tokens = int_at(u, "cache_creation_input_tokens");
  if (has_input)
    out.input_tokens = int_at(u, "input_tokens") + out.cached_input_tokens + out.cache_write_tokens;
  if (u.contains("output_tokens")) out.output_tokens = int_at(u, "output_tokens");
}

class anthropic_provider final : public http_provider {
public:
  anthropic_provider(std::string model, const provider_options& opts)
      : http_provider("anthropic", std::move(model), opts, "https://api.anthropic.com/v1",
                      "ANTHROPIC_API_KEY") {}

private:
  [[noreturn]] void throw_error_object(const nlohmann::json& j, const std::map<std::string, std::string>& headers) {
    std::string message, type;
    parse_error_body(j.dump(), message, type);
    error err = http_error("anthropic", 0, headers, message, type, m_key_env);
    throw err;
  }

  response attempt(const request& req, const text_callback& on_delta) override {
    http_request h{.url = m_base_url + "/messages",
                   .headers = {{"content-type", "application/json"},
                               {"anthropic-version", anthropic::api_version}},
                   .body = anthropic::request_body(req).dump(),
                   .connect_timeout = m_opts.connect_timeout,
                   .total_timeout = m_opts.total_timeout};
    if (!m_key.empty()) h.headers.emplace_back("x-api-key", m_key);

    response out;
    bool done = false, delivered = false;
    sse_parser parser;
    const std::map<std::string, std::string> no_headers;
    auto on_event = [&](const sse_event& e) {
      const auto j = nlohmann::json::parse(e.data, nullptr, false);
      if (!j.is_object())
        throw error(error_kind::malformed, "anthropic: a stream event is not JSON: " + e.data.substr(0, 200));
      const std::string type = e.event.empty() ? str_at(j, "type") : e.event;
      if (type == "error") throw_error_object(j, no_headers);
      if (type == "message_start") {
        if (auto m = j.find("message"); m != j.end() && m->is_object()) {
          out.id = str_at(*m, "id");
          out.model = str_at(*m, "model");
          if (auto u = m->find("usage"); u != m->end()) read_usage(*u, out.usage);
        }
      } else if (type == "content_block_delta") {
        if (auto d = j.find("delta"); d != j.end() && d->is_object() && str_at(*d, "type") == "text_delta") {
          const std::string t = str_at(*d, "text");
          if (!t.empty()) {
            out.text += t;
            if (on_delta) { // text a caller has seen: a retry would show it twice
              delivered = true;
              on_delta(t);
            }
          }
        }
      } else if (type == "message_delta") {
        if (auto d = j.find("delta"); d != j.end() && d->is_object())
          if (const std::string s = str_at(*d, "stop_reason"); !s.empty()) out.stop_reason = s;
        if (auto u = j.find("usage"); u != j.end()) read_usage(*u, out.usage); // cumulative
      } else if (type == "message_stop") {
        done = true;
      }
      // ping, content_block_start/stop, thinking and tool deltas, unknown events: ignored.
    };
    if (req.stream) {
      h.idle_timeout = m_opts.stream_idle_timeout;
      h.on_body = [&](std::string_view chunk) { parser.feed(chunk, on_event); };
    }

    const http_response r = post(h, delivered, &out.text);
    if (req.stream) {
      if (!done)
        throw error(error_kind::truncated,
                    "anthropic: the stream ended without message_stop; the answer is truncated", false)
            .with_partial_text(out.text);
      return out;
    }
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object())
      throw error(error_kind::malformed, "anthropic: the response is not JSON: " + r.body.substr(0, 200));
    if (str_at(j, "type") == "error") throw_error_object(j, r.headers);
    out.id = str_at(j, "id");
    out.model = str_at(j, "model");
    out.stop_reason = str_at(j, "stop_reason");
    if (auto u = j.find("usage"); u != j.end()) read_usage(*u, out.usage);
    auto content = j.find("content");
    if (content == j.end() || !content->is_array())
      throw error(error_kind::malformed, "anthropic: the response has no content: " + r.body.substr(0, 200));
    for (const auto& block : *content)
      if (block.is_object() && str_at(block, "type") == "text") out.text += str_at(block, "text");
    if (on_delta && !out.text.empty()) on_delta(out.text);
    return out;
  }
};

} // namespace

std::unique_ptr<provider> make_anthropic(std::string model, const provider_options& opts) {
  return std::make_unique<anthropic_provider>(std::move(model), opts);
}

} // namespace kforge::llm
