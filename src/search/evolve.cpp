// evolve: islands and a quality-diversity archive. I islands evolve apart; each keeps a
// MAP-Elites archive with one elite (the fastest passing candidate) per cell of candidate
// features, so that a slower kernel of another structure stays a parent instead of being
// crowded out by the single best (which is how branch and refine can lock onto one design).
// Each round every island draws B parents from its archive, uniformly over cells, and asks
// for a faster variant of each, all in parallel; every M rounds each island's best migrates
// to the next island (a ring), so a good design spreads without the islands converging.
#include "search/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <sstream>

namespace kforge::search {

namespace {

// The cell of a candidate: its size (log2 of its code lines) and its structure, read off
// what every candidate has: for CUDA the build's resources (registers, shared memory), for
// C++ the parallel and vector constructs it uses.
std::string cell_of(const outcome& o, bool cuda) {
  int lines = 0;
  std::istringstream in(o.source);
  for (std::string l; std::getline(in, l);)
    if (l.find_first_not_of(" \t") != std::string::npos) ++lines;
  const int size = lines > 0 ? static_cast<int>(std::log2(lines)) : 0;
  std::string structure;
  if (cuda) {
    int regs = 0;
    bool smem = false;
    if (o.doc.is_object() && o.doc.contains("builds"))
      for (auto& b : o.doc["builds"])
        if (b.value("role", "") == "candidate" && b.contains("resources") && b["resources"].is_array())
          for (auto& r : b["resources"]) {
            regs = std::max(regs, r.value("registers", 0));
            smem = smem || r.value("smem_bytes", 0) > 0;
          }
    structure = fmt::format("regs<={}{}", regs <= 32 ? 32 : regs <= 64 ? 64 : regs <= 128 ? 128 : 255, smem ? "+smem" : "");
  } else {
    const bool threads = o.source.find("#pragma omp parallel") != std::string::npos ||
                         o.source.find("std::thread") != std::string::npos;
    const bool vector = o.source.find("simd") != std::string::npos || o.source.find("_mm") != std::string::npos ||
                        o.source.find("__m256") != std::string::npos;
    structure = fmt::format("{}{}", threads ? "threads" : "serial", vector ? "+simd" : "");
  }
  return fmt::format("{}/lines~2^{}", structure, size);
}

struct island {
  std::map<std::string, outcome> cells; // feature cell -> its elite
  [[nodiscard]] const outcome* best() const {
    const outcome* b = nullptr;
    for (auto& [_, o] : cells)
      if (o.passed() && (!b || *o.median_s < *b->median_s)) b = &o;
    return b;
  }
  /// Keeps `o` if its cell is empty or it is faster than the cell's elite. @return kept
  bool offer(const outcome& o, bool cuda) {
    if (!o.passed()) return false;
    const auto key = cell_of(o, cuda);
    auto it = cells.find(key);
    if (it != cells.end() && it->second.passed() && *it->second.median_s <= *o.median_s) return false;
    cells[key] = o;
    return true;
  }
};

class evolve_strategy final : public strategy {
public:
  void run(session& s) override {
    propose::prompt_builder prompts;
    prompts.use_dialect(s.options().dialect);
    const auto dev = device_facts_of(s);
    const auto& p = s.problem();
    const auto& opt = s.options();
    const bool cuda = p.backend == problem::backend_kind::cuda;
    const int n_islands = std::max(1, opt.islands), children = std::max(1, opt.implementations);
    const int migrate_every = std::max(1, opt.migrate_every);

    auto seed = start_from_seed(s, opt.tune_budget);
    s.end_round(0, "seed");
    std::vector<island> islands(static_cast<std::size_t>(n_islands));
    // Every island starts from the seed; a failed seed is a parent until something passes.
    for (auto& is : islands) is.offer(seed, cuda);
    if (!seed.passed())
      s.emit({{"event", "note"}, {"message", "the seed did not pass: " + seed.message + "; evolving from it anyway"}});

    for (int round = 1; !s.stop_reason(); ++round) {
      std::vector<std::future<outcome>> jobs; // island i's c-th child at i * children + c
      std::vector<outcome> parents; // stable storage: the jobs hold pointers into it
      parents.reserve(islands.size() * static_cast<std::size_t>(children));
      for (std::size_t i = 0; i < islands.size(); ++i)
        for (int c = 0; c < children; ++c) {
          // Uniform over cells, not over fitness: diversity is the point of the archive.
          const auto& cells = islands[i].cells;
          if (cells.empty()) {
            parents.push_back(seed);
          } else {
            auto it = cells.begin();
            std::advance(it, static_cast<long>(s.rng()() % cells.size()));
            parents.push_back(it->second);
          }
        }
      for (std::size_t i = 0, k = 0; i < islands.size(); ++i)
        for (int c = 0; c < children; ++c, ++k) {
          const outcome* parent = &parents[k];
          auto req = prompts.implement(p, dev, ref_of(*parent));
          req.replay_key = fmt::format("evolve/r{}/i{}/c{}", round, i + 1, c + 1);
          const std::string label = fmt::format("r{} island {} #{}", round, i + 1, c + 1);
          jobs.push_back(std::async(std::launch::async, [&s, req, parent, round, label] {
            return propose_and_judge(s, req, "code", parent, "evolve", round, std::nullopt, label);
          }));
        }
      const std::vector<outcome> results = wait_all(jobs);
      int kept = 0;
      for (std::size_t k = 0; k < results.size(); ++k) kept += islands[k / children].offer(results[k], cuda);

      if (round % migrate_every == 0 && islands.size() > 1) {
        std::vector<outcome> migrants;
        for (auto& is : islands)
          if (auto* b = is.best()) migrants.push_back(*b);
          else migrants.push_back(outcome{});
        for (std::size_t i = 0; i < islands.size(); ++i)
          if (migrants[i].passed()) islands[(i + 1) % islands.size()].offer(migrants[i], cuda);
      }
      std::string sizes;
      for (std::size_t i = 0; i < islands.size(); ++i)
        sizes += fmt::format("{}island {}: {} cells", i ? ", " : "", i + 1, islands[i].cells.size());
      s.emit({{"event", "note"},
              {"message", fmt::format("round {}: {} of {} children entered an archive ({}){}", round, kept, jobs.size(),
                                      sizes, round % migrate_every == 0 && islands.size() > 1 ? "; migrated" : "")}});
      s.end_round(round);
    }
  }
};

} // namespace

std::unique_ptr<strategy> make_evolve_strategy() { return std::make_unique<evolve_strategy>(); }

} // namespace kforge::search
