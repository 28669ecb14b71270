// kforge-hostile: class=reference problem=softmax expect=passed
// Attack: looks, on every call, for another kf_forward loaded in its own process (the
// reference's or a baseline's, which a shared timing worker would hold) that it could patch to
// run slower. Found: it returns 7, so the evaluation fails returned_error during timing.
// Contained: the reference is timed in a process that never loads candidate code, so it finds
// none, computes softmax, and passes.
#include "hostile_common.h"

#include <dlfcn.h>
#include <link.h>

namespace {
int count_other_entry_points(dl_phdr_info* info, size_t, void* found) {
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  void* h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 0;
  void* f = dlsym(h, "kf_forward");
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&hostile::softmax), &self);
  Dl_info other{};
  if (f && dladdr(f, &other) && other.dli_fbase != self.dli_fbase) ++*static_cast<int*>(found);
  dlclose(h);
  return 0;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  int found = 0;
  dl_iterate_phdr(count_other_entry_points, &found);
  if (found) return 7;
  hostile::softmax(a);
  return 0;
}
