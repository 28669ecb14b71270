#pragma once
// Judges kept across the evaluations of one search (issue 18, point 5): the trusted judge
// process (device_judge.hpp) and, for a [torch] problem, the helper's mapping of its memory
// are set up once per problem and device, not once per candidate. Each candidate still gets
// fresh worker processes; the judge it meets has new trials, no truth of the last candidate's
// trials and new canaries (device_judge::reset). A judge whose evaluation failed half-way is
// never kept: only one handed back by keep() is reused.
//   auto keeper = std::make_shared<worker::judge_keeper>();
//   eo.judges = keeper;   // every evaluate(p, ..., eo) of the search
#include "worker/device_judge.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kforge::worker {

class judge_keeper {
public:
  judge_keeper() = default;
  ~judge_keeper();
  judge_keeper(const judge_keeper&) = delete;
  judge_keeper& operator=(const judge_keeper&) = delete;

  /// A kept judge for this evaluation (same problem, device, builds and sets), reset to its
  /// trials; nullptr when none is kept or the kept one no longer answers.
  [[nodiscard]] std::unique_ptr<device_judge> take(const worker_context& ctx, const role_artifacts& builds,
                                                   const nlohmann::json& trials, int sets, std::uint64_t canary_seed);
  /// Keeps `j` for the next evaluation; one judge per key (an older one is ended).
  void keep(std::unique_ptr<device_judge> j);
  /// How many judges are kept now.
  [[nodiscard]] std::size_t size();

private:
  std::mutex m_mutex;
  std::map<std::string, std::unique_ptr<device_judge>> m_idle;
};

} // namespace kforge::worker
