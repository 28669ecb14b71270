// kforge calibrate: measure the GPU's copy bandwidth and GEMM peaks once, cache them per
// device model; every later timing reports its fraction of that roofline.
#include "cli/commands.hpp"
#include "device/calibration.hpp"
#include "device/backend.hpp"
#include "worker/calibrate.hpp"
#include "worker/supervisor.hpp"

#include <fmt/format.h>

#include <iostream>

namespace kforge::cli {

command_fn add_calibrate_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("calibrate", "Measure the GPU's copy bandwidth and GEMM peaks (fp32, tf32, bf16, fp64), cached per device");
  auto force = std::make_shared<bool>(false);
  sub->add_flag("--force", *force, "Measure again even when a calibration is cached");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.calibration/1, docs/json.md)");
  return [force, &g]() {
    const auto desc = device::make_backend(problem::backend_kind::cuda)->description();
    auto c = *force ? std::nullopt : device::load_ceilings(desc);
    const bool cached = c.has_value();
    if (!c) {
      c = worker::measure_ceilings(worker::default_worker_exe());
      device::save_ceilings(*c);
    }
    if (g.json) {
      auto j = device::to_json(*c);
      j["cached"] = cached;
      j["path"] = device::calibration_path(desc).string();
      std::cout << j.dump(2) << "\n";
      return exit_ok;
    }
    std::cout << fmt::format("device     {}\nmeasured   {}{}\n", c->device, c->measured_at,
                             cached ? " (cached; --force to measure again)" : "");
    std::cout << fmt::format("copy       {:.2f} TB/s (device to device, bytes read + written)\n", c->copy_bytes_per_s * 1e-12);
    std::cout << fmt::format("fp32 GEMM  {:.1f} TFLOP/s\ntf32 GEMM  {:.1f} TFLOP/s\nbf16 GEMM  {:.1f} TFLOP/s\nfp64 GEMM  {:.1f} TFLOP/s\n",
                             c->fp32_flops * 1e-12, c->tf32_flops * 1e-12, c->bf16_flops * 1e-12, c->fp64_flops * 1e-12);
    std::cout << fmt::format("cached in  {}\n", device::calibration_path(desc).string());
    return exit_ok;
  };
}

} // namespace kforge::cli
