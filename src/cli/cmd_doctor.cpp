// kforge doctor: which confinement layers this machine puts in force around candidate code,
// and why any is missing (older kernel, user namespaces disabled, a container, root).
#include "cli/commands.hpp"
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
    if (g.json) {
      nlohmann::json j{{"schema", "kforge.doctor/1"},
                       {"layers", sandbox::to_json(layers)},
                       {"kernel", kernel},
                       {"landlock_abi", abi},
                       {"disabled", disabled.empty() ? nlohmann::json(false) : nlohmann::json(disabled)},
                       {"missing", absent}};
      std::cout << j.dump(2) << "\n";
      return rc;
    }
    std::cout << fmt::format("kernel        {}\nlandlock ABI  {}\nconfine       {}\n", kernel,
                             abi ? std::to_string(abi) : "none", sandbox::confine_exe().string());
    if (!disabled.empty()) std::cout << fmt::format("DISABLED      {}\n", disabled);
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
