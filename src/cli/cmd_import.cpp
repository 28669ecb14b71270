// kforge import kernelbench FILE.py: a KernelBench problem as a kforge problem directory
// whose reference and oracle are the PyTorch module (bridge/kernelbench.hpp).
#include "bridge/kernelbench.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <iostream>

namespace kforge::cli {

command_fn add_import_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("import", "Import a problem from another benchmark's format (kernelbench)");
  struct opts_t {
    std::string format, file, out, backend = "cuda", name;
    bool force = false;
  };
  auto o = std::make_shared<opts_t>();
  sub->add_option("format", o->format, "The source format: kernelbench")->required();
  sub->add_option("file", o->file, "The file (KernelBench: a .py with Model, get_inputs, get_init_inputs)")->required();
  sub->add_option("--out", o->out, "Problem directory to write (default ./kernelbench/NAME)");
  sub->add_option("--backend", o->backend, "cuda (CUDA candidates, the default) or cpu (C++ candidates)");
  sub->add_option("--name", o->name, "Problem name (default: from the file name)");
  sub->add_flag("--force", o->force, "Overwrite an existing problem.toml");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.import/1, docs/json.md)");
  return [o, &g]() {
    if (o->format != "kernelbench") KFORGE_THROW(usage, "import: unknown format '{}' (known: kernelbench)", o->format);
    const auto r = bridge::import_kernelbench(o->file, {.out = o->out, .backend = o->backend, .name = o->name,
                                                       .force = o->force});
    if (g.json) {
      std::cout << nlohmann::json{{"schema", "kforge.import/1"}, {"dir", r.dir.string()},   {"name", r.name},
                                  {"module", r.description},   {"notes", r.notes}}
                       .dump(2)
                << "\n";
      return exit_ok;
    }
    const auto& d = r.description;
    std::cout << fmt::format("imported {} as problem '{}' in {} (torch {})\n", o->file, r.name, r.dir.string(),
                             d.value("torch_version", "?"));
    std::cout << fmt::format("  {} forward inputs, {} module parameters/buffers (as params), {} outputs; flops {}\n",
                             d["inputs"].size(), d["state"].size(), d["outputs"].size(),
                             d["flops"].is_number() ? fmt::format("{:.4g}", d["flops"].get<double>()) : "not counted");
    for (auto& n : r.notes) std::cout << "  note: " << n << "\n";
    std::cout << fmt::format("next: kforge check {}   (then write a seed.{} or run kforge optimize with an LLM)\n",
                             r.dir.string(), o->backend == "cuda" ? "cu" : "cpp");
    return exit_ok;
  };
}

} // namespace kforge::cli
