#include "worker/sanitize.hpp"

#include "build/compiler.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <random>
#include <sstream>

namespace kforge::worker {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// The integer that follows `key` in `line`, if any: "ERROR SUMMARY: 3 errors" -> 3.
std::optional<int> number_after(const std::string& line, const std::string& key) {
  const auto at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  const char* p = line.c_str() + at + key.size();
  while (*p == ' ' || *p == '(') ++p;
  if (*p < '0' || *p > '9') return std::nullopt;
  return std::atoi(p);
}

// The text after "at " names the code, in one of the forms compute-sanitizer prints:
//   "0x150 in void k<256>(const float *, int)"        (no line info)
//   "k(const float *, float *)+0x70 in /src/k.cu:12"  (-lineinfo)
//   "/src/k.cu:12:k(const float *, float *)"          (-G)
// -> {kernel, location}
std::pair<std::string, std::string> split_code(std::string at) {
  if (auto h = at.rfind(" ["); h != std::string::npos && at.back() == ']') at = at.substr(0, h); // " [4 hazards]"
  std::string kernel, location;
  const auto in = at.rfind(" in ");
  if (starts_with(at, "0x") && in != std::string::npos) {
    kernel = at.substr(in + 4);
    location = "pc " + at.substr(0, in);
  } else if (in != std::string::npos) {
    location = at.substr(in + 4);
    kernel = at.substr(0, in);
    if (auto off = kernel.rfind("+0x"); off != std::string::npos) kernel = kernel.substr(0, off);
  } else if (auto colon = at.find(':'); colon != std::string::npos && at.find(':', colon + 1) != std::string::npos) {
    const auto second = at.find(':', colon + 1);
    location = at.substr(0, second);
    kernel = at.substr(second + 1);
  } else {
    kernel = at;
  }
  kernel = trim(kernel);
  if (starts_with(kernel, "void ")) kernel = kernel.substr(5);
  return {kernel, trim(location)};
}

std::string unique_temp_dir() {
  std::random_device rd;
  for (int i = 0; i < 16; ++i) {
    auto d = fs::temp_directory_path() / fmt::format("kforge-sanitize-{:08x}{:08x}", rd(), rd());
    std::error_code ec;
    if (fs::create_directory(d, ec)) {
      fs::permissions(d, fs::perms::owner_all, ec); // the report is read back as evidence: keep others out
      return d.string();
    }
  }
  KFORGE_THROW(internal, "cannot create a temporary folder under {}", fs::temp_directory_path().string());
}

} // namespace

sanitizer_report parse_sanitizer_output(const std::string& tool, const std::string& text) {
  sanitizer_report r{.tool = tool};
  std::optional<int> race_errors;
  sanitizer_finding* current = nullptr; // the record continuation lines belong to
  std::istringstream in(text);
  std::string raw;
  while (std::getline(in, raw)) {
    std::size_t eq = 0;
    while (eq < raw.size() && raw[eq] == '=') ++eq;
    if (eq < 5) continue; // not the sanitizer's: the candidate's own output
    std::size_t indent = 0;
    while (eq + indent < raw.size() && raw[eq + indent] == ' ') ++indent;
    const std::string line = trim(raw.substr(eq));
    if (line.empty()) continue;

    if (indent > 1) { // a continuation of the current record
      if (!current) continue;
      if (starts_with(line, "at ") && current->kernel.empty()) {
        std::tie(current->kernel, current->location) = split_code(line.substr(3));
      } else if (starts_with(line, "and ") && line.find(" access at ") != std::string::npos) {
        const auto at = line.find(" at ");
        current->kind += " " + line.substr(0, at); // "... between Write access and Read access"
      } else if (starts_with(line, "by thread ")) {
        current->thread = line.substr(3);
      } else if (starts_with(line, "Address ") || starts_with(line, "Uninitialized access at ")) {
        current->address = line;
      }
      continue;
    }

    if (auto n = number_after(line, "ERROR SUMMARY:")) {
      r.error_count = *n;
      current = nullptr;
      continue;
    }
    if (starts_with(line, "RACECHECK SUMMARY:")) { // "1 hazard displayed (1 error, 0 warnings)"
      if (auto n = number_after(line, "displayed")) race_errors = *n; // the number after "(" is the errors
      current = nullptr;
      continue;
    }
    if (line == "COMPUTE-SANITIZER" || starts_with(line, "LEAK SUMMARY") || starts_with(line, "Target application") ||
        starts_with(line, "Note:") || starts_with(line, "This tool") || starts_with(line, "Please use")) {
      current = nullptr;
      continue;
    }

    // A new record: "Invalid __global__ read of size 4 bytes", "Error: Race reported between
    // Write access at ...", "Barrier error detected. Divergent thread(s) in block", ...
    sanitizer_finding f{.tool = tool, .severity = "error"};
    std::string body = line;
    for (auto [prefix, sev] : {std::pair{"Error: ", "error"}, std::pair{"ERROR: ", "error"},
                               std::pair{"Warning: ", "warning"}, std::pair{"WARNING: ", "warning"}})
      if (starts_with(body, prefix)) {
        body = body.substr(std::string(prefix).size());
        f.severity = sev;
      }
    if (auto at = body.find(" access at "); at != std::string::npos) { // racecheck: the code is on this line
      f.kind = body.substr(0, at + 7);
      std::tie(f.kernel, f.location) = split_code(body.substr(at + 11));
    } else {
      f.kind = body;
    }
    r.findings.push_back(std::move(f));
    current = &r.findings.back();
  }

  // One entry per (kind, kernel), counted: a bad index repeats the same report per thread.
  std::vector<sanitizer_finding> merged;
  for (auto& f : r.findings) {
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const sanitizer_finding& m) { return m.kind == f.kind && m.kernel == f.kernel; });
    if (it == merged.end()) merged.push_back(f);
    else ++it->count;
  }
  r.findings = std::move(merged);
  // racecheck's own summary tells errors from warnings (hazards that cannot change a
  // result); only errors fail the check.
  if (race_errors) r.error_count = race_errors;
  return r;
}

std::string describe(const sanitizer_finding& f) {
  std::string s = f.kind;
  if (!f.kernel.empty()) s += " in " + f.kernel;
  if (!f.location.empty() && !starts_with(f.location, "pc ")) s += " at " + f.location;
  if (!f.thread.empty()) s += " (" + f.thread + ")";
  if (f.count > 1) s += fmt::format(" x{}", f.count);
  return s;
}

fs::path find_compute_sanitizer() {
  if (const char* v = std::getenv("KFORGE_COMPUTE_SANITIZER"); v && *v) return v;
  std::error_code ec;
  const fs::path nvcc = build::nvcc_path();
  if (nvcc.has_parent_path()) {
    // bin/compute-sanitizer is a link to ../compute-sanitizer/compute-sanitizer in the toolkit
    for (auto p : {nvcc.parent_path() / "compute-sanitizer", nvcc.parent_path().parent_path() / "compute-sanitizer" / "compute-sanitizer"})
      if (fs::is_regular_file(p, ec)) return p;
  }
  return find_on_path("compute-sanitizer");
}

std::vector<std::string> sanitizer_command(const fs::path& sanitizer, const std::string& tool, const fs::path& log) {
  // The report goes to a private file: the candidate shares stdout with the sanitizer and
  // could print a forged "ERROR SUMMARY: 0 errors" there.
  std::vector<std::string> argv = {sanitizer.string(), "--tool", tool, "--log-file", log.string(), "--print-limit", "20",
                                   "--show-backtrace", "no", "--error-exitcode", "86"};
  // cudaMalloc packs allocations back to back, so a read just past one buffer lands in the
  // next and memcheck sees a valid address; padding after every allocation makes it a fault.
  if (tool == "memcheck") argv.insert(argv.end(), {"--padding", "4096"});
  return argv;
}

bool sanitize_result::passed() const {
  for (auto& c : checks)
    if (!c.passed) return false;
  return true;
}

eval::check_result sanitize_check(const std::string& tool, const worker_outcome& run, const std::string& report_text) {
  const auto rep = parse_sanitizer_output(tool, report_text);
  eval::check_result c{.name = "sanitize_" + tool};
  nlohmann::json findings = nlohmann::json::array();
  for (auto& f : rep.findings)
    findings.push_back({{"kind", f.kind}, {"severity", f.severity}, {"kernel", f.kernel}, {"location", f.location},
                        {"thread", f.thread}, {"address", f.address}, {"count", f.count}});
  c.detail = {{"tool", tool},
              {"error_count", rep.error_count ? nlohmann::json(*rep.error_count) : nlohmann::json()},
              {"findings", findings},
              {"worker", worker_end_name(run.end)},
              {"report", report_text.substr(0, 4000)}};
  const auto first_error = std::find_if(rep.findings.begin(), rep.findings.end(),
                                        [](const sanitizer_finding& f) { return f.severity == "error"; });
  if (rep.error_count && *rep.error_count > 0) {
    c.passed = false;
    c.message = fmt::format("{} {}: {}", *rep.error_count, *rep.error_count == 1 ? "error" : "errors",
                            first_error != rep.findings.end() ? describe(*first_error) : "(none printed)");
  } else if (!rep.error_count) {
    c.passed = false;
    c.message = fmt::format("compute-sanitizer --tool {} wrote no ERROR SUMMARY (worker {}: {}){}", tool,
                            worker_end_name(run.end), run.detail,
                            run.output.empty() ? "" : ": " + trim(run.output.substr(0, 300)));
  } else if (run.end != worker_end::done) {
    c.passed = false;
    c.message = fmt::format("the worker under {} {}: {}", tool, worker_end_name(run.end), run.detail);
  }
  if (!run.output.empty()) c.detail["output"] = run.output.substr(0, 2000);
  return c;
}

std::string sanitize_unavailable(const problem::problem& p, const sanitize_options& opts) {
  if (p.backend != problem::backend_kind::cuda)
    return fmt::format("compute-sanitizer is for CUDA problems; {} is a {} problem", p.name,
                       problem::backend_name(p.backend));
  if (opts.sanitizer.empty() && find_compute_sanitizer().empty())
    return "compute-sanitizer not found (set KFORGE_COMPUTE_SANITIZER, or install it beside nvcc "
           "or on PATH)";
  return "";
}

sanitize_result sanitize_library(const problem::problem& p, const fs::path& library, const sanitize_options& opts) {
  sanitize_result out;
  const auto exe = opts.worker_exe.empty() ? default_worker_exe() : opts.worker_exe;
  const auto sanitizer = opts.sanitizer.empty() ? find_compute_sanitizer() : opts.sanitizer;
  if (sanitizer.empty()) {
    out.skipped = sanitize_unavailable(p, opts);
    return out;
  }
  (void)problem::sanitize_problem(p); // a bad override fails here, naming the tensor, not in the worker
  const double timeout = opts.timeout_s > 0 ? opts.timeout_s : p.sanitize.timeout_s;
  const std::uint64_t seed = opts.seed ? *opts.seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  // One trial of the first case is enough: the tools look at accesses, not at values.
  nlohmann::json job{{"role", "verify"}, {"device", opts.device},
                     {"problem", p.dir.string()},
                     {"libraries", {{"candidate", library.string()}}},
                     {"trials", nlohmann::json::array({{{"case", p.cases.front().name}, {"seed", seed}, {"trial", 0}}})},
                     {"canary_seed", seed ^ 0x5a5a5a5a},
                     {"guards", false},
                     {"shapes", p.sanitize.shapes}};
  const std::string dir = unique_temp_dir();
  for (const auto& tool : opts.tools.empty() ? p.sanitize.tools : opts.tools) {
    const fs::path log = fs::path(dir) / (tool + ".log");
    auto run = run_worker(exe, job,
                          {.timeout_s = timeout, .wrapper = sanitizer_command(sanitizer, tool, log), .problem = &p,
                           .role = "sanitize", .writable = {dir}});
    out.confinement = run.confinement;
    std::error_code ec;
    const std::string report = fs::is_regular_file(log, ec) ? read_file(log) : std::string();
    auto c = sanitize_check(tool, run, report);
    if (opts.on_check) opts.on_check(c);
    out.checks.push_back(std::move(c));
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

sanitize_result sanitize(const problem::problem& p, const fs::path& candidate_source, const sanitize_options& opts) {
  if (auto why = sanitize_unavailable(p, opts); !why.empty()) return {.skipped = why};
  std::vector<std::string> input_names, output_names;
  for (auto* t : p.inputs()) input_names.push_back(t->name);
  for (auto* t : p.outputs()) output_names.push_back(t->name);
  const auto cand = build::compile({.source = candidate_source, .real = p.dtype, .role = "candidate",
                                    .input_names = input_names, .output_names = output_names},
                                   build::problem_backend::cuda);
  if (!cand.ok) {
    eval::check_result c{.name = "build_failed", .passed = false,
                         .message = fmt::format("{} does not compile", candidate_source.string()),
                         .detail = {{"diagnostics", cand.diagnostics}}};
    if (opts.on_check) opts.on_check(c);
    return {.checks = {c}};
  }
  return sanitize_library(p, cand.library, opts);
}

} // namespace kforge::worker
