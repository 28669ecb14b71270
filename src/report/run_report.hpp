#pragma once
// What a `kforge optimize` run did, read back from the experiment record: one document per
// run (kforge.run/1) or per list of runs (kforge.show-runs/1), their terminal renderings,
// and the export of a run's best candidate as a standalone source tree.
//   store::store db{"kforge.db"};
//   auto j = report::run_json(db, 7);           // throws kforge::error (usage) "no run 7"
//   std::cout << report::run_text(j);
//   auto x = report::export_best(db, 7, "kforge-export/run-7");
// This module only reads the store (and, for the export, writes files); docs/json.md
// describes the documents.
#include "store/store.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <filesystem>
#include <string>
#include <vector>

namespace kforge::report {

/// The whole run as schema "kforge.run/1": the run row, its best (or null), every
/// evaluation in run order, the best's lineage (best first, root last), ideas with their
/// outcomes, proposal counts and LLM totals. @throws kforge::error (usage) "no run N".
[[nodiscard]] nlohmann::json run_json(const store::store& db, int64_t run_id);

/// The terminal rendering of a run_json document: header, best, lineage, ideas, and a
/// table of evaluations.
[[nodiscard]] std::string run_text(const nlohmann::json& run);

/// A list of runs as schema "kforge.show-runs/1". With `db`, each entry also carries its
/// best's median and speedup and how many evaluations the run made.
[[nodiscard]] nlohmann::json runs_json(const std::vector<store::run_record>& runs, const store::store* db = nullptr);
/// The terminal table of a list of runs (newest first, as list_runs gives them).
[[nodiscard]] std::string runs_text(const std::vector<store::run_record>& runs, const store::store* db = nullptr);

/// What export_best wrote.
struct export_result {
  int64_t run_id = 0;
  int64_t candidate_id = 0;
  int64_t evaluation_id = 0;
  std::filesystem::path dir;
  std::vector<std::filesystem::path> files; // the source first, then the rest in writing order
  bool cuda = false;        // a .cu for the CUDA backend (else a .cpp for the CPU backend)
  bool kernel_only = false; // `// kforge: launch` directives: device code launched by kforge
  bool python = false;      // a ModelNew file (built by the toolchain "python"), written as it is
};

/// Writes the run's best candidate to `dir` (created as needed; existing files are
/// replaced): `<problem>_best.cu` (or `.cpp` for a CPU problem, `.py`, as it is and with no
/// header, for a Python ModelNew candidate), `kforge/kernel.h` (and
/// `kforge/nvrtc_prelude.h` for a kernel-only candidate) so that the source compiles with
/// `-I<dir>`, `README.md` (what it is, how it measured, how to build it) and
/// `<problem>_best.json` (the best evaluation's stored kforge.eval/1 document).
/// @throws kforge::error (usage) "no run N", or "no candidate of run N passed; nothing to export".
export_result export_best(const store::store& db, int64_t run_id, const std::filesystem::path& dir);

/// The number at `path` in `j` (nested object keys), or nothing when a key is missing or
/// the value is not a number: how reports read fields of stored kforge.eval/1 documents.
[[nodiscard]] std::optional<double> number_at(const nlohmann::json& j, std::initializer_list<const char*> path);

/// A problem's name as a file name: anything but [A-Za-z0-9._-] becomes '_', and no leading dot.
[[nodiscard]] std::string file_stem(const std::string& problem);

/// Reads a run reference: "7", "r7", "run:7", "run7". @return nullopt for anything else.
[[nodiscard]] std::optional<int64_t> parse_run_ref(const std::string& text);

} // namespace kforge::report
