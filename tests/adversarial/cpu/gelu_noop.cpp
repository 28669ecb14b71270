// kforge-adversarial: problem=gelu expect=unwritten
// Cheat/failure: validates its arguments, returns 0 and writes nothing, leaving the harness's poison in the whole output.
#include <kforge/kernel.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  if (a->num_inputs != 1 || a->num_outputs != 1) return 1;
  if (a->inputs[0].dtype != KF_F32 || a->outputs[0].dtype != KF_F32) return 2;
  return 0;
}
