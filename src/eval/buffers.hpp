#pragma once
// Harness-owned device memory for one call of kf_forward: every tensor and the
// workspace live in a guarded buffer (random canary bytes before and after), outputs and
// workspace are poisoned before every call, and the kf_tensor / kf_args views the
// candidate sees point into them.
//   eval::tensor_set ts{dev, problem, precision::nominal};
//   ts.upload_inputs(host_inputs);  ts.poison(poison_a);  kf_forward(&ts.args());
//   auto bad = ts.check_guards();   // names the buffer and the first overwritten byte
#include "device/backend.hpp"
#include "problem/problem.hpp"

#include <kforge/kernel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kforge::eval {

/// Which build the tensors are laid out for: the problem dtype, or the float64 oracle.
enum class precision { nominal, oracle };

/// The output poison byte: 0xFF makes every float a NaN with all payload bits set, a
/// pattern no arithmetic produces, so "never written" is told apart from "computed NaN".
inline constexpr std::uint8_t output_poison = 0xFF;

class guarded_buffer {
public:
  static constexpr std::size_t guard_bytes = 4096;
  /// `guard` 0: no guards, so that every access outside the buffer is outside its
  /// allocation too, where compute-sanitizer's memcheck sees it.
  guarded_buffer(device::backend& dev, std::size_t bytes, std::uint64_t canary_seed, std::size_t guard = guard_bytes);
  /// A view of `bytes` at `data`, memory another owns (the judge's shared sets): no guards
  /// here, nothing released.
  guarded_buffer(device::backend& dev, void* data, std::size_t bytes);
  ~guarded_buffer();
  guarded_buffer(const guarded_buffer&) = delete;
  guarded_buffer& operator=(const guarded_buffer&) = delete;

  [[nodiscard]] void* data() const { return m_base ? static_cast<char*>(m_base) + m_guard : nullptr; }
  [[nodiscard]] std::size_t bytes() const { return m_bytes; }
  /// @return empty when both guards are intact, else where the first changed byte is
  /// ("3 bytes after the end" / "12 bytes before the start").
  [[nodiscard]] std::optional<std::string> check_guards() const;

private:
  device::backend& m_dev;
  void* m_base = nullptr;
  std::size_t m_bytes;
  std::size_t m_guard;
  std::vector<std::uint8_t> m_canary; // 2 * m_guard: before, then after
  bool m_owned = true;
};

/// Where each tensor of a shared buffer set lies, as offsets from the set's base: the same
/// in the judge that allocates the set and in the worker that maps it. Every tensor (at the
/// problem's dtype) sits between two guards of guard_bytes; offsets are 256-byte aligned.
struct set_layout {
  std::vector<std::size_t> inputs, outputs; // offsets of each tensor's first byte
  std::vector<std::size_t> input_bytes, output_bytes;
  /// Per output, where the candidate's worker copies it on the call's stream the moment the
  /// call is done (tensor_set::copy_answers): the call's answer, taken in the candidate's own
  /// context, so work it left on another stream cannot land first. Unguarded: never exposed.
  std::vector<std::size_t> answers;
  std::size_t bytes = 0; // the whole set, guards included
};
[[nodiscard]] set_layout shared_set_layout(const problem::problem& p);

struct host_tensor {
  kf_dtype dtype = KF_F32;
  std::vector<std::uint8_t> bytes;
};

class tensor_set {
public:
  /// `guards` false: unguarded buffers (a run under compute-sanitizer; check_guards() is then empty).
  tensor_set(device::backend& dev, const problem::problem& p, precision prec, std::uint64_t canary_seed,
             bool guards = true);
  /// Inputs and outputs in a shared set at `base` (shared_set_layout; nominal precision),
  /// whose guards its owner checks; the workspace is this process's own, guarded.
  tensor_set(device::backend& dev, const problem::problem& p, void* base);

  void upload_inputs(const std::vector<host_tensor>& inputs);
  /// Sets the workspace size (asked of the candidate once per shape) and allocates it.
  void set_workspace(std::size_t bytes, std::uint64_t canary_seed);
  /// Fills outputs with output_poison and the workspace with `workspace_byte`.
  void poison(std::uint8_t workspace_byte);
  /// The workspace alone (a shared set's outputs are the judge's to poison).
  void poison_workspace(std::uint8_t workspace_byte);
  /// A shared set's outputs into its answer slots (set_layout::answers), enqueued on the
  /// stream; nothing for a set of this process's own.
  void copy_answers();
  [[nodiscard]] std::vector<host_tensor> download_outputs() const;
  [[nodiscard]] std::vector<host_tensor> download_inputs() const;
  /// @return one line per violated guard, naming the tensor ("output 'y': 4 bytes after the end").
  [[nodiscard]] std::vector<std::string> check_guards() const;

  /// Every buffer a call may touch (inputs, outputs, workspace), for cache flushes.
  [[nodiscard]] std::vector<device::memory_region> regions() const;

  [[nodiscard]] kf_args& args() { return m_args; }

private:
  // Makes the buffer of input (or output) k of spec t; place() lays out the views and args.
  using buffer_maker = std::function<std::unique_ptr<guarded_buffer>(const problem::tensor_spec& t, bool input,
                                                                      std::size_t k)>;
  void place(precision prec, const buffer_maker& make);

  device::backend& m_dev;
  const problem::problem& m_problem;
  std::size_t m_guard; // guard bytes on each side of every buffer
  std::vector<std::unique_ptr<guarded_buffer>> m_in, m_out;
  std::unique_ptr<guarded_buffer> m_ws;
  std::vector<kf_tensor> m_in_t, m_out_t;
  std::vector<std::string> m_in_names, m_out_names;
  std::vector<void*> m_answers; // a shared set's answer slots
  kf_args m_args{};
};

/// Builds the kf_tensor for a spec at a precision (contiguous row-major strides).
[[nodiscard]] kf_tensor make_tensor_view(const problem::tensor_spec& t, precision prec, void* data);

} // namespace kforge::eval
