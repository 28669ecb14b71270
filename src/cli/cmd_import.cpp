// kforge import kernelbench FILE.py: a KernelBench problem as a kforge problem directory
// whose reference and oracle are the PyTorch module (bridge/kernelbench.hpp).
#include "bridge/kernelbench.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace kforge::cli {

namespace {

struct import_opts {
  std::string format, file, out, backend = "cuda", name;
  bool force = false;
};

// A folder of KernelBench files (a level): each *.py into OUT/<its name>, in name order.
// One that cannot be imported is reported and skipped; the exit code says whether any was.
int import_directory(const import_opts& o, const global_options& g) {
  if (!o.name.empty()) KFORGE_THROW(usage, "--name names one problem; importing the folder {} names each after its file", o.file);
  std::vector<std::filesystem::path> files;
  for (auto& e : std::filesystem::directory_iterator(o.file))
    if (e.is_regular_file() && e.path().extension() == ".py" && e.path().filename() != "__init__.py") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) KFORGE_THROW(usage, "{}: no .py files to import", o.file);
  const std::filesystem::path out = o.out.empty() ? std::filesystem::path("kernelbench") : std::filesystem::path(o.out);
  nlohmann::json rows = nlohmann::json::array();
  int failed = 0;
  for (auto& f : files) {
    nlohmann::json row{{"file", f.string()}};
    try {
      bridge::import_options io{.backend = o.backend, .force = o.force};
      io.out = out / bridge::kernelbench_name(f);
      const auto r = bridge::import_kernelbench(f, io);
      row["dir"] = r.dir.string();
      row["name"] = r.name;
      row["notes"] = r.notes;
      if (!g.json) std::cout << fmt::format("imported {} -> {}\n", f.filename().string(), r.dir.string());
    } catch (const kforge::error& e) {
      ++failed;
      row["error"] = e.what();
      if (!g.json) std::cout << fmt::format("FAILED   {}: {}\n", f.filename().string(), e.what());
    }
    rows.push_back(row);
  }
  if (g.json)
    std::cout << nlohmann::json{{"schema", "kforge.import-dir/1"}, {"dir", out.string()}, {"problems", rows}}.dump(2) << "\n";
  else
    std::cout << fmt::format("{} of {} imported into {}; next: kforge suite {}\n", files.size() - failed, files.size(),
                             out.string(), out.string());
  return failed ? exit_failed : exit_ok;
}

} // namespace

command_fn add_import_command(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("import", "Import a problem from another benchmark's format (kernelbench)");
  auto o = std::make_shared<import_opts>();
  sub->add_option("format", o->format, "The source format: kernelbench")->required();
  sub->add_option("file", o->file, "The file (KernelBench: a .py with Model, get_inputs, get_init_inputs), or a folder of them (a level: each into --out/NAME)")->required();
  sub->add_option("--out", o->out, "Problem directory to write (default ./kernelbench/NAME); for a folder, the parent of one directory per file");
  sub->add_option("--backend", o->backend, "cuda (CUDA candidates, the default) or cpu (C++ candidates)");
  sub->add_option("--name", o->name, "Problem name (default: from the file name)");
  sub->add_flag("--force", o->force, "Overwrite an existing problem.toml");
  sub->add_flag("--json", g.json, "Print as JSON (schema kforge.import/1, docs/json.md)");
  return [o, &g]() {
    if (o->format != "kernelbench") KFORGE_THROW(usage, "import: unknown format '{}' (known: kernelbench)", o->format);
    if (std::filesystem::is_directory(o->file)) return import_directory(*o, g);
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
