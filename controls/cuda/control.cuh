// What the CUDA control kernels share: element sizes, the bit pattern of 1 in every dtype,
// a walk over a tensor's elements in logical (row-major) order through its strides, and
// the grid-stride kernels built on them. All work goes on the call's stream.
// With these a control works for any problem: any number of tensors, any dtype, any shape.
//   kf_control::fill<<<kf_control::blocks_for(n), 256, 0, kf_control::stream_of(a)>>>(y, pattern);
#ifndef KF_CONTROL_CUH
#define KF_CONTROL_CUH

#include <kforge/kernel.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace kf_control {

/// @return bytes per element of d; 0 for a dtype this ABI version does not know.
__host__ __device__ inline size_t element_size(kf_dtype d) {
  switch (d) {
  case KF_F16: case KF_BF16: return 2;
  case KF_F32: case KF_I32: return 4;
  case KF_F64: case KF_I64: return 8;
  case KF_I8: case KF_U8: case KF_BOOL: return 1;
  }
  return 0;
}

__host__ __device__ inline int64_t numel(const kf_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

/// Elements the tensor's memory spans: every element lies in [data, data + span).
__host__ __device__ inline int64_t span(const kf_tensor& t) {
  int64_t s = 1;
  for (int d = 0; d < t.ndim; ++d) s += (t.shape[d] - 1) * t.strides[d];
  return s;
}

/// Row-major strides: the elements fill [data, data + numel) with no gaps.
__host__ __device__ inline bool contiguous(const kf_tensor& t) {
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

/// The address of the i-th element in row-major order; the strides say where it lives.
__host__ __device__ inline unsigned char* element(const kf_tensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.shape[d]) * t.strides[d];
    i /= t.shape[d];
  }
  return static_cast<unsigned char*>(t.data) + off * static_cast<int64_t>(element_size(t.dtype));
}

/// The value 1 of dtype d as little-endian bytes in the low element_size(d) bytes.
inline uint64_t one_of(kf_dtype d) {
  const float f = 1.0f;
  const double g = 1.0;
  uint64_t bits = 0;
  switch (d) {
  case KF_F16: bits = 0x3C00; break;  // 1.0 in IEEE binary16
  case KF_BF16: bits = 0x3F80; break; // 1.0 in bfloat16: the top half of 1.0f
  case KF_F32: std::memcpy(&bits, &f, 4); break;
  case KF_F64: std::memcpy(&bits, &g, 8); break;
  case KF_I32: case KF_I64: case KF_I8: case KF_U8: case KF_BOOL: bits = 1; break;
  }
  return bits;
}

/// splitmix64: a fixed, well-mixed index hash (the same in the CPU controls).
__host__ __device__ inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline cudaStream_t stream_of(const kf_args* a) { return static_cast<cudaStream_t>(a->stream); }

constexpr int threads = 256;
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 4096 ? (b < 1 ? 1 : b) : 4096); // grid-stride loops do the rest
}

/// Every element of t := the low element_size bytes of pattern.
__global__ void fill(kf_tensor t, uint64_t pattern) {
  const int64_t n = numel(t);
  const size_t size = element_size(t.dtype);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    unsigned char* e = element(t, i);
    for (size_t b = 0; b < size; ++b) e[b] = static_cast<unsigned char>(pattern >> (8 * b));
  }
}

/// Byte b of y (logical order) := byte b mod (x's size in bytes) of x: x repeated or cut off.
__global__ void copy_bytes(kf_tensor y, kf_tensor x) {
  const int64_t out_size = element_size(y.dtype), in_size = element_size(x.dtype);
  const int64_t out_bytes = numel(y) * out_size, in_bytes = numel(x) * in_size;
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < out_bytes; o += (int64_t)gridDim.x * blockDim.x) {
    const int64_t s = o % in_bytes;
    element(y, o / out_size)[o % out_size] = element(x, s / in_size)[s % in_size];
  }
}

/// Element i of dst := element mix(i ^ salt) mod n of src: src's values, resampled with replacement.
__global__ void resample(kf_tensor dst, kf_tensor src, uint64_t salt) {
  const int64_t n = numel(src);
  const size_t size = element_size(src.dtype);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = static_cast<int64_t>(mix(static_cast<uint64_t>(i) ^ salt) % static_cast<uint64_t>(n));
    const unsigned char* from = element(src, j);
    unsigned char* to = element(dst, i);
    for (size_t b = 0; b < size; ++b) to[b] = from[b];
  }
}

} // namespace kf_control

#endif // KF_CONTROL_CUH
