#include "device/calibration.hpp"

#include "core/fs.hpp"

#include <algorithm>

namespace kforge::device {

double ceilings::peak_flops(kf_dtype t) const {
  switch (t) {
  case KF_F64: return fp64_flops;
  case KF_F16:
  case KF_BF16: return bf16_flops;
  default: return fp32_flops;
  }
}

nlohmann::json to_json(const ceilings& c) {
  return {{"schema", "kforge.calibration/1"}, {"device", c.device},         {"measured_at", c.measured_at},
          {"copy_bytes_per_s", c.copy_bytes_per_s}, {"fp32_flops", c.fp32_flops}, {"tf32_flops", c.tf32_flops},
          {"bf16_flops", c.bf16_flops},   {"fp64_flops", c.fp64_flops}};
}

ceilings ceilings_from_json(const nlohmann::json& j) {
  ceilings c;
  c.device = j.value("device", "");
  c.measured_at = j.value("measured_at", "");
  c.copy_bytes_per_s = j.value("copy_bytes_per_s", 0.0);
  c.fp32_flops = j.value("fp32_flops", 0.0);
  c.tf32_flops = j.value("tf32_flops", 0.0);
  c.bf16_flops = j.value("bf16_flops", 0.0);
  c.fp64_flops = j.value("fp64_flops", 0.0);
  return c;
}

std::filesystem::path calibration_path(const std::string& device_description) {
  std::string key;
  for (char ch : device_description.substr(0, device_description.find(" ("))) // the model, not the details
    key += std::isalnum(static_cast<unsigned char>(ch)) ? static_cast<char>(std::tolower(ch)) : '_';
  return cache_root() / "calibration" / (key + ".json");
}

std::optional<ceilings> load_ceilings(const std::string& device_description) {
  const auto p = calibration_path(device_description);
  if (!std::filesystem::exists(p)) return std::nullopt;
  auto j = nlohmann::json::parse(read_file(p), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return ceilings_from_json(j);
}

void save_ceilings(const ceilings& c) { write_file_atomic(calibration_path(c.device), to_json(c).dump(2) + "\n"); }

std::optional<roofline> roofline_of(const ceilings& c, double flops, double min_bytes, kf_dtype dtype,
                                    double median_s) {
  if ((flops <= 0 && min_bytes <= 0) || median_s <= 0) return std::nullopt;
  const double mem = c.copy_bytes_per_s > 0 ? min_bytes / c.copy_bytes_per_s : 0;
  const double peak = c.peak_flops(dtype);
  const double comp = peak > 0 ? flops / peak : 0;
  roofline r;
  r.floor_s = std::max(mem, comp);
  r.bound = mem >= comp ? "memory" : "compute";
  r.fraction = r.floor_s / median_s;
  return r;
}

} // namespace kforge::device
