#include "worker/build_roles.hpp"
#include "worker/python_library.hpp"

#include "core/error.hpp"
#include "eval/device_kernels.hpp"
#include "worker/device_judge.hpp"

#include <future>

namespace kforge::worker {
namespace {

std::string first_line_with(const std::string& text, const std::string& needle) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    auto line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (line.find(needle) != std::string::npos) return line;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return "";
}

} // namespace

build::request candidate_request(const problem::problem& p, const std::filesystem::path& candidate_source) {
  const bool cuda = p.backend == problem::backend_kind::cuda;
  build::request rq{.source = candidate_source, .real = p.dtype, .role = "candidate"};
  for (auto* t : p.inputs()) rq.input_names.push_back(t->name);
  for (auto* t : p.outputs()) rq.output_names.push_back(t->name);
  if (candidate_source.extension() == ".py") rq.python_spec = python_candidate_spec(p, cuda ? "cuda" : "cpu", {});
  return rq;
}

role_artifacts build_roles(const problem::problem& p, const std::filesystem::path& candidate_source,
                           bool with_baselines, const evaluate_observer& observer, std::vector<role_build>& record,
                           const std::function<void(const role_artifacts&)>& trusted_built) {
  const auto tb = p.backend == problem::backend_kind::cuda ? build::problem_backend::cuda : build::problem_backend::cpu;
  std::vector<std::string> input_names, output_names;
  for (auto* t : p.inputs()) input_names.push_back(t->name);
  for (auto* t : p.outputs()) output_names.push_back(t->name);
  const auto python_spec = python_candidate_spec(p, tb == build::problem_backend::cuda ? "cuda" : "cpu", {});
  auto launch = [&](const std::string& role, const std::filesystem::path& src, kf_dtype real) {
    return std::async(std::launch::async, [=] {
      return role_build{role, build::compile({.source = src, .real = real, .role = role,
                                              .input_names = input_names, .output_names = output_names,
                                              .python_spec = src.extension() == ".py" ? python_spec : nlohmann::json()},
                                             tb)};
    });
  };
  // A [torch] problem's reference and oracle are its PyTorch module (bridge/), not builds.
  std::optional<std::future<role_build>> f_ref, f_orc;
  if (!p.torch) {
    f_ref = launch("reference", p.reference, p.dtype);
    f_orc = launch("oracle", p.reference, KF_F64);
  }
  auto f_cand = std::async(std::launch::async, [&] {
    return role_build{"candidate", build::compile(candidate_request(p, candidate_source), tb)};
  });
  const auto refused = device_path_refused(p);
  std::future<build::artifact> f_kernels;
  if (refused.empty()) f_kernels = std::async(std::launch::async, [] { return eval::build_device_kernels(); });
  std::vector<std::future<role_build>> f_base;
  if (with_baselines)
    for (auto& b : p.baselines) f_base.push_back(launch("baseline:" + b.name, b.source, p.dtype));
  auto take = [&](std::future<role_build>& f) {
    auto b = f.get();
    if (observer.on_build) observer.on_build(b);
    record.push_back(b);
    return b.artifact;
  };
  role_artifacts out;
  out.reference = f_ref ? take(*f_ref) : build::artifact{.ok = true};
  out.oracle = f_orc ? take(*f_orc) : build::artifact{.ok = true};
  if (f_kernels.valid()) out.kernels = f_kernels.get();
  else out.kernels.diagnostics = refused;
  if (trusted_built && out.reference.ok && out.oracle.ok && out.kernels.ok) trusted_built(out);
  out.candidate = take(f_cand);
  for (auto& f : f_base) {
    out.baselines.push_back(take(f));
    if (!out.baselines.back().ok)
      KFORGE_THROW(problem, "{}: a baseline does not compile:\n{}", p.toml_path.string(),
                   out.baselines.back().diagnostics);
  }
  if (!out.reference.ok)
    KFORGE_THROW(problem, "{}: the reference does not compile:\n{}", p.reference.string(), out.reference.diagnostics);
  if (!out.oracle.ok)
    KFORGE_THROW(problem, "{}: the reference does not compile with KF_REAL=double (the oracle):\n{}",
                 p.reference.string(), out.oracle.diagnostics);
  return out;
}

eval::check_result build_failure(const std::filesystem::path& candidate_source, const build::artifact& candidate) {
  eval::check_result c{.name = "build_failed", .passed = false};
  auto line = first_line_with(candidate.diagnostics, "error");
  c.message = fmt::format("{} does not compile: {}", candidate_source.string(),
                          line.empty() ? candidate.diagnostics.substr(0, 500) : line);
  c.detail = {{"diagnostics", candidate.diagnostics}};
  return c;
}

} // namespace kforge::worker
