#pragma once
// libcupti, loaded at run time by the worker's CUPTI users (launch_guard: which streams a call
// launched on; kernel_trace: what it launched): one search order for both, so they always
// find the same library.
#include <string>

namespace kforge::worker {

/// dlopen's handle of libcupti (it stays loaded for the process), or nullptr with *why_not set.
[[nodiscard]] void* load_cupti(std::string* why_not);

} // namespace kforge::worker
