#include "worker/judge_keeper.hpp"

#include "core/error.hpp"

namespace kforge::worker {

judge_keeper::~judge_keeper() {
  for (auto& [key, j] : m_idle) try {
      (void)j->finish();
    } catch (...) {
    }
}

std::unique_ptr<device_judge> judge_keeper::take(const worker_context& ctx, const role_artifacts& builds,
                                                 const nlohmann::json& trials, int sets, std::uint64_t canary_seed) {
  std::unique_ptr<device_judge> j;
  {
    std::lock_guard lock(m_mutex);
    auto it = m_idle.find(device_judge::key_of(ctx, builds, sets, trials.size()));
    if (it == m_idle.end()) return nullptr;
    j = std::move(it->second);
    std::erase(m_order, it->first);
    m_idle.erase(it);
  }
  try {
    j->reset(trials, canary_seed);
    return j;
  } catch (const error&) {
    return nullptr; // it ended meanwhile: the caller starts a new one
  }
}

void judge_keeper::keep(std::unique_ptr<device_judge> j) {
  if (!j) return;
  std::vector<std::unique_ptr<device_judge>> ended;
  {
    std::lock_guard lock(m_mutex);
    const std::string key = j->key();
    std::erase(m_order, key);
    m_order.push_back(key);
    auto& slot = m_idle[key];
    if (slot) ended.push_back(std::move(slot));
    slot = std::move(j);
    while (m_idle.size() > std::max<std::size_t>(m_max, 1)) {
      ended.push_back(std::move(m_idle[m_order.front()]));
      m_idle.erase(m_order.front());
      m_order.erase(m_order.begin());
    }
  }
  for (auto& e : ended) try { // outside the lock: ending a judge waits for its process
      if (e) (void)e->finish();
    } catch (...) {
    }
}

std::size_t judge_keeper::size() {
  std::lock_guard lock(m_mutex);
  return m_idle.size();
}

} // namespace kforge::worker
