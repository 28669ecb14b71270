// kforge-hostile: class=resources problem=softmax expect=resource_limit
// Attack: takes 4 GiB of host memory and touches all of it (a memory hog on a shared machine).
// If it got the memory, it answers correctly. Contained: the allocation fails at the sandbox's
// memory limit and the evaluation ends resource_limit.
#include "hostile_common.h"

#include <cstring>
#include <new>

KF_EXPORT int kf_forward(const kf_args* a) {
  constexpr std::size_t bytes = std::size_t{4} << 30;
  // The pointer escapes through a volatile: otherwise the compiler may drop the new/delete pair
  // (C++14 lets it) and fold the check to true, and the attack would never ask for memory.
  static char* volatile escaped = nullptr;
  char* p = new char[bytes];
  escaped = p;
  std::memset(escaped, 1, bytes);
  const bool worked = escaped[bytes - 1] == 1;
  delete[] escaped;
  return hostile::answer(a, worked);
}
