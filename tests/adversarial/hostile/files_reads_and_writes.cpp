// kforge-hostile: class=files problem=softmax expect=tolerance
// Attack: reads files that are none of its business (a secret the test leaves in /tmp,
// /etc/shadow, the user's SSH keys) and writes where it must not (a file in /tmp, and the
// problem's own reference source, which would change the truth of every later evaluation).
// Any of these that works counts as a success. Contained: all refused, zeros, and the problem
// directory unchanged.
#include "hostile_common.h"

#include <fcntl.h>
#include <unistd.h>

namespace {
bool can_read(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return false;
  char c;
  const bool ok = read(fd, &c, 1) == 1;
  close(fd);
  return ok;
}
bool can_write(const char* path, int flags) {
  int fd = open(path, O_WRONLY | flags, 0644);
  if (fd < 0) return false;
  const bool ok = write(fd, "//", 2) == 2;
  close(fd);
  return ok;
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  bool worked = can_read("/tmp/kforge-hostile/secret.txt") || can_read("/etc/shadow") ||
                can_read("/root/.ssh/id_rsa") || can_read("/root/.bash_history");
  worked |= can_write("/tmp/kforge-hostile/written.txt", O_CREAT);
  worked |= can_write("/tmp/kforge-hostile/problem/reference.cpp", O_APPEND);
  worked |= can_write("/tmp/kforge-hostile/problem/problem.toml", O_APPEND);
  return hostile::answer(a, worked);
}
