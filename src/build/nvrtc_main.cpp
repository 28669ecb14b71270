// kforge-nvrtc: a compiler driver around NVRTC, so kernel-only candidates are compiled
// the same way nvcc and g++ are: in a child process with a time limit, whose crash or
// runaway template recursion cannot take kforge down.
//
//   kforge-nvrtc [NVRTC options...] [--name-expression=EXPR]... -o OUT.cubin SOURCE.cu
//   kforge-nvrtc --version
//
// Writes OUT (a cubin) and OUT.names: one line per name expression, "EXPR<TAB>LOWERED".
// The program log (errors, warnings, ptxas -v) goes to stdout. Exit 0 on success, 1 when
// the source does not compile, 2 on misuse.
#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int usage(const char* why) {
  std::cerr << "kforge-nvrtc: " << why
            << "\nusage: kforge-nvrtc [NVRTC options] [--name-expression=EXPR]... -o OUT.cubin SOURCE.cu\n";
  return 2;
}

bool check(nvrtcResult r, const char* what) {
  if (r == NVRTC_SUCCESS) return true;
  std::cout << "kforge-nvrtc: " << what << ": " << nvrtcGetErrorString(r) << "\n";
  return false;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<std::string> options, names;
  std::string out, source;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--version") {
      int major = 0, minor = 0;
      nvrtcVersion(&major, &minor);
      std::cout << "kforge-nvrtc: NVRTC release " << major << "." << minor << "\n";
      return 0;
    }
    if (a == "-o") {
      if (++i == argc) return usage("-o needs a path");
      out = argv[i];
    } else if (a.rfind("--name-expression=", 0) == 0) {
      names.push_back(a.substr(18));
    } else if (!a.empty() && a[0] == '-') {
      options.push_back(a);
    } else if (source.empty()) {
      source = a;
    } else {
      return usage("more than one source file");
    }
  }
  if (source.empty() || out.empty()) return usage("a source file and -o OUT are required");
  std::ifstream in(source, std::ios::binary);
  if (!in) return usage(("cannot read " + source).c_str());
  std::stringstream text;
  text << in.rdbuf();
  const std::string code = text.str();

  nvrtcProgram prog = nullptr;
  if (!check(nvrtcCreateProgram(&prog, code.c_str(), source.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram"))
    return 1;
  for (auto& n : names)
    if (!check(nvrtcAddNameExpression(prog, n.c_str()), ("kernel name '" + n + "'").c_str())) return 1;
  std::vector<const char*> opts;
  for (auto& o : options) opts.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(prog, log.data());
  if (!log.empty() && log.back() == '\0') log.pop_back();
  std::cout << log;
  if (compiled != NVRTC_SUCCESS) {
    std::cout << "kforge-nvrtc: " << nvrtcGetErrorString(compiled) << "\n";
    return 1;
  }
  std::string names_text;
  for (auto& n : names) {
    const char* lowered = nullptr;
    if (nvrtcGetLoweredName(prog, n.c_str(), &lowered) != NVRTC_SUCCESS || !lowered) {
      std::cout << "kforge-nvrtc: no kernel named '" << n << "' in " << source
                << " (declare it __global__; a template needs its arguments, as in name<256>)\n";
      return 1;
    }
    names_text += n + "\t" + lowered + "\n";
  }
  std::size_t cubin_size = 0;
  if (!check(nvrtcGetCUBINSize(prog, &cubin_size), "nvrtcGetCUBINSize") || cubin_size == 0) {
    std::cout << "kforge-nvrtc: no cubin: give -arch=sm_XX (a real architecture), not compute_XX\n";
    return 1;
  }
  std::string cubin(cubin_size, '\0');
  if (!check(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN")) return 1;
  nvrtcDestroyProgram(&prog);
  std::ofstream(out, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  std::ofstream(out + ".names", std::ios::binary) << names_text;
  return 0;
}
