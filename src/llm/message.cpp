#include "llm/message.hpp"

#include "core/hash.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <iostream>
#include <mutex>
#include <utility>

namespace kforge::llm {

namespace {
constexpr std::array<std::pair<error_kind, std::string_view>, 11> k_kind_names{{
    {error_kind::auth, "auth"},
    {error_kind::rate_limit, "rate_limit"},
    {error_kind::overloaded, "overloaded"},
    {error_kind::server, "server"},
    {error_kind::timeout, "timeout"},
    {error_kind::bad_request, "bad_request"},
    {error_kind::network, "network"},
    {error_kind::malformed, "malformed"},
    {error_kind::budget, "budget"},
    {error_kind::unreachable, "unreachable"},
    {error_kind::truncated, "truncated"},
}};
} // namespace

bool ends_the_run(const error& e) {
  switch (e.kind()) {
  case error_kind::auth:
  case error_kind::unreachable: return true;
  case error_kind::bad_request: return e.http_status() == 404; // no such model, or a base URL without /v1
  default: return false;
  }
}

std::string_view error_kind_name(error_kind k) {
  for (const auto& [kind, name] : k_kind_names)
    if (kind == k) return name;
  return "unknown";
}

std::optional<error_kind> error_kind_from_name(std::string_view name) {
  for (const auto& [kind, n] : k_kind_names)
    if (n == name) return kind;
  return std::nullopt;
}

namespace {
std::mutex g_warn_mu;
std::function<void(const std::string&)> g_warn_sink;
} // namespace

void warn(const std::string& message) {
  std::lock_guard lock(g_warn_mu);
  if (g_warn_sink) g_warn_sink(message);
  else std::cerr << "kforge: warning: " << message << "\n";
}

void set_warning_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard lock(g_warn_mu);
  g_warn_sink = std::move(sink);
}

std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  constexpr std::string_view mark = "[redacted]";
  for (std::size_t pos = text.find(secret); pos != std::string::npos;
       pos = text.find(secret, pos + mark.size()))
    text.replace(pos, secret.size(), mark);
  return text;
}

nlohmann::json to_json(const request& r) {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : r.messages)
    msgs.push_back({{"role", m.role == role::user ? "user" : "assistant"}, {"text", m.text}});
  nlohmann::json j{{"model", r.model},           {"system", r.system}, {"messages", msgs},
                   {"max_tokens", r.max_tokens}, {"stop", r.stop}};
  j["temperature"] = r.temperature ? nlohmann::json(*r.temperature) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json to_json(const response& r) {
  return {{"text", r.text},
          {"stop_reason", r.stop_reason},
          {"model", r.model},
          {"id", r.id},
          {"usage",
           {{"input_tokens", r.usage.input_tokens},
            {"output_tokens", r.usage.output_tokens},
            {"cached_input_tokens", r.usage.cached_input_tokens},
            {"cache_write_tokens", r.usage.cache_write_tokens}}}};
}

response response_from_json(const nlohmann::json& j) {
  response r;
  r.text = j.value("text", "");
  r.stop_reason = j.value("stop_reason", "");
  r.model = j.value("model", "");
  r.id = j.value("id", "");
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    r.usage.input_tokens = u->value("input_tokens", int64_t{0});
    r.usage.output_tokens = u->value("output_tokens", int64_t{0});
    r.usage.cached_input_tokens = u->value("cached_input_tokens", int64_t{0});
    r.usage.cache_write_tokens = u->value("cache_write_tokens", int64_t{0});
  }
  return r;
}

std::string request_hash(const request& r) {
  // nlohmann::json keeps object keys sorted, so dump() is canonical.
  return sha256_hex(to_json(r).dump());
}

} // namespace kforge::llm
