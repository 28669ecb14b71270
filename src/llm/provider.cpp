#include "llm/provider.hpp"

#include "llm/http_provider.hpp"
#include "llm/replay.hpp"

namespace kforge::llm {

std::unique_ptr<provider> make_provider(std::string_view spec, const provider_options& opts) {
  const auto colon = spec.find(':');
  const std::string scheme(spec.substr(0, colon));
  const std::string rest(colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1));
  if (colon == std::string_view::npos || rest.empty())
    throw error(error_kind::bad_request, "llm: '" + std::string(spec) +
                                             "' is not a provider spec; write openai:MODEL, "
                                             "anthropic:MODEL or replay:PATH");
  if (scheme == "openai") return make_openai(rest, opts);
  if (scheme == "anthropic") return make_anthropic(rest, opts);
  if (scheme == "replay") return std::make_unique<replay>(rest);
  throw error(error_kind::bad_request, "llm: unknown provider '" + scheme +
                                           "' in '" + std::string(spec) +
                                           "'; known: openai, anthropic, replay");
}

} // namespace kforge::llm
