#pragma once
// The session's way to an LLM when one is configured: the role's weighted ensemble
// (llm/config.hpp), every call metered against the run's token and cost budget
// (llm/usage.hpp) and written to the database as it finishes (llm_calls), prompt and
// answer included, never a key.
//   auto gw = search::make_llm_gateway(db, cfg, {.max_tokens = 2'000'000}, seed);
//   search::session s(db, problem, opts, events, gw);
#include "llm/config.hpp"
#include "search/session.hpp"

#include <memory>

namespace kforge::search {

/// @param prior what the run spent before (on resume), deducted from the budget.
/// @throws kforge::error (usage) for a configuration that cannot run (no model, a cost
///         budget with an unpriced model); llm::error when a provider cannot be made
///         (an API key variable that is unset).
[[nodiscard]] std::shared_ptr<llm_gateway> make_llm_gateway(store::store& db, const llm::llm_config& cfg,
                                                            llm::budget budget, std::uint64_t seed,
                                                            const store::llm_totals& prior = {});

} // namespace kforge::search
