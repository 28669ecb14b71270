#pragma once
// Shared by the HTTP providers: the llm::error for a non-2xx response or an error
// object inside a 200 body or stream, with a message that says what to do.
//   throw llm::http_error("openai", 429, headers, "Rate limit reached", "rate_limit_exceeded", "OPENAI_API_KEY");
#include "llm/message.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>

namespace kforge::llm {

/// `type` is the provider's error type or code ("rate_limit_error", "insufficient_quota",
/// "overloaded_error"...), used to refine the kind (and to refuse retrying a spent quota);
/// status 0 means the error came inside a 200 response. x-should-retry overrides.
[[nodiscard]] error http_error(std::string_view provider, int status,
                               const std::map<std::string, std::string>& headers,
                               std::string_view message, std::string_view type,
                               std::string_view key_env);

/// The provider's {error:{message,type|code}} (OpenAI, Anthropic, OpenRouter) or
/// {object:"error",message} (vLLM) from a body; the raw body (shortened) when unreadable.
void parse_error_body(std::string_view body, std::string& message, std::string& type);

/// j[key] when it is a string, else "" (provider bodies omit and null fields freely).
[[nodiscard]] std::string str_at(const nlohmann::json& j, const char* key);

} // namespace kforge::llm
