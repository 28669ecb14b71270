/* Pre-included in every kernel-only (NVRTC) candidate: NVRTC compiles device code without
 * the C library headers, so the few macros kernels take from <math.h> come from here, and
 * the ABI's types from kforge/kernel.h. */
#ifndef KFORGE_NVRTC_PRELUDE_H
#define KFORGE_NVRTC_PRELUDE_H
#include <kforge/kernel.h>
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#endif
