#pragma once
// The element types of the candidate ABI, with names as written in problem.toml.
#include <kforge/kernel.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

/// @return bytes per element of `t`.
[[nodiscard]] std::size_t dtype_size(kf_dtype t);
/// @return the problem.toml spelling: "f16", "bf16", "f32", "f64", "i8", "i32", "i64", "u8", "bool".
[[nodiscard]] std::string_view dtype_name(kf_dtype t);
[[nodiscard]] std::optional<kf_dtype> dtype_from_name(std::string_view name);
[[nodiscard]] bool dtype_is_real(kf_dtype t); // floating point: compared against the oracle with tolerance
/// @return the C type name used for KF_REAL when building at this dtype ("float", "double").
[[nodiscard]] std::string_view dtype_c_name(kf_dtype t);
/// @return unit roundoff (half an ulp at 1.0) of a real dtype; 0 for integers.
[[nodiscard]] double dtype_epsilon(kf_dtype t);

/// Reads element i of a buffer of dtype t as double.
[[nodiscard]] double load_as_double(const void* data, kf_dtype t, std::size_t i);
/// Writes v (rounded to nearest) into element i of a buffer of dtype t.
void store_from_double(void* data, kf_dtype t, std::size_t i, double v);

} // namespace kforge
