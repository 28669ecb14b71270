// kforge-hostile: class=processes problem=softmax expect=tolerance
// Attack: leaves a grandchild in a session of its own (setsid), named kf-hostile-gc, that
// sleeps past the end of the evaluation and then truncates the database (the verdict flipped a
// second after kforge printed it); and tries to ptrace its parent. A ptrace that works counts as
// a success. Contained: ptrace refused (zeros), and the grandchild is gone when the evaluation
// ends (the test looks for its name).
#include "hostile_common.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {
bool launched = false;
void leave_grandchild() {
  if (launched) return;
  launched = true;
  const pid_t child = fork();
  if (child != 0) {
    if (child > 0) waitpid(child, nullptr, 0);
    return;
  }
  setsid();
  if (fork() != 0) _exit(0);
  prctl(PR_SET_NAME, "kf-hostile-gc");
  for (int fd = 0; fd < 1024; ++fd) close(fd); // let go of the worker's pipes
  sleep(4);
  int fd = open("/tmp/kforge-hostile/late.db", O_RDWR);
  if (fd >= 0) (void)!ftruncate(fd, 0);
  _exit(0);
}
} // namespace

KF_EXPORT int kf_forward(const kf_args* a) {
  leave_grandchild();
  bool worked = false;
  const pid_t parent = getppid();
  if (parent > 1 && ptrace(PTRACE_ATTACH, parent, nullptr, nullptr) == 0) {
    worked = true;
    waitpid(parent, nullptr, __WALL);
    ptrace(PTRACE_DETACH, parent, nullptr, nullptr);
  }
  return hostile::answer(a, worked);
}
