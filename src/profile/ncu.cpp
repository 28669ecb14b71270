#include "profile/ncu.hpp"
#include "core/text.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace kforge::profile {
namespace {


std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto nl = text.find('\n');
    auto line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

// One CSV record on one line: fields separated by commas, optionally double-quoted, a
// doubled quote inside quotes standing for one. Unquoted fields are trimmed.
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (true) {
    std::string field;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
          } else {
            ++i;
            break;
          }
        } else {
          field += line[i++];
        }
      }
      while (i < line.size() && line[i] != ',') ++i; // junk after the closing quote
    } else {
      auto end = line.find(',', i);
      if (end == std::string_view::npos) end = line.size();
      field = std::string(trim(line.substr(i, end - i)));
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) break;
    ++i; // the comma
    if (i == line.size()) {
      fields.emplace_back();
      break;
    }
  }
  return fields;
}

// "1,234,567.5" -> 1234567.5; "n/a", "", "(1, 2, 3)" -> nullopt.
std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  std::string digits;
  for (char c : s)
    if (c != ',') digits += c;
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || std::isnan(v)) return std::nullopt;
  return v;
}

// Columns that are not counters: kept in kernel_metrics' own fields or dropped.
bool is_identity_column(const std::string& c) {
  return c == "ID" || c == "Kernel Name" || c == "Block Size" || c == "Grid Size" || c == "Process Name" ||
         c == "Host Name";
}

// The factor of a prefixed unit word: "Kbyte" with base "byte" -> 1e3.
std::optional<double> prefix_scale(std::string_view word, std::string_view base) {
  if (word == base) return 1.0;
  if (word.size() <= base.size() || word.substr(word.size() - base.size()) != base) return std::nullopt;
  const auto p = word.substr(0, word.size() - base.size());
  if (p == "K") return 1e3;
  if (p == "M") return 1e6;
  if (p == "G") return 1e9;
  if (p == "T") return 1e12;
  if (p == "P") return 1e15;
  if (p == "Ki") return 1024.0;
  if (p == "Mi") return 1024.0 * 1024;
  if (p == "Gi") return 1024.0 * 1024 * 1024;
  if (p == "Ti") return 1024.0 * 1024 * 1024 * 1024;
  if (base == "second" || base == "s") {
    if (p == "m") return 1e-3;
    if (p == "u") return 1e-6;
    if (p == "n") return 1e-9;
    if (p == "p") return 1e-12;
  }
  return std::nullopt;
}

std::optional<double> word_scale(std::string_view w) {
  if (w.empty()) return 1.0;
  // Abbreviations (--print-units base prints "ns", "byte/s", "hz").
  static const std::map<std::string_view, double> exact = {
      {"s", 1.0},    {"ms", 1e-3},  {"us", 1e-6},  {"ns", 1e-9},   {"ps", 1e-12}, {"B", 1.0},
      {"KB", 1e3},   {"MB", 1e6},   {"GB", 1e9},   {"TB", 1e12},   {"KiB", 1024.0}, {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"hz", 1.0}, {"Hz", 1.0}, {"khz", 1e3}, {"kHz", 1e3}, {"Khz", 1e3},
      {"KHz", 1e3}, {"mhz", 1e6}, {"Mhz", 1e6}, {"MHz", 1e6}, {"ghz", 1e9}, {"Ghz", 1e9}, {"GHz", 1e9}};
  if (auto it = exact.find(w); it != exact.end()) return it->second;
  bool ends_in_base = false;
  for (std::string_view base : {"second", "byte", "cycle", "inst", "sector", "request", "warp", "thread",
                                "block", "wavefront", "transaction", "flop"}) {
    if (auto s = prefix_scale(w, base)) return s;
    ends_in_base = ends_in_base || w.ends_with(base);
  }
  // A known unit behind a prefix this function does not know ("Qbyte"): no guess.
  if (ends_in_base) return std::nullopt;
  // Anything else is a counted thing ("register", "SM", "pass", "cluster"): scale 1.
  return 1.0;
}

} // namespace

std::string stall_metric(std::string_view reason) {
  return "smsp__average_warps_issue_stalled_" + std::string(reason) + "_per_issue_active.ratio";
}

std::string metrics_argument() {
  std::string out;
  for (const char* m : ncu_metrics) {
    if (!out.empty()) out += ',';
    out += m;
  }
  return out;
}

std::optional<double> unit_scale(std::string_view unit) {
  unit = trim(unit);
  if (unit.empty() || unit == "%") return 1.0;
  const auto slash = unit.find('/');
  if (slash == std::string_view::npos) return word_scale(unit);
  const auto num = word_scale(unit.substr(0, slash));
  const auto den = word_scale(unit.substr(slash + 1));
  if (!num || !den || *den == 0) return std::nullopt;
  return *num / *den;
}

std::optional<double> si(const kernel_metrics& k, const std::string& metric) {
  auto v = k.values.find(metric);
  if (v == k.values.end()) return std::nullopt;
  auto u = k.units.find(metric);
  const auto scale = unit_scale(u == k.units.end() ? std::string_view() : std::string_view(u->second));
  if (!scale) return std::nullopt;
  return v->second * *scale;
}

std::string ncu_failure(std::string_view text) {
  std::vector<std::string> errors;
  std::set<std::string> seen;
  bool permission = false;
  std::string missing_metric;
  for (auto line : split_lines(text)) {
    const auto at = line.find("==ERROR==");
    if (at == std::string_view::npos) continue;
    std::string msg(trim(line.substr(at + 9)));
    if (msg.find("ERR_NVGPUCTRPERM") != std::string::npos) permission = true;
    if (auto f = msg.find("Failed to find metric"); f != std::string::npos && missing_metric.empty()) {
      std::string_view rest = trim(std::string_view(msg).substr(f + 21));
      if (rest.starts_with("regex:")) rest.remove_prefix(6);
      while (!rest.empty() && (rest.front() == '^' || rest.front() == '"' || rest.front() == '\'')) rest.remove_prefix(1);
      auto end = rest.find_first_of(" \t\"'$,");
      missing_metric = std::string(rest.substr(0, end));
      if (missing_metric.empty()) missing_metric = "(unnamed)";
    }
    if (!msg.empty() && seen.insert(msg).second) errors.push_back(msg);
  }
  if (permission)
    return "no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): run as root, or allow all "
           "users with the nvidia module option NVreg_RestrictProfilingToAdminUsers=0 (e.g. in "
           "/etc/modprobe.d, then reload the driver or reboot)";
  if (!missing_metric.empty())
    return "this ncu does not know metric " + missing_metric +
           " (an older Nsight Compute, or a GPU architecture without it); update Nsight Compute";
  if (errors.empty()) return "";
  // Generic ones ("The application returned an error code") say least: put them last.
  std::stable_partition(errors.begin(), errors.end(),
                        [](const std::string& e) { return e.find("application returned an error") == std::string::npos; });
  std::string out;
  for (auto& e : errors) {
    if (out.size() > 400) break;
    out += (out.empty() ? "" : "; ") + e;
  }
  return out;
}

std::vector<kernel_metrics> parse_ncu_csv(std::string_view text) {
  const auto lines = split_lines(text);
  std::vector<std::string> header;
  std::vector<std::string> units;
  std::vector<kernel_metrics> out;
  bool units_pending = false;
  for (auto line : lines) {
    const auto t = trim(line);
    if (t.empty() || t.starts_with("==")) continue;
    auto fields = split_csv(t);
    if (!fields.empty() && fields.front() == "ID") { // a header (ncu repeats it per process in some versions)
      header = std::move(fields);
      units.assign(header.size(), "");
      units_pending = true;
      continue;
    }
    if (header.empty() || fields.size() != header.size()) continue;
    const bool is_row = parse_number(fields.front()).has_value();
    if (!is_row) {
      if (units_pending && fields.front().empty()) units = std::move(fields);
      units_pending = false;
      continue;
    }
    units_pending = false;
    kernel_metrics k;
    k.id = static_cast<int>(*parse_number(fields.front()));
    for (std::size_t c = 1; c < header.size(); ++c) {
      const auto& col = header[c];
      const auto& val = fields[c];
      if (col == "Kernel Name") k.name = val;
      else if (col == "Grid Size") k.grid = val;
      else if (col == "Block Size") k.block = val;
      if (is_identity_column(col)) continue;
      if (auto v = parse_number(val)) {
        k.values[col] = *v;
        k.units[col] = units[c];
      }
    }
    out.push_back(std::move(k));
  }
  if (header.empty()) {
    if (auto why = ncu_failure(text); !why.empty()) KFORGE_THROW(worker, "ncu failed: {}", why);
  }
  return out;
}

} // namespace kforge::profile
