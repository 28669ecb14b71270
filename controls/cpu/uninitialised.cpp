// Control 'uninitialised': returns success and writes nothing, so every output still holds
// what the harness put there. The harness poisons outputs before every call; if this
// passes, that poisoning (or its detection) is broken, whatever the problem.
#include "control.h"

KF_EXPORT int kf_forward(const kf_args* a) {
  (void)a;
  return 0;
}
