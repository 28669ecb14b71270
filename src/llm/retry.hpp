#pragma once
// When and how long to retry a failed LLM call, and how many calls may be in flight
// per endpoint.
//   llm::retry_policy p{.max_attempts = 4};
//   auto r = llm::with_retries(p, llm::endpoint_slots("https://api.openai.com", 8), [&] { return call(); });
// Retried: errors marked retryable (HTTP 408, 409, 429, 5xx, 529, network errors,
// timeouts, unless the server said x-should-retry: false). The wait is the server's
// retry-after-ms, else its retry-after (seconds or an HTTP date), else
// min(base * 2^n, cap) times a jitter in (0.75, 1]. A server asking for more than
// max_server_delay is not retried: the error says how long it asked for.
#include "llm/message.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kforge::llm {

struct retry_policy {
  int max_attempts = 3; // first try included
  std::chrono::milliseconds base_delay{500};
  std::chrono::milliseconds max_delay{8'000};
  std::chrono::milliseconds max_server_delay{60'000};
};

/// Whether an HTTP status is worth retrying: 408, 409, 429, 529 and every 5xx.
[[nodiscard]] bool retryable_status(long status);

/// The wait a response asks for: `retry-after-ms` (milliseconds), else `retry-after`
/// (decimal seconds or an IMF-fixdate like "Wed, 21 Oct 2015 07:28:00 GMT", read
/// against `now`). Header names lowercased. nullopt when absent or unreadable.
[[nodiscard]] std::optional<std::chrono::milliseconds>
server_retry_delay(const std::map<std::string, std::string>& headers,
                   std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

/// Backoff before retry number `retry` (0-based): min(base * 2^retry, max) * (1 - 0.25 * jitter01).
[[nodiscard]] std::chrono::milliseconds backoff_delay(const retry_policy& p, int retry, double jitter01);

// A counting semaphore: at most `limit` holders at once. The limit can be lowered while
// calls hold slots (a server that cuts streams under load): holders finish, and no new
// one starts until fewer than the new limit are in flight.
class slots {
public:
  explicit slots(int limit) : m_limit(limit) {}
  void acquire();
  void release();
  [[nodiscard]] int in_flight() const;
  [[nodiscard]] int limit() const;
  /// Lowers the limit to max(1, n); @return whether it was higher.
  bool lower_to(int n);

private:
  mutable std::mutex m_mu;
  std::condition_variable m_cv;
  int m_limit;
  int m_held = 0;
};

/// Seconds this thread has waited for endpoint slots since the last reset (with_retries adds
/// each wait): a call's recorded duration leaves out its time in the queue.
[[nodiscard]] double slot_wait_s_this_thread();
void reset_slot_wait_this_thread();

/// The process-wide slots of one endpoint (key: its base URL). The first caller's
/// limit fixes the count for that key; later limits for the same key are ignored.
[[nodiscard]] std::shared_ptr<slots> endpoint_slots(const std::string& base_url, int limit);

/// Runs `attempt` until it returns, throws a non-retryable llm::error, or max_attempts
/// is reached (then the last error is rethrown). Holds one of `limit`'s slots during
/// each attempt, not while waiting between attempts. `attempts_out`, when given,
/// receives how many attempts were made.
[[nodiscard]] response with_retries(const retry_policy& p, const std::shared_ptr<slots>& limit,
                                    const std::function<response()>& attempt,
                                    int* attempts_out = nullptr);

} // namespace kforge::llm
