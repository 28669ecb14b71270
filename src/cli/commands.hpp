#pragma once
// The kforge subcommands. Each registers its options on the CLI11 app and returns the
// process exit code when run:
//   0  success (the candidate passed)      1  the candidate failed a check
//   2  bad input (usage, problem.toml, missing file)   3  internal error
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <string>

namespace kforge::cli {

inline constexpr int exit_ok = 0, exit_failed = 1, exit_usage = 2, exit_internal = 3;

struct global_options {
  std::string db;     // --db; default $KFORGE_DB or ./kforge.db
  bool json = false;  // --json
  [[nodiscard]] std::filesystem::path db_path() const;
};

using command_fn = std::function<int()>;

command_fn add_check_command(CLI::App& app, global_options& g);
command_fn add_eval_command(CLI::App& app, global_options& g);
command_fn add_show_command(CLI::App& app, global_options& g);
command_fn add_calibrate_command(CLI::App& app, global_options& g);
command_fn add_optimize_command(CLI::App& app, global_options& g);
command_fn add_export_command(CLI::App& app, global_options& g);
command_fn add_profile_command(CLI::App& app, global_options& g);
command_fn add_log_command(CLI::App& app, global_options& g);
command_fn add_mcp_command(CLI::App& app, global_options& g);
command_fn add_suite_command(CLI::App& app, global_options& g);
command_fn add_import_command(CLI::App& app, global_options& g);
command_fn add_doctor_command(CLI::App& app, global_options& g);
command_fn add_llm_command(CLI::App& app, global_options& g);
command_fn add_report_command(CLI::App& app, global_options& g);

} // namespace kforge::cli
