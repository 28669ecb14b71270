// kforge-confine: runs one program confined by a policy, reports the layers in force, and
// ends exactly as the program ended.
//   kforge-confine --policy '<json>' [--report-fd N] -- /path/to/program args...
// Exit 125: kforge-confine could not run the program (bad usage or policy, a required layer
// missing); 127: the program could not be executed; otherwise the program's own status.
#include "core/error.hpp"
#include "sandbox/confine.hpp"
#include "sandbox/policy.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "kforge-confine: %s\nusage: kforge-confine --policy '<json>' [--report-fd N] -- /path/to/program "
               "[args...]\n",
               why.c_str());
  std::exit(kforge::sandbox::confine_failed);
}

} // namespace

int main(int argc, char** argv) {
  std::string policy_text;
  int report_fd = -1;
  bool have_policy = false;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--policy" && i + 1 < argc) {
      policy_text = argv[++i];
      have_policy = true;
    } else if (a == "--report-fd" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (!*argv[i] || *end || v < 0 || v > 1 << 20) usage(std::string("--report-fd: not a descriptor: ") + argv[i]);
      report_fd = static_cast<int>(v);
    } else {
      usage("unexpected argument '" + a + "'");
    }
  }
  if (!have_policy) usage("--policy is required");
  if (i >= argc) usage("no program after --");
  kforge::sandbox::policy p;
  try {
    p = kforge::sandbox::policy_from_json(nlohmann::json::parse(policy_text));
  } catch (const nlohmann::json::exception& e) {
    usage(std::string("--policy is not JSON: ") + e.what());
  } catch (const kforge::error& e) {
    usage(e.what());
  }
  kforge::sandbox::run_confined(p, std::vector<std::string>(argv + i, argv + argc), report_fd);
}
