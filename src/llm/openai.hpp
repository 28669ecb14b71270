#pragma once
// OpenAI Chat Completions (POST {base}/chat/completions), the API vLLM, llama.cpp,
// Ollama (/v1) and OpenRouter also serve. Streaming reads `choices[0].delta.content`
// until `data: [DONE]`, asks for the usage chunk (stream_options.include_usage), and
// treats an `error` object in any chunk, or a stream without [DONE], as a failure.
//   auto p = llm::make_provider("openai:gpt-4o-mini", {.base_url = "http://localhost:8000/v1"});
// Against api.openai.com the length limit is sent as max_completion_tokens; against a
// custom base URL as max_tokens, which the compatible servers read.
#include "llm/message.hpp"

#include <nlohmann/json_fwd.hpp>

namespace kforge::llm::openai {

/// The JSON body for `req`.
[[nodiscard]] nlohmann::json request_body(const request& req, bool max_completion_tokens);

} // namespace kforge::llm::openai
