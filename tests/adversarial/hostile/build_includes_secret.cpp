// kforge-hostile: class=build problem=softmax expect=build_failed
// Attack: includes a file outside the candidate's folder (a secret the test leaves in /tmp), so
// that the compiler prints its first line into the build diagnostics, which land in the
// database and in an LLM's next prompt. Contained: the compiler cannot read it, the build fails,
// and the diagnostics carry its path but none of its content.
#include "/tmp/kforge-hostile/build-secret.txt"
#include "hostile_common.h"

KF_EXPORT int kf_forward(const kf_args* a) { return hostile::answer(a, false); }
