#pragma once
// Fresh inputs for one trial: every input tensor drawn from its case's distribution
// with the trial's seed, rounded to the tensor's dtype. The oracle gets the same
// rounded values widened to double, so "truth" is exact for the inputs the candidate saw.
//   auto xs = eval::make_inputs(problem, problem.cases[0], seed, precision::nominal);
#include "eval/buffers.hpp"
#include "problem/problem.hpp"

#include <cstdint>
#include <vector>

namespace kforge::eval {

/// @post result.size() == p.inputs().size(), each laid out for `prec`
[[nodiscard]] std::vector<host_tensor> make_inputs(const problem::problem& p, const problem::case_spec& c,
                                                   std::uint64_t seed, precision prec);

/// The case kforge adds to every evaluation of a problem with two or more cases, named in no
/// problem.toml: the first case's inputs with random slices (rows of a batch, or blocks of a
/// flat tensor) drawn from another case. A candidate that samples its input to pick a fast
/// path (look at row 0, guess the distribution) meets hard values where it did not look.
inline constexpr const char* hidden_case = "hidden:mixed";

/// Where the hidden case's slices go: drawn from the trial's seed alone (not from the values),
/// so the host and the GPU draw (worker/role_judge.cpp) place them alike.
struct hidden_plan {
  std::size_t donor_case = 1;    // index into p.cases
  std::uint64_t donor_seed = 0;  // the donor's inputs: make_inputs(p, cases[donor_case], donor_seed)
  struct slices {
    std::size_t count = 0;         // slices the tensor is cut into: each its bytes / count, in bytes
    std::vector<std::size_t> rows; // which slices come from the donor, in order (repeats allowed)
  };
  std::vector<slices> inputs;      // per input; empty rows for integer or empty tensors
};
/// @pre p.cases.size() >= 2
[[nodiscard]] hidden_plan plan_hidden(const problem::problem& p, std::uint64_t seed);

/// Inputs for a trial's case, by name: a case of the problem, or hidden_case.
/// @throws kforge::error (internal) for a name that is neither.
[[nodiscard]] std::vector<host_tensor> make_trial_inputs(const problem::problem& p, const std::string& case_name,
                                                         std::uint64_t seed, precision prec);

/// The oracle's inputs from the nominal ones, without drawing again: real tensors widened to double.
/// @post equal to make_inputs(p, c, seed, precision::oracle) for the nominal inputs' (c, seed)
[[nodiscard]] std::vector<host_tensor> widen_to_oracle(const problem::problem& p, const std::vector<host_tensor>& nominal);

} // namespace kforge::eval
