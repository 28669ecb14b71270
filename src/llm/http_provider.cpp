#include "llm/http_provider.hpp"
#include "llm/http_error.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace kforge::llm {

http_provider::http_provider(std::string scheme, std::string model, const provider_options& opts,
                             std::string default_base_url, std::string default_key_env)
    : m_scheme(std::move(scheme)), m_model(std::move(model)), m_opts(opts) {
  m_custom_base = !opts.base_url.empty();
  m_base_url = m_custom_base ? opts.base_url : std::move(default_base_url);
  while (!m_base_url.empty() && m_base_url.back() == '/') m_base_url.pop_back();
  m_key_env = opts.key_env.empty() ? std::move(default_key_env) : opts.key_env;
  if (const char* k = std::getenv(m_key_env.c_str())) m_key = k;
  if (m_key.empty() && !m_custom_base)
    throw error(error_kind::auth, m_scheme + ": $" + m_key_env +
                                      " is not set; export your API key there (or name another "
                                      "variable with key_env, or point --base-url / base_url at a local server)");
  m_slots = endpoint_slots(m_base_url, opts.max_concurrency);
}

response http_provider::complete(const request& req, const text_callback& on_text_delta) {
  request r = req;
  if (r.model.empty()) r.model = m_model;
  try {
    return with_retries(m_opts.retry, m_slots, [&] {
      try {
        return attempt(r, on_text_delta);
      } catch (const nlohmann::json::exception& e) { // a field of an unexpected type
        throw error(error_kind::malformed, m_scheme + ": unexpected response shape (" + e.what() + ")");
      } catch (const error& e) {
        if (e.kind() == error_kind::truncated) learn_from_cut_stream();
        throw;
      }
    });
  } catch (const error& e) {
    // The one place every error leaves a provider: servers echo keys back, URLs may hold them.
    throw error(e.kind(), redact(e.what(), m_key), e.retryable(), e.http_status(), e.retry_after())
        .with_partial_text(redact(e.partial_text(), m_key));
  }
}

void http_provider::learn_from_cut_stream() {
  // Called with this call's slot still held. A stream cut while others ran beside it is
  // what llama.cpp-style servers do when a new request arrives: send fewer at once.
  const int busy = m_slots->in_flight();
  if (busy > 1 && m_slots->lower_to(busy - 1)) // lowered: the limit is now busy - 1
    warn(m_base_url + " cut a streamed answer short while " + std::to_string(busy) +
         " calls ran at once; kforge now sends it at most " + std::to_string(busy - 1) +
         " at a time (set max_concurrency for this model in kforge.toml to choose)");
}

http_response http_provider::post(const http_request& h, const bool& delivered, const std::string* partial) const {
  http_response r;
  try {
    r = http_post(h);
  } catch (const error& e) {
    const std::string so_far = partial ? *partial : std::string();
    if (!delivered && so_far.empty()) throw;
    // Part of an answer arrived: the caller records it before any new attempt (search's
    // gateway retries, as a call of its own), and no caller sees the same text twice.
    throw error(e.kind(), std::string(e.what()) + " (after part of the answer had arrived)", false,
                e.http_status(), e.retry_after())
        .with_partial_text(so_far);
  }
  if (r.status < 200 || r.status >= 300) {
    std::string message, type;
    parse_error_body(r.body, message, type);
    const error e = http_error(m_scheme, static_cast<int>(r.status), r.headers, message, type, m_key_env);
    // Which URL answered: a 404 is most often a base URL without /v1.
    throw error(e.kind(), std::string(e.what()) + " (POST " + h.url + ")", e.retryable(), e.http_status(),
                e.retry_after());
  }
  return r;
}

} // namespace kforge::llm
