// kforge report RUN | PROBLEM | --suite FILE: one self-contained HTML page (charts, lineage,
// roofline, the best's source and diff, failures, LLM use, how to reproduce) that opens with
// no network (report/html_report.hpp). --json prints the document the page draws instead.
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "report/html_report.hpp"
#include "report/run_report.hpp"
#include "store/store.hpp"

#include <fmt/format.h>

#include <iostream>
#include <optional>

namespace kforge::cli {

namespace fs = std::filesystem;

command_fn add_report_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("report", "Write an HTML report of a run, of a problem's evaluations, or of a suite");
  struct opts_t {
    std::string subject, out, suite;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("subject", o->subject, "A run (7, r7, run:7) or a problem's name (kforge log lists them)");
  sub->add_option("--suite", o->suite, "A suite's document (kforge suite DIR --json > suite.json) instead");
  sub->add_option("--out", o->out, "The HTML file to write (default: report-run-N.html, report-PROBLEM.html, report-suite.html)");
  sub->add_flag("--json", g.json, "Print the report's document (schema kforge.report/1, docs/json.md) instead of writing HTML");
  return [o, &g]() {
    if (o->subject.empty() == o->suite.empty())
      KFORGE_THROW(usage, "report: give a run (7), a problem's name, or --suite FILE: exactly one");
    // A suite's document stands alone (the database only adds each best's roofline fraction).
    const bool have_db = fs::exists(g.db_path());
    if (!have_db && o->suite.empty())
      KFORGE_THROW(usage, "{}: no experiment database here yet (run kforge eval or optimize first, or pass --db)",
                   g.db_path().string());
    std::optional<store::store> db;
    if (have_db) db.emplace(g.db_path());
    nlohmann::json doc;
    if (!o->suite.empty()) {
      if (!fs::is_regular_file(o->suite)) KFORGE_THROW(usage, "{}: no such file (write it with: kforge suite DIR --json > FILE)", o->suite);
      auto suite = nlohmann::json::parse(read_file(o->suite), nullptr, false);
      if (suite.is_discarded()) KFORGE_THROW(usage, "{}: not JSON (write it with: kforge suite DIR --json > FILE)", o->suite);
      doc = report::report_of_suite(db ? &*db : nullptr, suite);
    } else if (auto run = report::parse_run_ref(o->subject)) {
      doc = report::report_of_run(*db, *run);
    } else {
      doc = report::report_of_problem(*db, o->subject);
    }
    if (g.json) {
      std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return exit_ok;
    }
    const fs::path out = o->out.empty() ? fs::path(report::default_file_name(doc)) : fs::path(o->out);
    write_file_atomic(out, report::render_html(doc));
    std::cout << fmt::format("wrote {} ({}: {} evaluations, {} passed)\n", out.string(), doc["title"].get<std::string>(),
                             doc["summary"].value("evaluations", 0), doc["summary"].value("passed", 0));
    return exit_ok;
  };
}

} // namespace kforge::cli
