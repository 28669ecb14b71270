// kforge: find faster kernels and prove they are right.
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "llm/message.hpp"

#include <cstdlib>
#include <iostream>
#include <map>

namespace kforge::cli {

std::filesystem::path global_options::db_path() const {
  if (!db.empty()) return db;
  if (const char* v = std::getenv("KFORGE_DB"); v && *v) return v;
  return "kforge.db";
}

} // namespace kforge::cli

int main(int argc, char** argv) {
  using namespace kforge::cli;
  CLI::App app{"kforge: find faster GPU kernels and prove they are right", "kforge"};
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  app.require_subcommand(1);
  global_options g;
  app.add_option("--db", g.db, "SQLite experiment database (default: $KFORGE_DB, else ./kforge.db)");
  std::map<CLI::App*, command_fn> commands;
  auto reg = [&](command_fn (*add)(CLI::App&, global_options&)) {
    auto before = app.get_subcommands({});
    auto fn = add(app, g);
    for (auto* s : app.get_subcommands({}))
      if (std::find(before.begin(), before.end(), s) == before.end()) commands[s] = fn;
  };
  reg(add_check_command);
  reg(add_eval_command);
  reg(add_show_command);
  reg(add_calibrate_command);
  reg(add_optimize_command);
  reg(add_export_command);
  reg(add_profile_command);
  reg(add_log_command);
  reg(add_report_command);
  reg(add_mcp_command);
  reg(add_suite_command);
  reg(add_import_command);
  reg(add_doctor_command);
  reg(add_llm_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : exit_usage;
  }
  try {
    for (auto& [sub, fn] : commands)
      if (sub->parsed()) return fn();
  } catch (const kforge::error& e) {
    std::cerr << "kforge: " << e.what() << "\n";
    return e.kind() == kforge::error_kind::internal ? exit_internal : exit_usage;
  } catch (const kforge::llm::error& e) { // a key, URL or model to fix: the message says which
    std::cerr << "kforge: " << e.what() << "\n";
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "kforge: internal error: " << e.what() << "\n";
    return exit_internal;
  }
  return exit_usage;
}
