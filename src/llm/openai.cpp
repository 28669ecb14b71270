#include "llm/openai.hpp"

#include "llm/http.hpp"
#include "llm/http_error.hpp"
#include "llm/http_provider.hpp"
#include "llm/sse.hpp"
#include "llm/usage.hpp"

#include <nlohmann/json.hpp>

namespace kforge::llm {

namespace openai {

nlohmann::json request_body(const request& req, bool max_completion_tokens) {
  nlohmann::json msgs = nlohmann::json::array();
  if (!req.system.empty()) msgs.push_back({{"role", "system"}, {"content", req.system}});
  for (const auto& m : req.messages)
    msgs.push_back({{"role", m.role == role::user ? "user" : "assistant"}, {"content", m.text}});
  nlohmann::json body{{"model", req.model}, {"messages", std::move(msgs)}};
  body[max_completion_tokens ? "max_completion_tokens" : "max_tokens"] = req.max_tokens;
  if (req.temperature) body["temperature"] = *req.temperature;
  if (!req.stop.empty()) body["stop"] = req.stop;
  if (req.stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

} // namespace openai

namespace {

int64_t int_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

void read_usage(const nlohmann::json& u, usage& out) {
  if (!u.is_object()) return;
  out.input_tokens = int_at(u, "prompt_tokens");
  out.output_tokens = int_at(u, "completion_tokens");
  if (auto d = u.find("prompt_tokens_details"); d != u.end() && d->is_object()) {
    out.cached_input_tokens = int_at(*d, "cached_tokens");
    out.cache_write_tokens = int_at(*d, "cache_write_tokens");
  }
}


class openai_provider final : public http_provider {
public:
  openai_provider(std::string model, const provider_options& opts)
      : http_provider("openai", std::move(model), opts, "https://api.openai.com/v1", "OPENAI_API_KEY") {}

private:
  // An error object inside a 200 answer or chunk: {error:{...}} or vLLM's {object:"error"}.
  void throw_if_error(const nlohmann::json& j, const std::map<std::string, std::string>& headers) {
    if (!j.contains("error") && str_at(j, "object") != "error") return;
    std::string message, type;
    parse_error_body(j.dump(), message, type);
    int status = 0;
    if (auto e = j.find("error"); e != j.end() && e->is_object() && e->contains("code") &&
                                  (*e)["code"].is_number_integer())
      status = (*e)["code"].get<int>(); // OpenRouter puts the HTTP-like status here
    error err = http_error("openai", status, headers, message, type, m_key_env);
    throw error(err.kind(), err.what(), err.retryable(), 0, err.retry_after());
  }

  response attempt(const request& req, const text_callback& on_delta) override {
    const bool official = !m_custom_base;
    http_request h{.url = m_base_url + "/chat/completions",
                   .headers = {{"content-type", "application/json"}},
                   .body = openai::request_body(req, official).dump(),
                   .connect_timeout = m_opts.connect_timeout,
                   .total_timeout = m_opts.total_timeout};
    if (!m_key.empty()) h.headers.emplace_back("authorization", "Bearer " + m_key);

    response out;
    bool done = false, delivered = false;
    sse_parser parser;
    std::map<std::string, std::string> no_headers;
    auto on_event = [&](const sse_event& e) {
      if (e.data.starts_with("[DONE]")) {
        done = true;
        return;
      }
      const auto j = nlohmann::json::parse(e.data, nullptr, false);
      if (!j.is_object())
        throw error(error_kind::malformed, "openai: a stream event is not JSON: " + e.data.substr(0, 200));
      throw_if_error(j, no_headers);
      if (out.id.empty()) out.id = str_at(j, "id");
      if (out.model.empty()) out.model = str_at(j, "model");
      if (auto u = j.find("usage"); u != j.end()) read_usage(*u, out.usage);
      auto ch = j.find("choices");
      if (ch == j.end() || !ch->is_array()) return;
      for (const auto& c : *ch) {
        if (int_at(c, "index") != 0) continue; // only one choice is asked for
        if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
          const std::string t = str_at(*d, "content");
          if (!t.empty()) {
            out.text += t;
            if (on_delta) { // text a caller has seen: a retry would show it twice
              delivered = true;
              on_delta(t);
            }
          }
        }
        if (const std::string f = str_at(c, "finish_reason"); !f.empty()) out.stop_reason = f;
      }
    };
    if (req.stream) {
      h.idle_timeout = m_opts.stream_idle_timeout;
      h.on_body = [&](std::string_view chunk) { parser.feed(chunk, on_event); };
    }

    const http_response r = post(h, delivered, &out.text);
    if (req.stream) {
      if (!done && out.text.empty() && out.stop_reason.empty())
        throw error(error_kind::bad_request, // this prompt, not the server: no retry
                    "openai: " + h.url + " ended the stream before any answer (no text, no [DONE]); llama.cpp's "
                    "server does this when the prompt does not fit its context (the prompt is about " +
                    std::to_string(estimate_usage(req, {}).input_tokens) + " tokens): start it with a larger context (-c / n_ctx) or use a model with one");
      if (!done)
        throw error(error_kind::truncated, "openai: the stream ended without [DONE]; the answer is truncated",
                    false) // retried by the caller, which records the partial answer first
            .with_partial_text(out.text);
      if (out.stop_reason.empty())
        throw error(error_kind::truncated,
                    "openai: the stream ended with [DONE] but no finish_reason: the server cut the answer short "
                    "(llama.cpp's server does this to a running stream when another request arrives)",
                    false) // retried by the caller, which records the partial answer first
            .with_partial_text(out.text);
      return out;
    }
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object())
      throw error(error_kind::malformed, "openai: the response is not JSON: " + r.body.substr(0, 200));
    throw_if_error(j, r.headers);
    out.id = str_at(j, "id");
    out.model = str_at(j, "model");
    if (auto u = j.find("usage"); u != j.end()) read_usage(*u, out.usage);
    auto ch = j.find("choices");
    if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object())
      throw error(error_kind::malformed, "openai: the response has no choices: " + r.body.substr(0, 200));
    const auto& c0 = (*ch)[0];
    out.stop_reason = str_at(c0, "finish_reason");
    if (auto m = c0.find("message"); m != c0.end() && m->is_object()) out.text = str_at(*m, "content");
    if (on_delta && !out.text.empty()) on_delta(out.text);
    return out;
  }
};

} // namespace

std::unique_ptr<provider> make_openai(std::string model, const provider_options& opts) {
  return std::make_unique<openai_provider>(std::move(model), opts);
}

} // namespace kforge::llm
