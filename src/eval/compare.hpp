#pragma once
// The numerical verdict on one output of one call, against the float64 oracle.
//
// Policy "ratio" (default): with o the oracle, r the reference at nominal precision and
// c the candidate, over the elements where all three are finite,
//     max|c - o|        <= alpha * max|r - o|        + floor_ulps * eps * max|o|
//     ||c - o|| / ||o|| <= alpha * ||r - o|| / ||o|| + floor_ulps * eps
// i.e. the candidate may be alpha times less accurate than the obviously-correct
// reference, never arbitrarily so: a precision downgrade fails even where a loose
// allclose would pass. Policy "rtol": |c - o| <= atol + rtol * |o| per element.
// NaN and Inf must agree with the oracle position by position (where the reference
// itself overflows, agreeing with the reference is accepted). Elements still holding
// the output poison are reported as unwritten. Integer outputs must equal the oracle.
//   auto checks = compare_output(spec, tol, cand, oracle, ref);  // unwritten, nonfinite, tolerance
#include "eval/buffers.hpp"
#include "eval/result.hpp"
#include "problem/problem.hpp"

#include <string>
#include <vector>

namespace kforge::eval {

/// @return three checks, in order: "unwritten", "nonfinite", "tolerance" (each passed or not),
/// with name/output/message/detail filled; the caller sets case, trial and run.
[[nodiscard]] std::vector<check_result> compare_output(const problem::tensor_spec& spec,
                                                       const problem::tolerance_spec& tol,
                                                       const host_tensor& candidate, const host_tensor& oracle,
                                                       const host_tensor& reference);

/// The "repeat" check: two calls on identical inputs must be bitwise identical.
[[nodiscard]] check_result compare_repeat(const problem::tensor_spec& spec, const host_tensor& first,
                                          const host_tensor& second);

/// The reference's own error against the oracle (what the ratio policy scales).
struct reference_error {
  double max_abs = 0, rel_l2 = 0, max_abs_oracle = 0;
};
[[nodiscard]] reference_error measure_reference_error(const problem::tensor_spec& spec, const host_tensor& oracle,
                                                      const host_tensor& reference);

/// "y[17, 3]" for flat index 17*cols+3 of a tensor named y.
[[nodiscard]] std::string element_name(const problem::tensor_spec& spec, std::size_t flat);

} // namespace kforge::eval
