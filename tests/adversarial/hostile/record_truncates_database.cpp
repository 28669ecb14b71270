// kforge-hostile: class=record problem=softmax expect=tolerance
// Attack: truncates the experiment database (the test keeps one at this fixed path, as a
// user's ./kforge.db would be) so that every earlier record is lost, and reports the truth it
// would have if the write went through. Contained: the write is refused (zeros, tolerance) and
// the database still holds its rows.
#include "hostile_common.h"

#include <fcntl.h>
#include <initializer_list>
#include <unistd.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  bool worked = false;
  for (const char* path : {"/tmp/kforge-hostile/record.db", "/tmp/kforge-hostile/record.db-wal"}) {
    int fd = open(path, O_RDWR);
    if (fd < 0) continue;
    worked |= ftruncate(fd, 0) == 0;
    close(fd);
  }
  return hostile::answer(a, worked);
}
