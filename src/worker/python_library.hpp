#pragma once
// A Python candidate (KernelBench's ModelNew, docs/candidates.md) as a kernel_library: the
// worker embeds the interpreter its build recorded (libpython, dlopen'd: no Python headers or
// link-time dependency) and calls python/kforge_candidate.py's Host.forward(&args) from
// kf_forward, and copies the tensors it returned into kforge's outputs (kernel_library::place).
// Everything around the call (the timer, the judge, the guards, the launch watch,
// confinement) is the worker's C++, which the candidate's Python cannot reach except as any
// candidate can: by corrupting its own process, which the judge and the timer's cross-checks
// already assume.
//   auto k = worker::load_python(".../candidate.py", problem, dev);  // variant: kernel_library or reason
#include "problem/problem.hpp"
#include "worker/kernel_library.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <variant>
#include <vector>

namespace kforge::worker {

/// What a Python candidate's build writes beside candidate.py: <library>.python.json.
[[nodiscard]] std::filesystem::path python_info_path(const std::filesystem::path& library);

/// The request kforge_candidate.py reads (the bridge's torch request, the ABI's shapes, the
/// device, the JIT folder).
[[nodiscard]] nlohmann::json python_candidate_spec(const problem::problem& p, const std::string& device,
                                                   const std::filesystem::path& jit_dir);

/// Starts the interpreter that the build record at `record_path` names and imports kforge's host
/// (torch) and `modules`, before any candidate code: a deferred worker's warm-up
/// (worker_process.hpp), so that those imports overlap the candidate's build. Once per
/// process; load_python does it itself when nothing did.
/// @return "" or why the interpreter could not start (load_python then says the same)
[[nodiscard]] std::string start_python(const std::filesystem::path& record_path,
                                       const std::vector<std::string>& modules);

/// @param dev where its calls run: the outputs ModelNew returns in its own memory are copied
///            into kforge's with dev.copy, by kernel_library::place (after the timer, when timed)
/// @return the loaded candidate (one interpreter per process: a second load is refused).
[[nodiscard]] std::variant<kernel_library, std::string> load_python(const std::string& path, const problem::problem& p,
                                                                    device::backend& dev);

} // namespace kforge::worker
