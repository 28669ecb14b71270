#pragma once
// kforge calibrate's engine: build the calibration kernels (src/device/calibrate_kernels.cu)
// with nvcc, run them in a worker on the GPU, return the device's ceilings.
#include "device/calibration.hpp"

#include <filesystem>

namespace kforge::worker {

/// @throws kforge::error when there is no GPU, the kernels do not build, or the run fails.
[[nodiscard]] device::ceilings measure_ceilings(const std::filesystem::path& worker_exe);

} // namespace kforge::worker
