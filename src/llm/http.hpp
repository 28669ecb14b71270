#pragma once
// A small blocking HTTP client over libcurl, enough for LLM APIs: POST a JSON body with
// headers, bounded by a connect timeout, a total timeout and (for streams) an idle
// timeout, optionally handing a 2xx body to a callback as it arrives.
//   auto r = llm::http_post({.url = u, .headers = {{"content-type", "application/json"}}, .body = b});
// Transport failures throw llm::error (kind network or timeout, retryable); any HTTP
// status, 4xx and 5xx included, is returned for the caller to interpret.
#include "llm/message.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kforge::llm {

struct http_request {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{600'000};  // 0: none
  // No byte received for this long aborts with a timeout (0: none). Meant for streams,
  // where the server sends tokens or keep-alives; a non-streamed answer may legitimately
  // be silent for minutes. Checked about once a second (libcurl's progress interval).
  std::chrono::milliseconds idle_timeout{0};
  // When set, a 2xx body goes here chunk by chunk (any size) instead of into
  // http_response::body; an exception it throws aborts the transfer and is rethrown
  // from http_post. Non-2xx bodies are always collected whole.
  std::function<void(std::string_view)> on_body;
};

struct http_response {
  long status = 0;
  std::map<std::string, std::string> headers; // names lowercased; the last value wins
  std::string body;
};

/// @post returns only once the transfer has finished; a status was received.
[[nodiscard]] http_response http_post(const http_request& req);

} // namespace kforge::llm
