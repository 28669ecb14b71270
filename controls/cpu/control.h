// What the CPU control kernels share: element sizes, the bit pattern of 1 in every dtype,
// and a walk over a tensor's elements in logical (row-major) order through its strides.
// With these a control works for any problem: any number of tensors, any dtype, any shape.
//   for (int64_t i = 0; i < kf_control::numel(t); ++i) std::memset(kf_control::element(t, i), 0, size);
#ifndef KF_CONTROL_H
#define KF_CONTROL_H

#include <kforge/kernel.h>

#include <cstdint>
#include <cstring>

namespace kf_control {

/// @return bytes per element of d; 0 for a dtype this ABI version does not know.
inline size_t element_size(kf_dtype d) {
  switch (d) {
  case KF_F16: case KF_BF16: return 2;
  case KF_F32: case KF_I32: return 4;
  case KF_F64: case KF_I64: return 8;
  case KF_I8: case KF_U8: case KF_BOOL: return 1;
  }
  return 0;
}

inline int64_t numel(const kf_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

/// Elements the tensor's memory spans: every element lies in [data, data + span).
inline int64_t span(const kf_tensor& t) {
  int64_t s = 1;
  for (int d = 0; d < t.ndim; ++d) s += (t.shape[d] - 1) * t.strides[d];
  return s;
}

/// The address of the i-th element in row-major order; the strides say where it lives.
inline unsigned char* element(const kf_tensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.shape[d]) * t.strides[d];
    i /= t.shape[d];
  }
  return static_cast<unsigned char*>(t.data) + off * static_cast<int64_t>(element_size(t.dtype));
}

/// Writes the value 1 of dtype d (little-endian) into out[0 .. element_size(d)).
inline void one_of(kf_dtype d, unsigned char* out) {
  const float f = 1.0f;
  const double g = 1.0;
  const int32_t i32 = 1;
  const int64_t i64 = 1;
  switch (d) {
  case KF_F16: out[0] = 0x00; out[1] = 0x3C; break;  // 1.0 in IEEE binary16
  case KF_BF16: out[0] = 0x80; out[1] = 0x3F; break; // 1.0 in bfloat16: the top half of 1.0f
  case KF_F32: std::memcpy(out, &f, 4); break;
  case KF_F64: std::memcpy(out, &g, 8); break;
  case KF_I32: std::memcpy(out, &i32, 4); break;
  case KF_I64: std::memcpy(out, &i64, 8); break;
  case KF_I8: case KF_U8: case KF_BOOL: out[0] = 1; break;
  }
}

/// splitmix64: a fixed, well-mixed index hash (the same in the CUDA controls).
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

} // namespace kf_control

#endif // KF_CONTROL_H
