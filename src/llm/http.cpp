#include "llm/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>
#include <mutex>

namespace kforge::llm {

namespace {

// curl_global_init is not thread-safe and must run once before any other libcurl call.
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

using clock = std::chrono::steady_clock;

struct transfer {
  CURL* curl = nullptr;
  const http_request* req = nullptr;
  http_response* res = nullptr;
  clock::time_point last_byte = clock::now();
  bool stalled = false;
  std::exception_ptr callback_error;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  const std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) { // a new response (after 100-continue or a redirect)
    t->res->headers.clear();
  } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    t->res->headers[lower(std::string(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<transfer*>(user);
  t->last_byte = clock::now();
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  const std::string_view chunk(data, size * n);
  if (t->req->on_body && status >= 200 && status < 300) {
    // Exceptions must not cross libcurl's C frames: park it, abort, rethrow later.
    try {
      t->req->on_body(chunk);
    } catch (...) {
      t->callback_error = std::current_exception();
      return 0; // != size*n: libcurl aborts with CURLE_WRITE_ERROR
    }
  } else {
    t->res->body.append(chunk);
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<transfer*>(user);
  const auto idle = t->req->idle_timeout;
  if (idle.count() > 0 && clock::now() - t->last_byte > idle) {
    t->stalled = true;
    return 1; // abort
  }
  return 0;
}

} // namespace

http_response http_post(const http_request& req) {
  global_init();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw error(error_kind::network, "http: curl_easy_init failed (out of memory?)", true);
  curl_slist* raw_headers = nullptr;
  for (const auto& [k, v] : req.headers)
    raw_headers = curl_slist_append(raw_headers, (k + ": " + v).c_str());
  // libcurl would otherwise send "Expect: 100-continue" for large bodies and wait for it.
  raw_headers = curl_slist_append(raw_headers, "Expect:");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(raw_headers, &curl_slist_free_all);

  http_response res;
  transfer t{.curl = curl.get(), .req = &req, .res = &res};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); // no SIGALRM from DNS timeouts in threads
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L); // long generations: keep idle links alive
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(req.total_timeout.count()));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ""); // whatever libcurl can decode

  const CURLcode rc = curl_easy_perform(c);
  if (t.callback_error) std::rethrow_exception(t.callback_error);
  // The URL may carry a key in a query string for some gateways; the caller redacts.
  if (t.stalled)
    throw error(error_kind::timeout,
                "http: " + req.url + ": no data for " + std::to_string(req.idle_timeout.count()) +
                    " ms; the stream stalled (raise the idle timeout if the model thinks silently)",
                true);
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw error(error_kind::timeout,
                "http: " + req.url + ": timed out (" + curl_easy_strerror(rc) +
                    "); raise the timeout or check the server",
                true);
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY)
    throw error(error_kind::unreachable,
                "http: " + req.url + ": " + curl_easy_strerror(rc) +
                    "; is the server running, and is the base URL right (host, port, /v1)?",
                true); // a server still starting: the retries' few attempts
  if (rc != CURLE_OK)
    throw error(error_kind::network,
                "http: " + req.url + ": " + curl_easy_strerror(rc) +
                    "; check the base URL and that the server is reachable",
                true);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res.status);
  return res;
}

} // namespace kforge::llm
