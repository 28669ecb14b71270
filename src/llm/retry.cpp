#include "llm/retry.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>

namespace kforge::llm {

bool retryable_status(long status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

namespace {

std::optional<double> parse_number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

// IMF-fixdate, the form HTTP requires of senders: "Sun, 06 Nov 1994 08:49:37 GMT".
std::optional<std::chrono::system_clock::time_point> parse_http_date(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

} // namespace

std::optional<std::chrono::milliseconds>
server_retry_delay(const std::map<std::string, std::string>& headers,
                   std::chrono::system_clock::time_point now) {
  using std::chrono::milliseconds;
  if (auto it = headers.find("retry-after-ms"); it != headers.end())
    if (auto v = parse_number(it->second); v && *v >= 0) return milliseconds(std::llround(*v));
  if (auto it = headers.find("retry-after"); it != headers.end()) {
    if (auto v = parse_number(it->second); v && *v >= 0) return milliseconds(std::llround(*v * 1000));
    if (auto when = parse_http_date(it->second))
      return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(*when - now));
  }
  return std::nullopt;
}

std::chrono::milliseconds backoff_delay(const retry_policy& p, int retry, double jitter01) {
  const double base = static_cast<double>(p.base_delay.count()) * std::pow(2.0, std::min(retry, 30));
  const double capped = std::min(base, static_cast<double>(p.max_delay.count()));
  return std::chrono::milliseconds(std::llround(capped * (1.0 - 0.25 * jitter01)));
}

namespace {
thread_local double t_slot_wait_s = 0;
}

double slot_wait_s_this_thread() { return t_slot_wait_s; }
void reset_slot_wait_this_thread() { t_slot_wait_s = 0; }

void slots::acquire() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(m_mu);
  m_cv.wait(lock, [&] { return m_held < m_limit; });
  ++m_held;
  t_slot_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void slots::release() {
  {
    std::lock_guard lock(m_mu);
    --m_held;
  }
  m_cv.notify_one();
}

int slots::in_flight() const {
  std::lock_guard lock(m_mu);
  return m_held;
}

int slots::limit() const {
  std::lock_guard lock(m_mu);
  return m_limit;
}

bool slots::lower_to(int n) {
  std::lock_guard lock(m_mu);
  n = std::max(1, n);
  if (n >= m_limit) return false;
  m_limit = n;
  return true;
}

std::shared_ptr<slots> endpoint_slots(const std::string& base_url, int limit) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<slots>> table;
  std::lock_guard lock(mu);
  auto& s = table[base_url];
  if (!s) s = std::make_shared<slots>(std::max(1, limit));
  return s;
}

response with_retries(const retry_policy& p, const std::shared_ptr<slots>& limit,
                      const std::function<response()>& attempt, int* attempts_out) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  for (int n = 1;; ++n) {
    if (attempts_out) *attempts_out = n;
    try {
      if (!limit) return attempt();
      limit->acquire();
      struct releaser {
        slots* s;
        ~releaser() { s->release(); }
      } held{limit.get()};
      return attempt();
    } catch (const error& e) {
      if (!e.retryable() || n >= std::max(1, p.max_attempts)) throw;
      std::chrono::milliseconds wait = backoff_delay(p, n - 1, jitter(rng));
      if (auto asked = e.retry_after()) {
        if (*asked > p.max_server_delay)
          throw error(e.kind(),
                      std::string(e.what()) + " (the server asks to wait " +
                          std::to_string(asked->count() / 1000) + " s, more than the " +
                          std::to_string(p.max_server_delay.count() / 1000) +
                          " s allowed; try again later)",
                      false, e.http_status(), e.retry_after());
        wait = *asked;
      }
      std::this_thread::sleep_for(wait);
    }
  }
}

} // namespace kforge::llm
