/* kforge candidate ABI, version 1.
 *
 * Every implementation kforge runs (reference, baseline, seed, candidate) is a
 * shared object exporting kf_forward. The harness owns all memory: it allocates
 * inputs, outputs and workspace, poisons outputs and workspace before every call,
 * and checks guard regions around every buffer afterwards.
 *
 *   KF_EXPORT int kf_forward(const kf_args* a) {
 *     const KF_REAL* x = (const KF_REAL*)a->inputs[0].data;
 *     KF_REAL* y = (KF_REAL*)a->outputs[0].data;
 *     ...
 *     return 0;
 *   }
 *
 * A reference is written once over the scalar macro KF_REAL; the harness builds it
 * at the problem's dtype (the reference) and with KF_REAL=double (the oracle).
 * Tensors whose dtype follows the problem's real type arrive as KF_REAL.
 *
 * Changing anything here is a contract change: bump KF_ABI_VERSION.
 */
#ifndef KFORGE_KERNEL_H
#define KFORGE_KERNEL_H

#if defined(__CUDACC_RTC__)
/* NVRTC (kernel-only candidates) has no C library headers; these match LP64 Linux. */
typedef signed char int8_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned long size_t;
#else
#include <stddef.h>
#include <stdint.h>
#endif

#define KF_ABI_VERSION 1

#ifdef __cplusplus
#define KF_EXTERN_C extern "C"
#else
#define KF_EXTERN_C
#endif
#define KF_EXPORT KF_EXTERN_C __attribute__((visibility("default")))

#ifndef KF_REAL
#define KF_REAL float
#endif

typedef enum { KF_F16 = 1, KF_BF16, KF_F32, KF_F64, KF_I8, KF_I32, KF_I64, KF_U8, KF_BOOL } kf_dtype;

typedef struct {
  void* data;
  kf_dtype dtype;
  int32_t ndim;
  int64_t shape[8];
  int64_t strides[8]; /* in elements */
} kf_tensor;

typedef struct {
  const kf_tensor* inputs;
  int32_t num_inputs;
  kf_tensor* outputs;
  int32_t num_outputs;
  void* stream; /* cudaStream_t for CUDA; NULL for the CPU backend */
  void* workspace;
  size_t workspace_bytes;
} kf_args;

#if !defined(__CUDACC_RTC__) /* kernel-only candidates (NVRTC) have no host functions */
/* Required: enqueue all work (on args->stream for CUDA); return 0 on success. */
KF_EXPORT int kf_forward(const kf_args* args);
/* Optional: workspace the candidate needs for these shapes; asked once per shape. */
KF_EXPORT size_t kf_workspace_bytes(const kf_args* args);
#endif

#endif /* KFORGE_KERNEL_H */
