// kforge-hostile: class=build problem=softmax expect=build_failed
// Attack: embeds a file from outside its folder into its own library with the assembler's
// .incbin, then reads it at run time (a build-time read that leaves no diagnostic). If the
// embedded bytes are the secret's, it answers correctly. Contained: the assembler cannot read
// the file and the build fails.
#include "hostile_common.h"

#include <cstring>

asm(".section .rodata\n"
    ".global kforge_hostile_blob\n"
    "kforge_hostile_blob:\n"
    ".incbin \"/tmp/kforge-hostile/build-secret.txt\"\n"
    ".byte 0\n"
    ".text\n");
extern "C" const char kforge_hostile_blob[];

KF_EXPORT int kf_forward(const kf_args* a) {
  return hostile::answer(a, std::strncmp(kforge_hostile_blob, "kforge_build_secret", 19) == 0);
}
