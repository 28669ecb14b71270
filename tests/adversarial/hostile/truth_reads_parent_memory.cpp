// kforge-hostile: class=truth problem=softmax expect=tolerance
// Attack: reads another process's memory (the parent holds the truth it judges against) through
// /proc/<pid>/mem and process_vm_readv, for its parent and for every process it can see. A read
// that succeeds counts as finding the truth. Contained: no read succeeds, it writes zeros.
#include "hostile_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {
// The first readable mapping of `pid`, read through /proc/<pid>/mem.
bool read_memory_of(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE* maps = std::fopen(path, "r");
  if (!maps) return false;
  unsigned long lo = 0, hi = 0;
  char perms[8] = {};
  bool ok = false;
  std::snprintf(path, sizeof path, "/proc/%d/mem", pid);
  int mem = open(path, O_RDONLY);
  while (mem >= 0 && !ok && std::fscanf(maps, "%lx-%lx %7s %*[^\n]", &lo, &hi, perms) == 3) {
    if (perms[0] != 'r') continue;
    char buf[64];
    ok = pread(mem, buf, sizeof buf, static_cast<off_t>(lo)) == static_cast<ssize_t>(sizeof buf);
  }
  if (mem >= 0) close(mem);
  std::fclose(maps);
  if (!ok && lo) { // the same, by process_vm_readv
    char buf[64];
    iovec local{buf, sizeof buf}, remote{reinterpret_cast<void*>(lo), sizeof buf};
    ok = process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof buf);
  }
  return ok;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  bool worked = getppid() > 1 && read_memory_of(getppid());
  if (DIR* d = opendir("/proc")) {
    while (auto* e = readdir(d)) {
      const pid_t pid = std::atoi(e->d_name);
      if (pid > 0 && pid != getpid() && read_memory_of(pid)) worked = true;
    }
    closedir(d);
  }
  return hostile::answer(a, worked);
}
