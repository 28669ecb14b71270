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

/// The oracle's inputs from the nominal ones, without drawing again: real tensors widened to double.
/// @post equal to make_inputs(p, c, seed, precision::oracle) for the nominal inputs' (c, seed)
[[nodiscard]] std::vector<host_tensor> widen_to_oracle(const problem::problem& p, const std::vector<host_tensor>& nominal);

} // namespace kforge::eval
