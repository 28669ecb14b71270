#pragma once
// `kforge import kernelbench FILE.py`: a KernelBench problem (Model, get_inputs,
// get_init_inputs) as a kforge problem directory whose reference and oracle are the
// PyTorch module, run by the bridge:
//   DIR/model.py       the file, verbatim
//   DIR/problem.toml   [torch] module and Model's arguments; forward()'s tensors as inputs
//                      (named after its parameters), the module's parameters and buffers as
//                      params (named after their state keys), the outputs, input
//                      distributions read off get_inputs() and the module's own
//                      initialisation, FLOPs from torch's flop counter, minimal bytes
//   auto r = bridge::import_kernelbench("19_ReLU.py", {.out = "kb/19_ReLU"});
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace kforge::bridge {

struct import_options {
  std::filesystem::path out;    // the problem directory; empty: ./kernelbench/NAME
  std::string backend = "cuda"; // "cuda": candidates are CUDA; "cpu": C++ candidates (tests, CPU-only machines)
  std::string name;             // empty: from the file name
  bool force = false;           // overwrite an existing problem.toml
  double timeout_s = 600;
};

struct import_result {
  std::filesystem::path dir;
  std::string name;
  nlohmann::json description;     // what the helper said of the module (docs/json.md, kforge.import/1)
  std::vector<std::string> notes; // choices a user may want to revisit
};

/// The problem name a file gets: its stem with anything but [A-Za-z0-9.-] turned into '_'.
[[nodiscard]] std::string kernelbench_name(const std::filesystem::path& file);

/// @throws kforge::error (usage) for a missing file, an existing problem without `force`,
/// or no torch; (problem) when the file is not a KernelBench problem kforge can hold.
[[nodiscard]] import_result import_kernelbench(const std::filesystem::path& file, const import_options& opts);

/// problem.toml's text for a module description (the helper's "describe" answer).
/// Exposed for tests, which feed it descriptions without running Python.
[[nodiscard]] std::string kernelbench_toml(const nlohmann::json& description, const std::string& name,
                                           const std::string& backend, const std::string& source_name,
                                           std::vector<std::string>* notes = nullptr);

} // namespace kforge::bridge
