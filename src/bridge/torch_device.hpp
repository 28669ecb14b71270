#pragma once
// A [torch] problem's truth on the GPU-resident path. The evaluation's judge (role_judge.cpp)
// shares one exchange buffer by fd (device/share.hpp): a trial's inputs, drawn on the device,
// and room for the module's outputs at the problem's dtype and in float64. The bridge's
// helper maps it once and runs the module on it, writing the outputs in place: no file, no
// host copy. The helper is held (bridge/torch_helper.hpp) until this object dies, which
// unmaps the buffer; the judge keeps its own copy of the inputs, so a module that writes to
// its inputs changes nothing a candidate sees.
//   bridge::device_truth dt(p, 0, fd, exchange, 120);   // exchange: the judge's offsets
//   dt.run(trial);                                      // after the judge drew trial's inputs
//   dt.stage(r); ... dt.time(torch_time_request(...));  // eager/compile on rotations drawn there
#include "bridge/torch_helper.hpp"
#include "problem/problem.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace kforge::bridge {

class device_truth {
public:
  /// Maps the exchange in a helper. `exchange`: {"bytes", "inputs", "reference", "oracle"},
  /// the offsets of each tensor (ABI order) in the buffer of `bytes` shared as `fd` (kept
  /// open by the caller).
  /// @throws kforge::error (usage) without a persistent helper; (problem) when the helper
  /// cannot map it (no CUDA in its torch, an old driver)
  device_truth(const problem::problem& p, int device_index, int fd, const nlohmann::json& exchange, double timeout_s);
  ~device_truth();
  device_truth(const device_truth&) = delete;
  device_truth& operator=(const device_truth&) = delete;

  /// The module on the inputs in the exchange now, at the problem's dtype (the reference)
  /// and in float64 (the oracle), its outputs written into the exchange; `trial` seeds torch's
  /// RNG, as on the host path. @throws kforge::error (problem) with the module's failure
  void run(int trial);
  /// Copies the inputs in the exchange now (a timing rotation the judge drew there) as rotation
  /// `r` of the next time().
  void stage(int r);
  /// The helper's "time" (torch_time_request) on the staged rotations instead of a file; they go
  /// with it. @return the helper's answer (torch_timings_of)
  nlohmann::json time(nlohmann::json request, double timeout_s);
  /// The helper's device ("NVIDIA H200").
  [[nodiscard]] const std::string& device_name() const { return m_device_name; }

private:
  held_helper m_helper;
  nlohmann::json m_request;
  double m_timeout_s;
  std::string m_device_name;
};

} // namespace kforge::bridge
