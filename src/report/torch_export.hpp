#pragma once
// `kforge export RUN --torch`: a PyTorch C++ extension around an exported candidate, so the
// kernel kforge verified can be called from Python on torch tensors.
//   auto x = report::export_best(db, 7, dir);                        // writes <problem>_best.cu
//   auto files = report::write_torch_extension(p, dir, x.files[0].filename().string());
// It writes, beside what export_best wrote:
//   kforge_ext.cpp        forward(list of tensors in ABI order) -> list of outputs: checks every
//                         tensor's dtype, shape and device against the problem, makes the inputs
//                         contiguous, allocates the outputs (and the workspace the kernel asks
//                         for) and calls kf_forward on the current CUDA stream (NULL on the CPU)
//   kforge_module.py      load(): builds it with torch.utils.cpp_extension.load (JIT, into
//                         dir/torch_build); KforgeModule(reference=None, params=None): an
//                         nn.Module whose forward(*inputs) takes the problem's non-param inputs
//   test_kforge_ext.py    `python3 test_kforge_ext.py`: a smoke check of the binding, against the
//                         reference module for a problem imported from KernelBench (copied in as
//                         reference_model.py), else on random inputs (shapes, finiteness). Exit 0
//                         and "kforge_ext: OK"; 77 and "SKIP: ..." without torch (or without a GPU
//                         for a CUDA problem); 1 otherwise
//   TORCH.md              how to build, test and use it (and a pointer from README.md)
// The generated code embeds the problem's tensors (names, roles, dtypes, shapes, torch_names)
// in ABI order: the extension is for these shapes only, as the kernel was verified for them.
#include "problem/problem.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace kforge::report {

/// Writes the extension for the candidate `dir/kernel_file` (export_best's `<problem>_best.cu`,
/// or `.cpp` for a CPU problem; kforge/kernel.h must be in `dir/kforge/`). Existing files are
/// replaced. @return the files written, in writing order (README.md last when it was amended).
/// @throws kforge::error (usage) when kernel_file is missing, or when it is a kernel-only
/// candidate (`// kforge: launch` directives): it has no kf_forward to call, its kernels are
/// launched by kforge's own host shim.
std::vector<std::filesystem::path> write_torch_extension(const problem::problem& p, const std::filesystem::path& dir,
                                                         const std::string& kernel_file);

/// The extension's Python module name: "kforge_" + the problem name with anything but
/// [A-Za-z0-9_] turned into '_' (a valid identifier, as PYBIND11_MODULE needs).
[[nodiscard]] std::string torch_extension_name(const std::string& problem_name);

} // namespace kforge::report
