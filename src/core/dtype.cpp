#include "core/dtype.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kforge {
namespace {

// IEEE half and bfloat16 conversions, round-to-nearest-even; enough for generating
// inputs and reading outputs on the host.
float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    out = man ? NAN : INFINITY;
  } else {
    out = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -out : out;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = (x >> 16) & 0x8000;
  if (std::isnan(f)) return sign | 0x7e00;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -25)) return sign;
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5,1)
  int exp = e - 1 + 15;
  if (exp <= 0) { // subnormal: units of 2^-24
    float q = std::nearbyint(std::ldexp(a, 24));
    return sign | static_cast<uint16_t>(q);
  }
  float q = std::nearbyint(std::ldexp(a, 10 - (e - 1))); // in [1024, 2048]
  uint32_t m = static_cast<uint32_t>(q);
  if (m == 2048) { m = 1024; ++exp; }
  if (exp >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((exp << 10) | (m & 0x3ff));
}

float bf16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

} // namespace

std::size_t dtype_size(kf_dtype t) {
  switch (t) {
  case KF_F16: case KF_BF16: return 2;
  case KF_F32: case KF_I32: return 4;
  case KF_F64: case KF_I64: return 8;
  case KF_I8: case KF_U8: case KF_BOOL: return 1;
  }
  return 0;
}

std::string_view dtype_name(kf_dtype t) {
  switch (t) {
  case KF_F16: return "f16";
  case KF_BF16: return "bf16";
  case KF_F32: return "f32";
  case KF_F64: return "f64";
  case KF_I8: return "i8";
  case KF_I32: return "i32";
  case KF_I64: return "i64";
  case KF_U8: return "u8";
  case KF_BOOL: return "bool";
  }
  return "?";
}

std::optional<kf_dtype> dtype_from_name(std::string_view n) {
  for (kf_dtype t : {KF_F16, KF_BF16, KF_F32, KF_F64, KF_I8, KF_I32, KF_I64, KF_U8, KF_BOOL})
    if (dtype_name(t) == n) return t;
  return std::nullopt;
}

bool dtype_is_real(kf_dtype t) { return t == KF_F16 || t == KF_BF16 || t == KF_F32 || t == KF_F64; }

std::string_view dtype_c_name(kf_dtype t) {
  switch (t) {
  case KF_F16: return "__half";
  case KF_BF16: return "__nv_bfloat16";
  case KF_F32: return "float";
  case KF_F64: return "double";
  default: return "";
  }
}

double dtype_epsilon(kf_dtype t) {
  switch (t) {
  case KF_F16: return std::ldexp(1.0, -11);
  case KF_BF16: return std::ldexp(1.0, -8);
  case KF_F32: return std::ldexp(1.0, -24);
  case KF_F64: return std::ldexp(1.0, -53);
  default: return 0.0;
  }
}

double load_as_double(const void* data, kf_dtype t, std::size_t i) {
  switch (t) {
  case KF_F16: return half_to_float(static_cast<const uint16_t*>(data)[i]);
  case KF_BF16: return bf16_to_float(static_cast<const uint16_t*>(data)[i]);
  case KF_F32: return static_cast<const float*>(data)[i];
  case KF_F64: return static_cast<const double*>(data)[i];
  case KF_I8: return static_cast<const int8_t*>(data)[i];
  case KF_I32: return static_cast<const int32_t*>(data)[i];
  case KF_I64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
  case KF_U8: return static_cast<const uint8_t*>(data)[i];
  case KF_BOOL: return static_cast<const uint8_t*>(data)[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

void store_from_double(void* data, kf_dtype t, std::size_t i, double v) {
  switch (t) {
  case KF_F16: static_cast<uint16_t*>(data)[i] = float_to_half(static_cast<float>(v)); break;
  case KF_BF16: static_cast<uint16_t*>(data)[i] = float_to_bf16(static_cast<float>(v)); break;
  case KF_F32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
  case KF_F64: static_cast<double*>(data)[i] = v; break;
  case KF_I8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); break;
  case KF_I32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v); break;
  case KF_I64: static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v); break;
  case KF_U8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v); break;
  case KF_BOOL: static_cast<uint8_t*>(data)[i] = v != 0.0; break;
  }
}

} // namespace kforge
