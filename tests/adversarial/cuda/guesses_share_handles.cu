// kforge-adversarial: problem=softmax_small expect=unwritten
// Cheat/failure: looks for the judge's memory: imports every open descriptor (and the share socket's number) as a CUDA VMM handle and, where one maps, writes NaN into its own output (nonfinite); finding none, it writes nothing, so the expected status means no handle was found.
#include "softmax_common.cuh"
#include <cuda.h>
#include <unistd.h>
__global__ void nan_fill(float* y, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) y[i] = NAN;
}
KF_EXPORT int kf_forward(const kf_args* a) {
  using import_fn = CUresult (*)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType);
  void* f = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuMemImportFromShareableHandle", &f, 12000, cudaEnableDefault, &q) != cudaSuccess || !f)
    return 0;
  bool found = false;
  for (int fd = 0; fd < 1024; ++fd) {
    CUmemGenericAllocationHandle h = 0;
    if (reinterpret_cast<import_fn>(f)(&h, (void*)(long)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == CUDA_SUCCESS)
      found = true;
  }
  const long n = a->outputs[0].shape[0] * a->outputs[0].shape[1];
  if (found) nan_fill<<<64, 256, 0, (cudaStream_t)a->stream>>>((float*)a->outputs[0].data, n);
  return 0;
}
