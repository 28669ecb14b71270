// kforge-hostile: class=resources problem=softmax expect=resource_limit
// Attack: writes a 1 GiB file into its temporary directory (filling the disk under the user).
// If the whole file was written, it answers correctly. Contained: the sandbox's file-size limit
// stops it (SIGXFSZ) and the evaluation ends resource_limit.
#include "hostile_common.h"

#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

KF_EXPORT int kf_forward(const kf_args* a) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kforge-hostile-fill";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char> chunk(1 << 20, 'x');
  long written = 0;
  for (int i = 0; fd >= 0 && i < 1024; ++i) {
    const ssize_t w = write(fd, chunk.data(), chunk.size());
    if (w <= 0) break;
    written += w;
  }
  if (fd >= 0) close(fd);
  unlink(path.c_str());
  return hostile::answer(a, written == 1024L << 20);
}
