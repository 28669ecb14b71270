#pragma once
// Anthropic Messages (POST {base}/messages, `x-api-key`, `anthropic-version: 2023-06-01`).
// Streaming follows message_start -> content_block_delta (text_delta)... -> message_delta
// (stop_reason, cumulative usage) -> message_stop; ping and unknown events are ignored;
// an `error` event inside a 200 stream, or a stream without message_stop, is a failure.
//   auto p = llm::make_provider("anthropic:claude-sonnet-4-5");
// request::cache_system sends the system prompt as one text block marked
// cache_control {type: ephemeral}: later calls with the same system prefix read it from
// the cache (usage.cached_input_tokens) at a tenth of the price.
#include "llm/message.hpp"

#include <nlohmann/json_fwd.hpp>

namespace kforge::llm::anthropic {

inline constexpr const char* api_version = "2023-06-01";

/// The JSON body for `req`.
[[nodiscard]] nlohmann::json request_body(const request& req);

} // namespace kforge::llm::anthropic
