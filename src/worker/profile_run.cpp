#include "worker/profile_run.hpp"

#include "build/compiler.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "device/backend.hpp"
#include "device/calibration.hpp"
#include "profile/digest.hpp"
#include "core/subprocess.hpp"
#include "worker/supervisor.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include <unistd.h>

namespace kforge::worker {

namespace fs = std::filesystem;

namespace {

fs::path private_dir() {
  auto d = fs::temp_directory_path() / fmt::format("kforge-profile-{}-{}", ::getpid(), std::random_device{}());
  fs::create_directories(d);
  return d;
}

} // namespace

fs::path find_ncu() {
  if (const char* v = std::getenv("KFORGE_NCU"); v && *v) return v;
  std::error_code ec;
  const fs::path nvcc = build::nvcc_path();
  if (nvcc.has_parent_path())
    for (auto p : {nvcc.parent_path() / "ncu", nvcc.parent_path().parent_path() / "nsight-compute" / "ncu"})
      if (fs::is_regular_file(p, ec)) return p;
  if (auto p = find_on_path("ncu"); !p.empty()) return p;
  if (fs::is_regular_file("/usr/local/cuda/bin/ncu", ec)) return "/usr/local/cuda/bin/ncu";
  return {};
}

fs::path find_cuobjdump() {
  if (const char* v = std::getenv("KFORGE_CUOBJDUMP"); v && *v) return v;
  std::error_code ec;
  const fs::path nvcc = build::nvcc_path();
  if (nvcc.has_parent_path() && fs::is_regular_file(nvcc.parent_path() / "cuobjdump", ec))
    return nvcc.parent_path() / "cuobjdump";
  if (auto p = find_on_path("cuobjdump"); !p.empty()) return p;
  // scripts/setup.sh unpacks the nvidia-cuda-cuobjdump and -nvdisasm wheels here.
  if (auto p = data_path("third_party/cudatools/bin/cuobjdump"); fs::is_regular_file(p, ec)) return p;
  return {};
}

std::vector<profile::sass_function> static_sass(const fs::path& library, std::string* note) {
  const auto tool = find_cuobjdump();
  if (tool.empty()) {
    if (note) *note = "cuobjdump not found (scripts/setup.sh installs it under third_party/cudatools; or set KFORGE_CUOBJDUMP)";
    return {};
  }
  // cuobjdump runs nvdisasm, which it finds on PATH or NVDISASM_PATH: beside it in the
  // wheels' layout.
  std::error_code ec;
  if (!std::getenv("NVDISASM_PATH") && fs::is_regular_file(tool.parent_path() / "nvdisasm", ec))
    ::setenv("NVDISASM_PATH", tool.parent_path().c_str(), 0);
  command_result r;
  try {
    r = run_command({tool.string(), "-sass", library.string()}, 120.0, 8 << 20);
  } catch (const std::exception& e) {
    if (note) *note = fmt::format("cannot run {}: {}", tool.string(), e.what());
    return {};
  }
  auto fns = profile::parse_sass(r.output);
  if (fns.empty() && note)
    *note = fmt::format("cuobjdump -sass gave no functions (exit {}): {}", r.exit_code, r.output.substr(0, 300));
  return fns;
}

profile_run profile_candidate(const problem::problem& p, const fs::path& source, const profile_options& opts) {
  profile_run out;
  const auto t0 = std::chrono::steady_clock::now();
  if (p.backend != problem::backend_kind::cuda) {
    out.failure = fmt::format("profiling needs a GPU problem; {} is a {} problem", p.name, problem::backend_name(p.backend));
    return out;
  }
  std::vector<std::string> input_names, output_names;
  for (auto* t : p.inputs()) input_names.push_back(t->name);
  for (auto* t : p.outputs()) output_names.push_back(t->name);
  const auto cand = build::compile({.source = source, .real = p.dtype, .role = "candidate",
                                    .input_names = input_names, .output_names = output_names},
                                   build::problem_backend::cuda);
  if (!cand.ok) {
    out.failure = "the candidate does not compile: " + cand.diagnostics.substr(0, 500);
    return out;
  }
  out.resources = cand.resources;
  out.sass = static_sass(cand.library, &out.sass_note);

  const auto ncu = opts.ncu.empty() ? find_ncu() : opts.ncu;
  if (ncu.empty()) {
    out.failure = "ncu (Nsight Compute) not found: set KFORGE_NCU or put it on PATH";
    return out;
  }
  const auto dir = private_dir();
  const auto log = dir / "ncu.csv";
  std::vector<std::string> wrapper{ncu.string(), "--clock-control", "none", "--profile-from-start", "off",
                                   "--target-processes", "all", "--csv", "--page", "raw",
                                   "--metrics", profile::metrics_argument(), "--log-file", log.string()};
  for (auto& w : wrapper) out.command += (out.command.empty() ? "" : " ") + w;
  const std::uint64_t seed = opts.seed ? *opts.seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  nlohmann::json job{{"role", "profile"}, {"device", opts.device}, {"problem", p.dir.string()},
                     {"libraries", {{"candidate", cand.library.string()}}},
                     {"trials", nlohmann::json::array({{{"case", p.cases.front().name}, {"seed", seed}, {"trial", 0}}})}};
  const auto exe = opts.worker_exe.empty() ? default_worker_exe() : opts.worker_exe;
  auto run = run_worker(exe, job,
                        {.timeout_s = opts.timeout_s, .wrapper = wrapper, .problem = &p, .role = "profile",
                         .writable = {dir}});
  out.confinement = run.confinement;
  std::error_code ec;
  out.log = fs::is_regular_file(log, ec) ? read_file(log) : std::string();
  fs::remove_all(dir, ec);
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool profiled = false;
  for (auto& m : run.messages) {
    if (m.header.value("type", "") == "profiled") profiled = true;
    if (m.header.value("type", "") == "error")
      out.failure = fmt::format("the candidate failed under the profiler ({}): {}", m.header.value("reason", ""),
                                m.header.value("message", ""));
  }
  if (!out.failure.empty()) return out;
  if (auto why = profile::ncu_failure(out.log + "\n" + run.output); !why.empty()) {
    out.failure = "ncu: " + why;
    return out;
  }
  if (run.end != worker_end::done || !profiled) {
    out.failure = fmt::format("the worker under ncu {}: {}{}", worker_end_name(run.end), run.detail,
                              run.output.empty() ? "" : " — " + run.output.substr(0, 300));
    return out;
  }
  try {
    out.kernels = profile::parse_ncu_csv(out.log);
  } catch (const std::exception& e) {
    out.failure = std::string("ncu: ") + e.what();
    return out;
  }
  if (out.kernels.empty()) out.failure = "ncu collected no kernel: the candidate launched nothing in its profiled call";
  if (out.log.size() > 64 * 1024) out.log.resize(64 * 1024);
  return out;
}

nlohmann::json profile_document(const problem::problem& p, const profile_run& run, int device_ordinal) {
  std::string device;
  profile::device_peaks peaks;
  if (p.backend == problem::backend_kind::cuda) {
    try {
      device = device::describe_device(p.backend, device_ordinal);
      if (auto c = device::load_ceilings(device::device_model(p.backend, device_ordinal))) {
        peaks.dram_bytes_per_s = c->copy_bytes_per_s;
        peaks.flops = c->peak_flops(p.dtype);
      }
    } catch (const kforge::error&) {
      // no GPU here: run.failure says so
    }
  }
  nlohmann::json sass = nlohmann::json::array();
  for (const auto& f : run.sass) sass.push_back(profile::to_json(f));
  nlohmann::json j{{"schema", "kforge.profile/1"}, {"problem", p.name}, {"device", device}, {"ok", run.ok()},
                   {"failure", run.failure}, {"command", run.command}, {"wall_s", run.wall_s},
                   {"static", {{"sass", sass}, {"note", run.sass_note}, {"resources", run.resources},
                               {"summary", run.sass.empty() ? std::string() : profile::summarize(run.sass)}}}};
  std::string text;
  if (run.ok()) {
    const auto d = profile::digest(run.kernels, peaks, &run.sass);
    j["digest"] = profile::to_json(d);
    text = profile::to_text(d, &run.sass);
  } else {
    j["digest"] = nullptr;
    text = "no profile: " + run.failure;
    if (!run.sass.empty()) text += "\n" + profile::summarize(run.sass);
  }
  j["text"] = text;
  j["confinement"] = run.confinement;
  return j;
}

} // namespace kforge::worker
