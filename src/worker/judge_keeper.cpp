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
  std::unique_ptr<device_judge> older;
  {
    std::lock_guard lock(m_mutex);
    auto& slot = m_idle[j->key()];
    older = std::move(slot);
    slot = std::move(j);
  }
  if (older) try {
      (void)older->finish();
    } catch (...) {
    }
}

std::size_t judge_keeper::size() {
  std::lock_guard lock(m_mutex);
  return m_idle.size();
}

} // namespace kforge::worker
