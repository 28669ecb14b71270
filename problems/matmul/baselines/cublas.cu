// Baseline: cuBLAS SGEMM in its default (pedantic fp32, no TF32) math mode.
// Row-major C = A B is column-major C^T = B^T A^T, so B goes first.
#include <kforge/kernel.h>
#include <cublas_v2.h>

KF_EXPORT int kf_forward(const kf_args* a) {
  static cublasHandle_t h = nullptr;
  if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 3;
  cublasSetStream(h, static_cast<cudaStream_t>(a->stream));
  const int M = a->inputs[0].shape[0], K = a->inputs[0].shape[1], N = a->inputs[1].shape[1];
  const float one = 1.f, zero = 0.f;
  const auto st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, static_cast<const float*>(a->inputs[1].data), N,
                              static_cast<const float*>(a->inputs[0].data), K, &zero,
                              static_cast<float*>(a->outputs[0].data), N);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : 4;
}
