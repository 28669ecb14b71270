#include "worker/calibrate.hpp"

#include "build/compiler.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "device/backend.hpp"
#include "worker/supervisor.hpp"

#include <chrono>
#include <ctime>

namespace kforge::worker {

device::ceilings measure_ceilings(const std::filesystem::path& worker_exe) {
  device::ceilings c;
  c.device = device::make_backend(problem::backend_kind::cuda)->description();
  const auto src = data_path("src/device/calibrate_kernels.cu"); // installed beside the headers too
  auto a = build::compile_nvcc({.source = src, .role = "calibrate"});
  if (!a.ok) KFORGE_THROW(build, "{}: the calibration kernels do not build:\n{}", src.string(), a.diagnostics);
  auto o = run_worker(worker_exe.empty() ? default_worker_exe() : worker_exe,
                      {{"role", "calibrate"}, {"libraries", {{"calibrate", a.library.string()}}}},
                      {.timeout_s = 600, .role = "calibrate"});
  for (auto& m : o.messages) {
    if (m.header["type"] == "error") KFORGE_THROW(worker, "calibration failed: {}", m.header.value("message", ""));
    if (m.header["type"] == "calibration") {
      if (m.header.value("rc", 1) != 0) KFORGE_THROW(worker, "calibration kernels returned {}", m.header.value("rc", 1));
      auto v = m.header["values"].get<std::vector<double>>();
      c.copy_bytes_per_s = v.at(0);
      c.fp32_flops = v.at(1);
      c.tf32_flops = v.at(2);
      c.bf16_flops = v.at(3);
      c.fp64_flops = v.at(4);
    }
  }
  if (o.end != worker_end::done || c.copy_bytes_per_s <= 0)
    KFORGE_THROW(worker, "calibration worker {}: {}\n{}", worker_end_name(o.end), o.detail, o.output.substr(0, 2000));
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c.measured_at = buf;
  return c;
}

} // namespace kforge::worker
