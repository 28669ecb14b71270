#pragma once
// What `kforge report` writes: one self-contained HTML page over a search run, over every
// evaluation of a problem, or over a suite — its charts' libraries, styles and data inlined,
// so it opens with no network. Two steps, so that tests and agents can read the numbers
// without a browser:
//   store::store db{"kforge.db"};
//   auto doc = report::report_of_run(db, 7);               // kforge.report/1 (docs/json.md)
//   write_file_atomic("run-7.html", report::render_html(doc));
// The document holds everything the page shows; html/report.js draws it with Chart.js,
// d3 and highlight.js (Debian's libjs-* packages). This module only reads the store.
#include "store/store.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace kforge::report {

/// A run: every evaluation in run order (with the run's wall time, tokens and cost when it
/// finished), the candidates' tree, ideas, failures per check, LLM use per model and role,
/// the best's source and its diff against its parent, and how to reproduce it.
/// @throws kforge::error (usage) "no run N".
[[nodiscard]] nlohmann::json report_of_run(const store::store& db, int64_t run_id);

/// Every evaluation of a problem (controls left out), oldest first, with the same sections;
/// LLM use sums the problem's runs. @throws kforge::error (usage) when the store has none.
[[nodiscard]] nlohmann::json report_of_problem(const store::store& db, const std::string& problem);

/// A suite from its kforge.suite/1 document (`kforge suite DIR --json`, which names `dir`):
/// its rows with each problem's work counts, fast_p, and (with a store, which may be null)
/// each row's evaluation's device and roofline fraction.
[[nodiscard]] nlohmann::json report_of_suite(const store::store* db, const nlohmann::json& suite);

/// Where a report is written when no file is named: report-run-N.html, report-PROBLEM.html
/// (the name made safe for a file name) or report-suite.html, from the document's kind.
[[nodiscard]] std::string default_file_name(const nlohmann::json& doc);

/// The page: html/report.html with its style, libraries, document and script inlined.
/// @throws kforge::error (usage) naming the package to install when a library is missing.
[[nodiscard]] std::string render_html(const nlohmann::json& doc);

/// A unified diff of two texts by lines (what the page shows between a best and its
/// parent); "" when they are equal.
[[nodiscard]] std::string unified_diff(const std::string& from, const std::string& to, const std::string& from_name,
                                       const std::string& to_name, int context = 3);

} // namespace kforge::report
