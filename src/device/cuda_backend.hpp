#pragma once
// The CUDA backend (built when the CUDA toolkit is found: KFORGE_WITH_CUDA).
#include "device/backend.hpp"

#include <stdexcept>

namespace kforge::device {

/// A sticky device fault (illegal address, launch failure): the process's CUDA context is
/// unusable, so the worker reports it and exits.
class fault : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

[[nodiscard]] std::unique_ptr<backend> make_cuda_backend(int ordinal);
/// Visible CUDA devices (0 when none or no driver).
[[nodiscard]] int cuda_device_count();
/// The description a cuda_backend on `ordinal` would give, from its properties alone.
[[nodiscard]] std::string cuda_device_description(int ordinal);

} // namespace kforge::device
