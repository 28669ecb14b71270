// The toolchains behind build::compile. Both go through one cached path: hash what
// determines the object (toolchain, compiler identity, ABI header, source, flags), serve
// it from the cache, or compile into a private folder and publish it atomically.
#include "build/build_cache.hpp"
#include "build/compiler.hpp"
#include "build/launch_plan.hpp"
#include "build/params.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/subprocess.hpp"
#include "sandbox/launch.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

namespace kforge::build {
namespace {

std::string env_or(std::initializer_list<const char*> vars, const std::string& fallback) {
  for (const char* var : vars)
    if (const char* v = std::getenv(var); v && *v) return v;
  return fallback;
}

// `<compiler> --version` once per process and compiler: part of every cache key, so a
// compiler upgrade never serves a stale object.
std::string compiler_identity(const std::string& exe) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mu);
  if (auto it = known.find(exe); it != known.end()) return it->second;
  auto r = run_command({exe, "--version"}, 30);
  if (!r.ok())
    KFORGE_THROW(build, "compiler '{}' is not usable ({})", exe,
                 r.output.empty() ? "cannot run it" : r.output.substr(0, r.output.find('\n')));
  // nvcc prints a banner first: keep the line that names the release.
  std::string id = r.output.substr(0, r.output.find('\n'));
  if (auto p = r.output.find("release"); p != std::string::npos) {
    auto b = r.output.rfind('\n', p) + 1;
    id = r.output.substr(b, r.output.find('\n', p) - b);
  }
  known[exe] = id;
  return id;
}

std::vector<std::string> common_includes(const request& rq, const std::filesystem::path& src) {
  std::vector<std::string> f = {"-I" + abi_include_dir().string(), "-I" + src.parent_path().string()};
  for (auto& d : rq.include_dirs) f.push_back("-I" + std::filesystem::absolute(d).string());
  return f;
}

// Headers a source may include from its own folder: the ones its cache key hashes.
bool is_header(const std::filesystem::path& p) {
  const auto ext = p.extension();
  return ext == ".h" || ext == ".hpp" || ext == ".cuh" || ext == ".inl";
}

// The compiler runs confined (sandbox/): it reads the toolchain, kforge's and the request's
// include roots, the source and the headers beside it, and writes only the entry's folder;
// no network. An `#include "/any/file"` or `.incbin` of a file outside is "Permission denied",
// so a diagnostic never carries the content of a file the candidate should not see.
// @param inputs the source, the headers beside it, and include roots. @return the argv to run.
std::vector<std::string> confined(std::vector<std::string> argv, const std::vector<std::filesystem::path>& inputs,
                                  const std::filesystem::path& out_dir, const sandbox::scratch_dir& scratch,
                                  std::string& how) {
  if (auto why = sandbox::disabled_reason(); !why.empty()) {
    how = why;
    return argv;
  }
  if (!std::filesystem::path(argv[0]).is_absolute()) {
    auto found = find_on_path(argv[0]);
    if (found.empty()) KFORGE_THROW(build, "compiler '{}' is not on PATH", argv[0]);
    argv[0] = found.string();
  }
  sandbox::policy pol;
  pol.read_paths = sandbox::system_read_paths();
  pol.read_paths.insert(pol.read_paths.end(), inputs.begin(), inputs.end());
  pol.read_paths.push_back(argv[0]);                                              // kforge-nvrtc lives in the build tree
  pol.read_paths.push_back(std::filesystem::path(argv[0]).parent_path().parent_path()); // a toolkit outside /usr
  for (auto& d : sandbox::library_path_dirs()) pol.read_paths.push_back(d);
  pol.device_paths = {"/dev/null", "/dev/zero", "/dev/urandom"};
  pol.write_paths = {out_dir};
  pol.scratch = scratch.path();
  pol.env = {{"LC_ALL", "C"}};
  for (const char* pass : {"PATH", "LD_LIBRARY_PATH"})
    if (const char* v = std::getenv(pass); v && *v) pol.env[pass] = v;
  // A large CUTLASS instantiation takes several GiB in cicc; the limits stop a runaway, not a build.
  pol.lim = {.memory_bytes = std::uint64_t{16} << 30, .processes = 256, .file_bytes = std::uint64_t{2} << 30,
             .cpu_s = 1200, .scratch_bytes = std::uint64_t{4} << 30};
  pol.profile = sandbox::syscall_profile::compiler;
  how = "kforge-confine";
  return sandbox::confined_argv(pol, argv, -1);
}

// @param output the file name the compiler writes into the cache entry ("kernel.so").
artifact cached_compile(const std::string& toolchain, const std::string& exe, std::vector<std::string> flags,
                        const request& rq, const std::string& output = "kernel.so") {
  artifact a;
  a.toolchain = toolchain;
  a.compiler = compiler_identity(exe);
  const auto src = std::filesystem::absolute(rq.source);
  const std::string source_text = read_file(src);
  // Every header kforge puts on the include path (the ABI, the NVRTC prelude) can change the object.
  std::string abi_text;
  std::vector<std::filesystem::path> abi_headers;
  for (auto& e : std::filesystem::directory_iterator(abi_include_dir() / "kforge")) abi_headers.push_back(e.path());
  std::sort(abi_headers.begin(), abi_headers.end());
  for (auto& hp : abi_headers) abi_text += hp.filename().string() + "\n" + read_file(hp);
  for (auto& f : rq.extra_flags) flags.push_back(f);

  hasher h;
  h.add(toolchain).add(a.compiler).add(abi_text).add(source_text);
  for (auto& f : flags) h.add(f);
  // Headers beside the source (-I of its folder) can change the object too: hash them,
  // in name order, so editing one never serves a stale build.
  std::vector<std::filesystem::path> headers;
  for (auto& e : std::filesystem::directory_iterator(src.parent_path()))
    if (e.is_regular_file() && is_header(e.path())) headers.push_back(e.path());
  std::sort(headers.begin(), headers.end());
  for (auto& hp : headers) h.add(hp.filename().string()).add(read_file(hp));
  a.cache_key = h.hex();

  if (auto entry = cache_lookup(a.cache_key, output, &a.cache_note)) {
    a.ok = entry->ok;
    a.cached = true;
    a.library = entry->ok ? entry->library : std::filesystem::path();
    a.sha256 = entry->sha256;
    a.diagnostics = entry->diagnostics;
    a.command = entry->command;
    a.resources = parse_resource_report(a.diagnostics);
    return a;
  }
  auto work = cache_begin(a.cache_key);
  std::vector<std::string> argv = {exe};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("-o");
  argv.push_back((work.dir / output).string());
  argv.push_back(src.string());
  a.command = join_command(argv);
  std::vector<std::filesystem::path> inputs = headers;
  inputs.push_back(src);
  inputs.push_back(abi_include_dir());
  // Include roots: kforge's, CUTLASS's and the toolkit's whole; any other folder on the include
  // path (a tunable's own folder, a request's include_dirs) only for the headers directly in it.
  const std::vector<std::filesystem::path> roots = {abi_include_dir(), cutlass_include_dir(), cuda_include_dir()};
  for (auto& f : flags) {
    if (f.rfind("-I", 0) != 0 || f.size() <= 2) continue;
    const std::filesystem::path dir = f.substr(2);
    if (std::find(roots.begin(), roots.end(), dir) != roots.end()) {
      inputs.push_back(dir);
      continue;
    }
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.is_regular_file() && is_header(e.path())) inputs.push_back(e.path());
  }
  // kforge's own control wrappers (worker/screen.cpp writes them under <cache>/controls/) include
  // the control and the problem's reference by absolute path: the folders of those files (the
  // control's own headers, the reference's problem), no others.
  if (src.parent_path() == cache_root() / "controls") {
    static const std::regex inc(R"re("(/[^"]+)")re"); // #include "..." and #define KF_REFERENCE_SOURCE "..."
    std::smatch m;
    std::istringstream lines(source_text);
    for (std::string line; std::getline(lines, line);)
      if (std::regex_search(line, m, inc)) {
        inputs.push_back(std::filesystem::path(m[1].str()).parent_path());
        inputs.push_back(std::filesystem::path(m[1].str()).parent_path().parent_path() / "answer_file.h");
      }
  }
  sandbox::scratch_dir scratch;
  auto r = run_command(confined(argv, inputs, work.dir, scratch, a.confinement), 600, 256 * 1024);
  a.duration_s = r.duration_s;
  a.diagnostics = r.timed_out ? "compiler timed out after 600 s\n" + r.output : r.output;
  a.ok = r.ok() && std::filesystem::exists(work.dir / output);
  const auto entry = cache_commit(work, {a.ok, a.diagnostics, a.command}, output);
  a.ok = entry.ok;
  a.library = a.ok ? entry.library : std::filesystem::path();
  a.sha256 = entry.sha256;
  a.resources = parse_resource_report(a.diagnostics);
  return a;
}

} // namespace

std::filesystem::path abi_include_dir() {
  if (const char* v = std::getenv("KFORGE_INCLUDE"); v && *v) return v;
  return data_path("include");
}

artifact compile_host(const request& rq) {
  const auto src = std::filesystem::absolute(rq.source);
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared",
                                    "-fvisibility=hidden", "-Wall",
                                    fmt::format("-DKF_REAL={}", dtype_c_name(rq.real)), "-DKF_BACKEND_CPU=1"};
  auto inc = common_includes(rq, src);
  flags.insert(flags.end(), inc.begin(), inc.end());
  return cached_compile("host", env_or({"KFORGE_CXX", "CXX"}, "g++"), flags, rq);
}

std::filesystem::path cutlass_include_dir() {
  if (const char* v = std::getenv("KFORGE_CUTLASS"); v && *v) return v;
  const auto d = data_path("third_party/cutlass/include");
  return std::filesystem::exists(d / "cute" / "tensor.hpp") ? d : std::filesystem::path();
}

std::string nvcc_path() {
#ifdef KFORGE_NVCC
  const std::string built_with = KFORGE_NVCC;
#else
  const std::string built_with = "nvcc";
#endif
  auto p = env_or({"KFORGE_NVCC"}, "");
  if (!p.empty()) return p;
  if (std::filesystem::exists(built_with)) return built_with;
  return "nvcc";
}

artifact compile_nvcc(const request& rq) {
  const auto src = std::filesystem::absolute(rq.source);
  const std::string arch = rq.cuda_arch.empty() ? "90a" : rq.cuda_arch;
  std::vector<std::string> flags = {
      "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC,-fvisibility=hidden",
      fmt::format("-gencode=arch=compute_{0},code=sm_{0}", arch), "-Xptxas", "-v", "-lineinfo",
      "--expt-relaxed-constexpr", fmt::format("-DKF_REAL={}", dtype_c_name(rq.real)), "-DKF_BACKEND_CUDA=1",
      "-include", "cuda_fp16.h", "-include", "cuda_bf16.h"};
  auto inc = common_includes(rq, src);
  flags.insert(flags.end(), inc.begin(), inc.end());
  if (auto cutlass = cutlass_include_dir(); !cutlass.empty()) flags.push_back("-I" + cutlass.string());
  for (auto& l : vendor_link_flags(read_file(src))) flags.push_back(l); // baselines' cuBLAS, cuDNN
  return cached_compile("nvcc", nvcc_path(), flags, rq);
}

std::vector<std::string> vendor_link_flags(const std::string& source_text) {
  std::vector<std::string> out;
  if (source_text.find("cublas") != std::string::npos) out = {"-lcublas", "-lcublasLt"};
  if (source_text.find("cudnn.h") != std::string::npos) out.push_back("-lcudnn");
  return out;
}

std::filesystem::path cuda_include_dir() {
  if (const char* v = std::getenv("KFORGE_CUDA_INCLUDE"); v && *v) return v;
  std::error_code ec;
  auto nvcc = std::filesystem::path(nvcc_path());
  if (!nvcc.has_parent_path()) // a bare "nvcc": the one on PATH
    if (const char* path = std::getenv("PATH"))
      for (std::string_view rest = path; !rest.empty();) {
        const auto colon = rest.find(':');
        const auto dir = std::filesystem::path(std::string(rest.substr(0, colon)));
        rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
        if (std::filesystem::exists(dir / nvcc)) {
          nvcc = dir / nvcc;
          break;
        }
      }
  const auto beside = std::filesystem::canonical(nvcc, ec).parent_path().parent_path() / "include";
  if (!ec && std::filesystem::exists(beside / "cuda_fp16.h")) return beside;
#ifdef KFORGE_CUDA_INCLUDE
  return KFORGE_CUDA_INCLUDE;
#else
  return "/usr/local/cuda/include";
#endif
}

std::string nvrtc_driver_path() {
  if (auto p = env_or({"KFORGE_NVRTC_DRIVER"}, ""); !p.empty()) return p;
  std::vector<std::filesystem::path> candidates = {self_exe().parent_path() / "kforge-nvrtc"};
  if (const char* w = std::getenv("KFORGE_WORKER"); w && *w)
    candidates.push_back(std::filesystem::path(w).parent_path() / "kforge-nvrtc");
#ifdef KFORGE_NVRTC_BINARY
  candidates.push_back(KFORGE_NVRTC_BINARY);
#endif
  for (auto& c : candidates)
    if (std::filesystem::exists(c)) return c.string();
  KFORGE_THROW(build, "kernel-only (NVRTC) candidates need kforge-nvrtc, which is not beside kforge; "
                      "set KFORGE_NVRTC_DRIVER, or build kforge with the CUDA toolkit");
}

std::filesystem::path launch_plan_path(const std::filesystem::path& cubin) {
  return cubin.parent_path() / (cubin.filename().string() + ".launch.json");
}

artifact compile_nvrtc(const request& rq) {
  const auto src = std::filesystem::absolute(rq.source);
  const std::string arch = rq.cuda_arch.empty() ? "90a" : rq.cuda_arch;
  artifact failed;
  failed.toolchain = "nvrtc";
  // The directives are read before compiling: a malformed one is the candidate's build
  // error, with its line, and costs no compiler run.
  launch_plan plan;
  try {
    plan = parse_launch_plan(read_file(src), src.filename().string(), rq.real);
    if (!rq.input_names.empty() || !rq.output_names.empty()) {
      auto checked = plan;
      checked.bind(rq.input_names, rq.output_names);
    }
  } catch (const kforge::error& e) {
    failed.diagnostics = e.what();
    return failed;
  }
  const auto cuda_inc = cuda_include_dir();
  std::vector<std::string> flags = {
      "-std=c++17", fmt::format("-arch=sm_{}", arch), "-default-device", "-lineinfo", "-Xptxas=-v",
      fmt::format("-DKF_REAL={}", dtype_c_name(rq.real)), "-DKF_BACKEND_CUDA=1", "-DKF_NVRTC=1",
      "--pre-include=cuda_fp16.h", "--pre-include=cuda_bf16.h", "--pre-include=kforge/nvrtc_prelude.h"};
  auto inc = common_includes(rq, src);
  flags.insert(flags.end(), inc.begin(), inc.end());
  if (auto cutlass = cutlass_include_dir(); !cutlass.empty()) flags.push_back("-I" + cutlass.string());
  flags.push_back("-I" + cuda_inc.string());
  flags.push_back("-I" + (cuda_inc / "cccl").string()); // libcu++ (cuda/std/...) lives here since CUDA 13
  for (auto& l : plan.launches) flags.push_back("--name-expression=" + l.kernel);
  artifact a = cached_compile("nvrtc", nvrtc_driver_path(), flags, rq, "kernel.cubin");
  if (!a.ok) return a;
  // Name expressions -> mangled names, then the plan beside the cubin (written by whoever
  // gets here first: every writer writes the same bytes).
  const auto names_file = a.library.parent_path() / "kernel.cubin.names";
  std::map<std::string, std::string> lowered;
  const std::string names = std::filesystem::exists(names_file) ? read_file(names_file) : "";
  for (std::size_t pos = 0; pos < names.size();) {
    auto end = names.find('\n', pos);
    if (end == std::string::npos) end = names.size();
    const auto line = names.substr(pos, end - pos);
    if (auto tab = line.find('\t'); tab != std::string::npos) lowered[line.substr(0, tab)] = line.substr(tab + 1);
    pos = end + 1;
  }
  for (auto& l : plan.launches) {
    auto it = lowered.find(l.kernel);
    if (it == lowered.end())
      KFORGE_THROW(build, "{}: the cache entry lacks the mangled name of '{}'", a.library.string(), l.kernel);
    l.lowered = it->second;
  }
  if (const auto planf = launch_plan_path(a.library); !std::filesystem::exists(planf))
    write_file_atomic(planf, plan.to_json().dump(1));
  return a;
}

bool defines_model_new(std::string_view source) {
  constexpr std::string_view head = "class ModelNew";
  for (std::size_t at = source.find(head); at != std::string_view::npos; at = source.find(head, at + 1)) {
    const std::size_t next = at + head.size();
    if ((at == 0 || source[at - 1] == '\n') && next < source.size() &&
        (source[next] == '(' || source[next] == ':' || source[next] == ' '))
      return true;
  }
  return false;
}

bool is_python_source(std::string_view source) {
  return defines_model_new(source) && source.find("kf_forward") == std::string_view::npos;
}

std::string toolchain_for(const std::filesystem::path& source, problem_backend b) {
  if (source.extension() == ".py") return "python";
  if (b == problem_backend::cpu) return "host";
  return declares_launches(read_file(source)) ? "nvrtc" : "nvcc";
}

std::filesystem::path write_source(const std::string& source, const std::filesystem::path& like) {
  const auto dir = cache_root() / "sources";
  std::filesystem::create_directories(dir);
  auto path = dir / (sha256_hex(source).substr(0, 24) + like.extension().string());
  if (!std::filesystem::exists(path)) write_file_atomic(path, source);
  return path;
}

artifact compile(const request& given, problem_backend b) {
  request rq = given;
  const bool python = given.source.extension() == ".py";
  // A source that declares tunable parameters is built at their declared defaults: the
  // instance (#defines in place of the directives) is written content-addressed beside
  // the cache, and the original folder stays on the include path.
  if (const std::string text = read_file(given.source); declares_params(text)) {
    std::string instance;
    try {
      const auto space = parse_params(text, given.source.string());
      instance = instantiate(text, space, defaults(space));
    } catch (const kforge::error& e) {
      artifact a;
      a.toolchain = python ? "python" : b == problem_backend::cpu ? "host" : "nvcc";
      a.diagnostics = e.what();
      a.command = "(tunable parameters of " + given.source.string() + ")";
      return a;
    }
    rq.source = write_source(instance, given.source);
    rq.include_dirs.push_back(std::filesystem::absolute(given.source).parent_path());
  }
  if (python) return compile_python(rq, b);
  const auto tc = toolchain_for(rq.source, b);
  return tc == "nvrtc" ? compile_nvrtc(rq) : tc == "nvcc" ? compile_nvcc(rq) : compile_host(rq);
}

nlohmann::json parse_resource_report(const std::string& diag) {
  // ptxas -v, per kernel:
  //   ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90a'
  //   ptxas info    : Function properties for _Z6kernelPf
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]
  nlohmann::json kernels = nlohmann::json::array();
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::smatch m;
  std::size_t pos = 0;
  nlohmann::json cur;
  auto flush = [&] {
    if (!cur.is_null()) kernels.push_back(cur);
    cur = nullptr;
  };
  while (pos < diag.size()) {
    auto end = diag.find('\n', pos);
    std::string line = diag.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? diag.size() : end + 1;
    if (std::regex_search(line, m, entry)) {
      flush();
      cur = {{"kernel", m[1].str()}, {"registers", 0}, {"smem_bytes", 0}, {"stack_bytes", 0},
             {"spill_store_bytes", 0}, {"spill_load_bytes", 0}};
    } else if (!cur.is_null()) {
      if (std::regex_search(line, m, frame)) {
        cur["stack_bytes"] = std::stoi(m[1]);
        cur["spill_store_bytes"] = std::stoi(m[2]);
        cur["spill_load_bytes"] = std::stoi(m[3]);
      }
      if (std::regex_search(line, m, used)) cur["registers"] = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) cur["smem_bytes"] = std::stoi(m[1]);
    }
  }
  flush();
  return kernels;
}

} // namespace kforge::build
