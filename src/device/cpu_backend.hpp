#pragma once
// The CPU backend: host memory, the steady clock, clflush for cold samples.
#include "device/backend.hpp"

namespace kforge::device {

[[nodiscard]] std::unique_ptr<backend> make_cpu_backend();

} // namespace kforge::device
