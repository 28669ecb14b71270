#pragma once
// kforge's dtype conversions for its own GPU kernels: the same rounding, bit for bit, as
// core/dtype.cpp's load_as_double / store_from_double on the host (IEEE half and bfloat16
// by the same integer steps, round to nearest even), so that inputs drawn on the device
// equal the host's. Values are kf_dtype's (include/kforge/kernel.h).
#include <cstdint>
#include <cmath>

namespace kforge::gpu {

enum : int { f16 = 1, bf16, f32, f64, i8, i32, i64, u8, boolean };

__host__ __device__ inline int dtype_bytes(int t) {
  switch (t) {
  case f16: case bf16: return 2;
  case f32: case i32: return 4;
  case f64: case i64: return 8;
  default: return 1;
  }
}

__device__ inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f;
  const std::uint32_t man = h & 0x3ff;
  float out;
  if (exp == 0) out = ldexpf(static_cast<float>(man), -24);
  else if (exp == 31) out = man ? __int_as_float(0x7fc00000) : __int_as_float(0x7f800000);
  else out = ldexpf(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -out : out;
}

__device__ inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = __float_as_uint(f);
  const std::uint16_t sign = (x >> 16) & 0x8000;
  if (isnan(f)) return sign | 0x7e00;
  const float a = fabsf(f);
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < ldexpf(1.0f, -25)) return sign;
  int e;
  frexpf(a, &e);
  int exp = e - 1 + 15;
  if (exp <= 0) return sign | static_cast<std::uint16_t>(nearbyintf(ldexpf(a, 24)));
  std::uint32_t m = static_cast<std::uint32_t>(nearbyintf(ldexpf(a, 10 - (e - 1))));
  if (m == 2048) {
    m = 1024;
    ++exp;
  }
  if (exp >= 31) return sign | 0x7c00;
  return sign | static_cast<std::uint16_t>((exp << 10) | (m & 0x3ff));
}

__device__ inline float bf16_to_float(std::uint16_t b) { return __uint_as_float(static_cast<std::uint32_t>(b) << 16); }

__device__ inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x = __float_as_uint(f);
  if (isnan(f)) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}

__device__ inline double load(const void* data, int t, std::uint64_t i) {
  switch (t) {
  case f16: return half_to_float(static_cast<const std::uint16_t*>(data)[i]);
  case bf16: return bf16_to_float(static_cast<const std::uint16_t*>(data)[i]);
  case f32: return static_cast<const float*>(data)[i];
  case f64: return static_cast<const double*>(data)[i];
  case i8: return static_cast<const std::int8_t*>(data)[i];
  case i32: return static_cast<const std::int32_t*>(data)[i];
  case i64: return static_cast<double>(static_cast<const std::int64_t*>(data)[i]);
  case u8: return static_cast<const std::uint8_t*>(data)[i];
  case boolean: return static_cast<const std::uint8_t*>(data)[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

__device__ inline void store(void* data, int t, std::uint64_t i, double v) {
  switch (t) {
  case f16: static_cast<std::uint16_t*>(data)[i] = float_to_half(static_cast<float>(v)); break;
  case bf16: static_cast<std::uint16_t*>(data)[i] = float_to_bf16(static_cast<float>(v)); break;
  case f32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
  case f64: static_cast<double*>(data)[i] = v; break;
  case i8: static_cast<std::int8_t*>(data)[i] = static_cast<std::int8_t>(v); break;
  case i32: static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(v); break;
  case i64: static_cast<std::int64_t*>(data)[i] = static_cast<std::int64_t>(v); break;
  case u8: static_cast<std::uint8_t*>(data)[i] = static_cast<std::uint8_t>(v); break;
  case boolean: static_cast<std::uint8_t*>(data)[i] = v != 0.0; break;
  }
}

} // namespace kforge::gpu
