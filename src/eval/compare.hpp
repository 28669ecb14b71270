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
#include "eval/gpu/scan.h"
#include "eval/result.hpp"
#include "problem/problem.hpp"

#include <map>
#include <string>
#include <vector>

namespace kforge::eval {

/// @return three checks, in order: "unwritten", "nonfinite", "tolerance" (each passed or not),
/// with name/output/message/detail filled; the caller sets case, trial and run.
[[nodiscard]] std::vector<check_result> compare_output(const problem::tensor_spec& spec,
                                                       const problem::tolerance_spec& tol,
                                                       const host_tensor& candidate, const host_tensor& oracle,
                                                       const host_tensor& reference);

// The same verdict in two steps, so that the pass over the elements can run where the
// tensors are (eval/gpu/device_kernels.cu on the GPU): scan, then judge from the scan and
// the values of the few elements it names.
//   auto s = scan_output(spec, tol, cand, oracle, ref);          // or the GPU judge's kf_scan
//   for (auto i : scan_elements(spec, tol, s)) values[i] = {got, expected, reference};
//   auto checks = judge_scan(spec, tol, s, values);              // == compare_output(...)

/// The kernel's parameters for this output and these dtypes.
[[nodiscard]] kf_scan_params scan_params(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                         kf_dtype cand, kf_dtype oracle, kf_dtype ref);
/// The host's pass over the elements (every core for large outputs).
[[nodiscard]] kf_scan scan_output(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                  const host_tensor& candidate, const host_tensor& oracle, const host_tensor& reference);
/// The elements whose values judge_scan's messages quote.
[[nodiscard]] std::vector<std::size_t> scan_elements(const problem::tensor_spec& spec,
                                                     const problem::tolerance_spec& tol, const kf_scan& s);
struct element_values {
  double got = 0, expected = 0, reference = 0;
};
/// The three checks of compare_output from a scan. @pre values holds every scan_elements index
[[nodiscard]] std::vector<check_result> judge_scan(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                                   const kf_scan& s, const std::map<std::size_t, element_values>& values);

/// The "repeat" check: two calls on identical inputs must be bitwise identical.
[[nodiscard]] check_result compare_repeat(const problem::tensor_spec& spec, const host_tensor& first,
                                          const host_tensor& second);
/// The same from a count of differing elements, the first of them and its two values.
[[nodiscard]] check_result repeat_verdict(const problem::tensor_spec& spec, std::size_t differ, std::size_t first,
                                          double first_call, double second_call);

/// The reference's own error against the oracle (what the ratio policy scales).
struct reference_error {
  double max_abs = 0, rel_l2 = 0, max_abs_oracle = 0;
};
[[nodiscard]] reference_error measure_reference_error(const problem::tensor_spec& spec, const host_tensor& oracle,
                                                      const host_tensor& reference);

/// "y[17, 3]" for flat index 17*cols+3 of a tensor named y.
[[nodiscard]] std::string element_name(const problem::tensor_spec& spec, std::size_t flat);

} // namespace kforge::eval
