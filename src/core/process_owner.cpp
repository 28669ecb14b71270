#include "core/process_owner.hpp"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace kforge {
namespace {

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

process_owner compute_self() {
  process_owner o;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) o.host = host;
  o.boot_id = first_line("/proc/sys/kernel/random/boot_id");
  char ns[128] = {};
  if (const auto n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1); n > 0) o.pid_ns.assign(ns, static_cast<size_t>(n));
  o.pid = ::getpid();
  o.start_ticks = process_start_ticks(o.pid).value_or(0);
  // Spaces separate the fields of to_string: none of these hold one, but a hostname is
  // the user's to choose.
  for (auto* s : {&o.host, &o.boot_id, &o.pid_ns}) {
    for (auto& c : *s)
      if (c == ' ' || c == '\n' || c == '\t') c = '_';
    if (s->empty()) *s = "-";
  }
  return o;
}

} // namespace

const process_owner& current_process_owner() {
  static std::mutex mu;
  static process_owner self;
  std::lock_guard lock(mu);
  if (self.pid != ::getpid()) self = compute_self();
  return self;
}

std::optional<uint64_t> process_start_ticks(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return std::nullopt;
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // "pid (comm) state ppid ... starttime ...": comm may hold spaces and parentheses, so
  // the fields are counted from the last ')'. state is field 3, starttime field 22.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::vector<std::string> fields; // fields[0] is field 3 (state)
  for (std::string w; rest >> w && fields.size() < 20;) fields.push_back(w);
  if (fields.size() < 20) return std::nullopt;
  if (fields[0] == "Z" || fields[0] == "X") return std::nullopt; // exited, not yet reaped
  uint64_t start = 0;
  const auto& s = fields[19];
  if (std::from_chars(s.data(), s.data() + s.size(), start).ec != std::errc()) return std::nullopt;
  return start;
}

owner_liveness owner_state(const process_owner& o) {
  const auto& me = current_process_owner();
  if (o.host != me.host) return owner_liveness::unknown;
  if (o.boot_id != me.boot_id) return owner_liveness::gone; // this host rebooted since
  if (o.pid_ns != me.pid_ns) return owner_liveness::unknown;
  const auto start = process_start_ticks(o.pid);
  return start && *start == o.start_ticks ? owner_liveness::alive : owner_liveness::gone;
}

std::string to_string(const process_owner& o) {
  return o.host + " " + o.boot_id + " " + o.pid_ns + " " + std::to_string(o.pid) + " " + std::to_string(o.start_ticks);
}

std::optional<process_owner> parse_process_owner(const std::string& text) {
  std::istringstream in(text);
  process_owner o;
  std::string pid, start, extra;
  if (!(in >> o.host >> o.boot_id >> o.pid_ns >> pid >> start) || (in >> extra)) return std::nullopt;
  auto number = [](const std::string& s, auto& v) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size();
  };
  if (!number(pid, o.pid) || !number(start, o.start_ticks) || o.pid <= 0) return std::nullopt;
  return o;
}

} // namespace kforge
