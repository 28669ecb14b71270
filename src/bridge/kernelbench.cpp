#include "bridge/kernelbench.hpp"

#include "bridge/torch_helper.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "problem/problem.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <set>

namespace kforge::bridge {
namespace fs = std::filesystem;
namespace {

// A state key or argument as a tensor name: [A-Za-z_][A-Za-z0-9_]*, unique.
std::string identifier(const std::string& raw, std::set<std::string>& taken) {
  std::string s;
  for (char c : raw) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "t_" + s;
  if (s == "name") s = "name_";
  std::string u = s;
  for (int i = 2; taken.count(u); ++i) u = fmt::format("{}_{}", s, i);
  taken.insert(u);
  return u;
}

// Two significant digits: a distribution a person reads and may edit.
std::string round2(double v) {
  if (v == 0) return "0";
  return fmt::format("{:.2g}", v);
}

bool is_int_name(const std::string& dt) { return dt == "i8" || dt == "i32" || dt == "i64" || dt == "u8" || dt == "bool"; }

// The distribution get_inputs() or the module's initialisation draws from, read off one draw.
std::string distribution_of(const nlohmann::json& stats, const std::string& dtype, bool param) {
  if (stats.empty()) return is_int_name(dtype) ? "int_range(0, 1)" : "normal(0, 1)";
  const double lo = stats.value("min", 0.0), hi = stats.value("max", 0.0);
  if (is_int_name(dtype)) return fmt::format("int_range({}, {})", std::llround(lo), std::llround(hi));
  if (stats.value("all_equal", false)) {
    // A constant (a norm's weight of ones, a bias of zeros): random around it instead, so
    // that a candidate that assumes the constant fails; positive stays positive (variances).
    const double v = lo, w = std::max(0.5 * std::fabs(v), 0.5);
    return v > 0 ? fmt::format("uniform({}, {})", round2(v - std::min(w, 0.5 * v)), round2(v + w))
                 : fmt::format("uniform({}, {})", round2(v - w), round2(v + w));
  }
  if (param) { // torch's default inits are uniform(-b, b) (kaiming/xavier)
    const double b = std::max(std::fabs(lo), std::fabs(hi));
    return lo >= 0 ? fmt::format("uniform(0, {})", round2(hi)) : fmt::format("uniform({}, {})", round2(-b), round2(b));
  }
  if (lo >= 0 && hi <= 1) return "uniform(0, 1)"; // torch.rand
  double mean = stats.value("mean", 0.0), std = stats.value("std", 1.0);
  if (std <= 0) std = 1;
  if (std::fabs(mean) < 0.1 * std) mean = 0;
  if (std::fabs(std - 1) < 0.1) std = 1;
  return fmt::format("normal({}, {})", round2(mean), round2(std));
}

// A second distribution for the inputs (never the params): shifted and wider, so that a
// candidate tuned to mean-0 unit-variance inputs (an unstable norm, a missing max) fails.
std::string shifted_distribution(const nlohmann::json& stats, const std::string& dtype) {
  if (is_int_name(dtype) || stats.empty()) return "";
  const double lo = stats.value("min", 0.0), hi = stats.value("max", 0.0);
  if (lo >= 0 && hi <= 1) return "uniform(0, 4)";
  double mean = stats.value("mean", 0.0), std = stats.value("std", 1.0);
  if (std <= 0) std = 1;
  return fmt::format("normal({}, {})", round2(mean + 2 * std), round2(3 * std));
}

std::string toml_string(const std::string& s) { return nlohmann::json(s).dump(); } // JSON strings are TOML basic strings

std::string shape_text(const nlohmann::json& shape) {
  std::vector<long long> d;
  for (auto& x : shape) d.push_back(x.get<long long>());
  if (d.empty()) d.push_back(1); // a 0-dim tensor: one element
  return fmt::format("[{}]", fmt::join(d, ", "));
}

long long numel(const nlohmann::json& shape) {
  long long n = 1;
  for (auto& x : shape) n *= x.get<long long>();
  return n;
}

long long bytes_of(const nlohmann::json& shape, const std::string& dtype) {
  return numel(shape) * static_cast<long long>(dtype_size(*dtype_from_name(dtype)));
}

} // namespace

std::string kernelbench_toml(const nlohmann::json& d, const std::string& name, const std::string& backend,
                             const std::string& source_name, std::vector<std::string>* notes) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  // The problem's real type: the inputs' floating dtype (KernelBench is f32 almost always).
  std::string real = "f32";
  for (auto& in : d["inputs"])
    if (!is_int_name(in["dtype"])) {
      real = in["dtype"];
      break;
    }
  std::set<std::string> taken{"name"};
  std::string out;
  out += fmt::format("# Imported from KernelBench file {} by `kforge import kernelbench`.\n", source_name);
  out += "# The reference (at the problem's dtype) and the float64 oracle are the PyTorch module in model.py,\n"
         "# run by kforge's bridge (python/kforge_torch.py); its parameters and buffers are inputs (param = true).\n";
  out += fmt::format("name = {}\n", toml_string(name));
  out += fmt::format("description = {}\n", toml_string("KernelBench " + source_name + " (PyTorch reference)"));
  out += fmt::format("backend = {}\ndtype = {}\n\n", toml_string(backend), toml_string(real));
  out += "[torch]\nmodule = \"model.py\"\n";
  out += fmt::format("init_inputs = {}   # Model(*init_inputs), from get_init_inputs()\n",
                     toml_string(d.value("init_inputs", nlohmann::json::array()).dump()));
  out += "compile = true       # time torch.compile beside eager\n";
  {
    std::set<std::string> probe = taken; // the names the inputs below will get
    std::vector<std::string> scalars;
    for (auto& in : d["inputs"]) {
      const std::string n = identifier(in["name"], probe);
      if (in.value("scalar", false)) scalars.push_back(toml_string(n));
    }
    if (!scalars.empty())
      out += fmt::format("scalars = [{}]   # forward() takes these as numbers: one-element tensors here\n",
                         fmt::join(scalars, ", "));
  }

  long long bytes = 0;
  struct named_dist {
    std::string name, dist, shifted;
  };
  std::vector<named_dist> dists;
  auto dtype_line = [&](const std::string& dt) { return dt == real ? std::string() : fmt::format("dtype = {}\n", toml_string(dt)); };
  for (auto& in : d["inputs"]) {
    const std::string n = identifier(in["name"], taken);
    out += fmt::format("\n[[inputs]]\nname = {}\nshape = {}\n{}", toml_string(n), shape_text(in["shape"]),
                       dtype_line(in["dtype"]));
    bytes += bytes_of(in["shape"], in["dtype"]);
    const bool scalar = in.value("scalar", false);
    dists.push_back({n, distribution_of(in["stats"], in["dtype"], false),
                     scalar ? "" : shifted_distribution(in["stats"], in["dtype"])});
  }
  for (auto& st : d["state"]) {
    const std::string tn = st["torch_name"], dt = st["dtype"];
    if (st["kind"] == "buffer" && is_int_name(dt) && numel(st["shape"]) <= 1) {
      note(fmt::format("buffer '{}' ({} scalar, a counter such as num_batches_tracked) is not an input: forward() "
                       "does not read it",
                       tn, dt));
      continue;
    }
    const std::string n = identifier(tn, taken);
    out += fmt::format("\n[[inputs]]   # the module's {} '{}'\nname = {}\nshape = {}\n{}param = true\ntorch_name = {}\n",
                       st["kind"].get<std::string>(), tn, toml_string(n), shape_text(st["shape"]), dtype_line(dt),
                       toml_string(tn));
    bytes += bytes_of(st["shape"], dt);
    dists.push_back({n, distribution_of(st["stats"], dt, true), ""});
  }
  const auto& outs = d["outputs"];
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const std::string n = identifier(outs.size() == 1 ? "y" : fmt::format("y{}", i), taken);
    out += fmt::format("\n[[outputs]]\nname = {}\nshape = {}\n{}", toml_string(n), shape_text(outs[i]["shape"]),
                       dtype_line(outs[i]["dtype"]));
    bytes += bytes_of(outs[i]["shape"], outs[i]["dtype"]);
  }

  out += "\n# Input distributions: 'default' is what get_inputs() and the module's initialisation draw\n"
         "# (read off one draw); 'shifted' moves and widens the inputs (not the params).\n";
  out += "[[cases]]\nname = \"default\"\n";
  for (auto& x : dists) out += fmt::format("{} = {}\n", x.name, toml_string(x.dist));
  bool any_shift = false;
  for (auto& x : dists) any_shift |= !x.shifted.empty();
  if (any_shift) {
    out += "\n[[cases]]\nname = \"shifted\"\n";
    for (auto& x : dists)
      if (!x.shifted.empty()) out += fmt::format("{} = {}\n", x.name, toml_string(x.shifted));
  }
  const double flops = d["flops"].is_number() ? d["flops"].get<double>() : 0.0;
  const std::string flops_how =
      d.value("flops_from", "flop_counter") == "elements"
          ? "an estimate, one operation per element of each aten op's largest operand (no matmul or\n"
            "# convolution for torch.utils.flop_counter here)"
          : fmt::format("torch.utils.flop_counter (matmuls and convolutions only{})",
                        flops > 0 ? "" : "; none here, so the roofline is the bytes'");
  out += fmt::format("\n# flops: {}; min_bytes: every input,\n"
                     "# param and output once.\n[work]\nflops = {}\nmin_bytes = {}\n",
                     flops_how, std::llround(flops), bytes);
  if (const std::string why = d.value("inputs_not_drawn", ""); !why.empty())
    note(fmt::format("get_inputs() was not drawn ({}): the inputs' distributions are assumed, not read off a "
                     "draw; check them in problem.toml",
                     why));
  if (d.value("training", false) && d.contains("training_dependent") && !d["training_dependent"].empty())
    note(fmt::format("Model() is in training mode, as KernelBench runs it, and has {}: norms use batch statistics",
                     fmt::join(d["training_dependent"].get<std::vector<std::string>>(), ", ")));
  if (d.contains("random") && !d["random"].empty())
    note(fmt::format("{} with p > 0 draws random masks: no candidate can match them; set p = 0 in model.py",
                     fmt::join(d["random"].get<std::vector<std::string>>(), ", ")));
  return out;
}

std::string kernelbench_name(const fs::path& file) {
  std::string name;
  for (char c : file.stem().string()) name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return name;
}

import_result import_kernelbench(const fs::path& file, const import_options& opts) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) KFORGE_THROW(usage, "{}: no such file", file.string());
  if (opts.backend != "cuda" && opts.backend != "cpu")
    KFORGE_THROW(usage, "--backend must be cuda or cpu, got '{}'", opts.backend);
  require_torch("kforge import kernelbench");
  import_result r;
  r.name = opts.name.empty() ? kernelbench_name(file) : opts.name;
  r.dir = opts.out.empty() ? fs::path("kernelbench") / r.name : opts.out;
  if (fs::exists(r.dir / "problem.toml", ec) && !opts.force)
    KFORGE_THROW(usage, "{}: a problem is already there (pass --force to overwrite it)", (r.dir / "problem.toml").string());
  r.description = call_helper("describe", {{"model", fs::absolute(file).string()}}, opts.timeout_s);
  const std::string toml = kernelbench_toml(r.description, r.name, opts.backend, file.filename().string(), &r.notes);
  fs::create_directories(r.dir);
  write_file_atomic(r.dir / "model.py", read_file(file));
  write_file_atomic(r.dir / "problem.toml", toml);
  (void)problem::load(r.dir); // what was written must load; a bug here is kforge's, said at once
  return r;
}

} // namespace kforge::bridge
