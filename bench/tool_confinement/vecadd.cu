#include <cstdio>
#include <cuda_runtime.h>
__global__ void add(float* a, const float* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += b[i]; }
int main() {
  int n = 1 << 20, dev = -1;
  cudaError_t e = cudaGetDeviceCount(&dev);
  std::printf("vecadd: cudaGetDeviceCount -> %d (%s) count %d\n", (int)e, cudaGetErrorString(e), dev);
  if (e != cudaSuccess) return 3;
  float *a, *b;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4);
  cudaMemset(a, 0, n * 4); cudaMemset(b, 0, n * 4);
  add<<<n / 256, 256>>>(a, b, n);
  e = cudaDeviceSynchronize();
  std::printf("vecadd: kernel -> %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 4;
}
