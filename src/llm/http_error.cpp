#include "llm/http_error.hpp"

#include "llm/retry.hpp"

#include <nlohmann/json.hpp>

namespace kforge::llm {

void parse_error_body(std::string_view body, std::string& message, std::string& type) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  auto str = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump(); };
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end() && e->is_object()) {
      message = str(e->value("message", nlohmann::json()));
      type = str(e->value("type", nlohmann::json()));
      if (type.empty()) type = str(e->value("code", nlohmann::json()));
      if (auto c = e->find("code"); c != e->end() && c->is_string() && (type == "insufficient_quota" || type.empty()))
        type = c->get<std::string>();
      return;
    }
    if (auto o = j.find("object"); o != j.end() && *o == "error") {
      message = str(j.value("message", nlohmann::json()));
      type = str(j.value("type", nlohmann::json()));
      return;
    }
  }
  message = std::string(body.substr(0, 500));
  type.clear();
}

error http_error(std::string_view provider, int status,
                 const std::map<std::string, std::string>& headers, std::string_view message,
                 std::string_view type, std::string_view key_env) {
  error_kind kind = error_kind::bad_request;
  std::string advice;
  if (status == 401 || status == 403 || type == "authentication_error" || type == "permission_error") {
    kind = error_kind::auth;
    advice = "check the key in $" + std::string(key_env) + " and its permissions";
  } else if (status == 429 || type == "rate_limit_error" || type == "rate_limit_exceeded") {
    kind = error_kind::rate_limit;
    advice = "rate limited; lower the concurrency or wait";
  } else if (status == 529 || type == "overloaded_error") {
    kind = error_kind::overloaded;
    advice = "the service is overloaded; try again later";
  } else if (status == 408 || status == 504 || type == "timeout_error") {
    kind = error_kind::timeout;
    advice = "the server timed out; try again or shorten the request";
  } else if (status >= 500 || status == 409 || type == "api_error" || type == "server_error") {
    kind = error_kind::server;
    advice = "server error; try again later";
  } else {
    advice = "the request was rejected; check the model name and request fields";
  }
  bool retryable = status != 0 ? retryable_status(status)
                               : (kind == error_kind::rate_limit || kind == error_kind::overloaded ||
                                  kind == error_kind::server || kind == error_kind::timeout);
  // A spent quota or spend limit answers 429 too, but waiting does not refill it.
  for (std::string_view q : {"insufficient_quota", "credit_balance_exhausted", "billing_error",
                             "organization_spend_limit_exceeded", "project_spend_limit_exceeded",
                             "organization_usage_limit_exceeded"})
    if (type == q) {
      retryable = false;
      kind = error_kind::rate_limit;
      advice = "the account's quota or spend limit is exhausted; add credit or raise the limit";
    }
  if (auto it = headers.find("x-should-retry"); it != headers.end()) {
    if (it->second == "true") retryable = true;
    if (it->second == "false") retryable = false;
  }
  std::string msg = std::string(provider) + ": ";
  msg += status != 0 ? "HTTP " + std::to_string(status) : std::string("error in the response stream");
  if (!type.empty()) msg += " " + std::string(type);
  if (!message.empty()) msg += ": " + std::string(message);
  for (const char* id : {"x-request-id", "request-id"})
    if (auto it = headers.find(id); it != headers.end()) msg += " (request id " + it->second + ")";
  msg += "; " + advice;
  return error(kind, std::move(msg), retryable, status, server_retry_delay(headers));
}

std::string str_at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace kforge::llm
