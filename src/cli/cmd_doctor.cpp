// kforge doctor: which confinement layers this machine puts in force around candidate code,
// and why any is missing (older kernel, user namespaces disabled, a container, root); and
// whether a CUDA problem's evaluations can run on the GPU (docs/verification.md), or why not.
#include "cli/commands.hpp"
#include "device/backend.hpp"
#include "device/share.hpp"
#include "sandbox/launch.hpp"
#include "sandbox/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/utsname.h>

#include <iostream>

namespace kforge::cli {

command_fn add_doctor_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand(
      "doctor", "Show which confinement layers candidate code runs under on this machine, and why any is missing");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.doctor/1)");
  return [&g]() {
    const auto layers = sandbox::probe();
    utsname u{};
    ::uname(&u);
    const std::string kernel = fmt::format("{} {}", u.sysname, u.release);
    const int abi = sandbox::landlock_abi();
    const std::string disabled = sandbox::disabled_reason();
    const auto absent = sandbox::missing(layers);
    const int rc = absent.empty() && disabled.empty() ? exit_ok : exit_failed;
    // The GPU-resident path needs device memory shared by fd (CUDA VMM) on device 0.
    const int gpus = device::device_count(problem::backend_kind::cuda);
    const std::string gpu_path = gpus == 0 ? "no CUDA device visible" : device::sharing_unavailable(0);
    if (g.json) {
      nlohmann::json j{{"schema", "kforge.doctor/1"},
                       {"layers", sandbox::to_json(layers)},
                       {"kernel", kernel},
                       {"landlock_abi", abi},
                       {"disabled", disabled.empty() ? nlohmann::json(false) : nlohmann::json(disabled)},
                       {"missing", absent},
                       {"gpu_path", {{"available", gpu_path.empty()}, {"why", gpu_path}}}};
      std::cout << j.dump(2) << "\n";
      return rc;
    }
    std::cout << fmt::format("kernel        {}\nlandlock ABI  {}\nconfine       {}\n", kernel,
                             abi ? std::to_string(abi) : "none", sandbox::confine_exe().string());
    if (!disabled.empty()) std::cout << fmt::format("DISABLED      {}\n", disabled);
    std::cout << fmt::format("GPU path      {}\n", gpu_path.empty()
                                                       ? "available: inputs, truth and judging stay on the device"
                                                       : "not available (" + gpu_path + "): CUDA problems are judged through the host");
    std::cout << "\n";
    for (auto& l : layers)
      std::cout << fmt::format("{:<4} {:<20} {}\n", l.active ? "ok" : "--", l.name, l.detail);
    std::cout << "\n"
              << (rc == exit_ok ? "every layer in force\n"
                                : fmt::format("{} of {} layers not in force{}\n", absent.size(), layers.size(),
                                              disabled.empty() ? "" : "; and confinement is turned off"));
    return rc;
  };
}

} // namespace kforge::cli
