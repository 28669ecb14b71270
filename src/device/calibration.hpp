#pragma once
// A device's measured ceilings (kforge calibrate), cached per device model, and the
// roofline they imply for a problem:
//   floor_s = max(min_bytes / copy_bandwidth, flops / peak(dtype))
// A candidate timed under the floor broke physics or the timer: it is rejected.
#include <kforge/kernel.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace kforge::device {

struct ceilings {
  std::string device;        // the backend's description when measured
  std::string measured_at;   // ISO-8601 UTC
  double copy_bytes_per_s = 0; // device-to-device copy, bytes read + written
  double fp32_flops = 0, tf32_flops = 0, bf16_flops = 0, fp64_flops = 0; // dense GEMM, FLOP/s
  /// The arithmetic peak that bounds a problem at this dtype (f32 -> fp32 GEMM, ...).
  [[nodiscard]] double peak_flops(kf_dtype t) const;
};

[[nodiscard]] nlohmann::json to_json(const ceilings& c);
[[nodiscard]] ceilings ceilings_from_json(const nlohmann::json& j);

/// <cache_root>/calibration/<device model, sanitised>.json
[[nodiscard]] std::filesystem::path calibration_path(const std::string& device_description);
[[nodiscard]] std::optional<ceilings> load_ceilings(const std::string& device_description);
void save_ceilings(const ceilings& c);

struct roofline {
  double floor_s = 0;      // the fastest any implementation could be
  double fraction = 0;     // floor_s / measured median: 1.0 is at the roofline
  std::string bound;       // "memory" or "compute": which term sets the floor
};
/// @return empty when the problem has no work counts.
[[nodiscard]] std::optional<roofline> roofline_of(const ceilings& c, double flops, double min_bytes, kf_dtype dtype,
                                                  double median_s);

} // namespace kforge::device
