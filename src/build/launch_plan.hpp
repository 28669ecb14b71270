#pragma once
// The launch plan of a kernel-only candidate: the kernels a generic host shim launches, in
// order, on the evaluation's stream, with geometry computed from the tensors' shapes. A
// kernel-only candidate is device code alone (compiled by NVRTC, no host compiler) that
// declares its launches in comments, written like CUDA's own launch syntax:
//
//   // kforge: launch softmax_rows<256><<<x.shape[0], 256, 256 * sizeof(float)>>>(x, y, x.shape[1])
//   // kforge: workspace x.shape[0] * sizeof(KF_REAL)          (optional: bytes of workspace)
//
// Grid and block are one expression or dim3(e1[, e2[, e3]]); shared memory is optional.
// An argument is a tensor's name (its device pointer), `workspace` (the workspace pointer)
// or an integer expression (passed as a 64-bit integer; a 32-bit `int` parameter reads its
// low half). Expressions are integers: literals, + - * / % and parentheses, min(a, b),
// max(a, b), cdiv(a, b) (ceiling division), sizeof(float|double|half|bfloat16|int|long|
// KF_REAL), and per tensor NAME.shape[d], NAME.stride[d], NAME.numel, NAME.ndim.
//
//   auto plan = build::parse_launch_plan(text, "seed.cu", KF_F32);   // throws build error
//   plan.bind({"x"}, {"y"});                                           // names -> tensor slots
//   auto calls = plan.evaluate(args);                                  // geometry for these shapes
#include <kforge/kernel.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::build {

/// An integer expression over tensor shapes, compiled to a small stack program.
class shape_expr {
public:
  /// @throws kforge::error (build) naming the expression and the position of the mistake.
  static shape_expr parse(std::string_view text, kf_dtype real);
  /// Resolves tensor names to argument slots. @throws kforge::error (build) for an unknown name.
  void bind(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
  /// @pre bound. @throws kforge::error (worker) on division by zero or an out-of-range dimension.
  [[nodiscard]] std::int64_t evaluate(const kf_args& a) const;
  [[nodiscard]] const std::string& text() const { return m_text; }

  enum class op : std::uint8_t { constant, tensor, add, sub, mul, div, mod, neg, min, max, cdiv };
  enum class attr : std::uint8_t { shape, stride, numel, ndim };
  struct step {
    op code = op::constant;
    std::int64_t value = 0; // constant; or the dimension of a tensor attribute
    attr what = attr::shape;
    std::string name;       // tensor name (op::tensor)
    int slot = -1;          // bound: inputs 0..n-1, outputs n.. (see bind)
  };

private:
  std::string m_text;
  std::vector<step> m_program;
  int m_num_inputs = -1;
};

/// One kernel argument: a tensor's pointer, the workspace pointer, or an integer.
struct launch_arg {
  enum class kind : std::uint8_t { tensor, workspace, integer } what = kind::integer;
  std::string tensor; // kind::tensor
  int slot = -1;      // bound slot of the tensor
  shape_expr value;   // kind::integer
};

struct launch {
  std::string kernel;                 // the name expression as written ("softmax<256>")
  std::string lowered;                // its mangled name in the cubin (set after compiling)
  std::array<shape_expr, 3> grid, block;
  shape_expr smem;
  std::vector<launch_arg> args;
  int line = 0;                       // source line of the directive, for messages
};

/// A launch with concrete geometry, for one call.
struct resolved_launch {
  std::array<std::int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  std::int64_t smem = 0;
  std::vector<std::uint64_t> params;  // one 8-byte slot per argument: pointer bits or integer
};

struct launch_plan {
  std::string file;                   // source name, for messages
  kf_dtype real = KF_F32;             // KF_REAL of this build (sizeof(KF_REAL))
  std::vector<launch> launches;
  bool has_workspace = false;
  shape_expr workspace;

  void bind(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs);
  /// Geometry and arguments for a call with these tensors. @throws kforge::error (worker)
  /// when an expression fails or a dimension is out of CUDA's range.
  [[nodiscard]] std::vector<resolved_launch> evaluate(const kf_args& a) const;
  [[nodiscard]] std::size_t workspace_bytes(const kf_args& a) const;
  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] static launch_plan from_json(const nlohmann::json& j);
};

/// @return whether `source` declares launches (a kernel-only candidate, built by NVRTC).
[[nodiscard]] bool declares_launches(std::string_view source);
/// Reads every `kforge:` directive of `source` (`param` and `constraint` lines belong to
/// build/params.hpp and are skipped). @throws kforge::error (build) with
/// "FILE:LINE: reason" for a malformed directive, or when there is no launch.
[[nodiscard]] launch_plan parse_launch_plan(std::string_view source, const std::string& file, kf_dtype real);

} // namespace kforge::build
