#pragma once
// Runs one evaluation and records it in the store as it goes: the evaluation row is
// opened first ("running"), each build, check and timing is written the moment it
// completes, and the row is closed with the verdict. A killed kforge leaves every
// finished piece in the database.
#include "problem/problem.hpp"
#include "store/store.hpp"
#include "worker/evaluate.hpp"

namespace kforge::cli {

struct recorded_evaluation {
  worker::evaluation result;
  nlohmann::json json; // to_json(result) plus ids
  int64_t evaluation_id = 0;
  int64_t candidate_id = 0;
};

/// @throws kforge::error when the problem is broken (the row is closed with status "error" first).
[[nodiscard]] recorded_evaluation evaluate_and_record(store::store& db, const problem::problem& p,
                                                      const std::filesystem::path& candidate, const std::string& origin,
                                                      worker::evaluate_options opts);

} // namespace kforge::cli
