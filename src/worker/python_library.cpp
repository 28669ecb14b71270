#include "worker/python_library.hpp"

#include "bridge/torch_reference.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fs.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kforge::worker {
namespace fs = std::filesystem;

namespace {

// The few CPython functions the worker calls, resolved from the libpython the build recorded.
// No Python.h: the worker is built once, for whatever interpreter a candidate's build found.
using object = void*;
struct python_api {
  void (*initialize)(int) = nullptr;                                 // Py_InitializeEx
  void* (*save_thread)() = nullptr;                                  // PyEval_SaveThread
  void (*restore_thread)(void*) = nullptr;                           // PyEval_RestoreThread
  int (*gil_ensure)() = nullptr;                                     // PyGILState_Ensure
  void (*gil_release)(int) = nullptr;                                // PyGILState_Release
  object (*import)(const char*) = nullptr;                           // PyImport_ImportModule
  object (*attr)(object, const char*) = nullptr;                     // PyObject_GetAttrString
  object (*call)(object, const char*, ...) = nullptr;                // PyObject_CallFunction
  long (*as_long)(object) = nullptr;                                 // PyLong_AsLong
  const char* (*as_utf8)(object) = nullptr;                          // PyUnicode_AsUTF8
  object (*str)(object) = nullptr;                                   // PyObject_Str
  void (*decref)(object) = nullptr;                                  // Py_DecRef
  void (*fetch)(object*, object*, object*) = nullptr;                // PyErr_Fetch
  void (*clear)() = nullptr;                                         // PyErr_Clear

  // @return "" or what is missing.
  std::string resolve(void* lib) {
    std::string missing;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (!fn) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", name);
    };
    get(initialize, "Py_InitializeEx");
    get(save_thread, "PyEval_SaveThread");
    get(restore_thread, "PyEval_RestoreThread");
    get(gil_ensure, "PyGILState_Ensure");
    get(gil_release, "PyGILState_Release");
    get(import, "PyImport_ImportModule");
    get(attr, "PyObject_GetAttrString");
    get(call, "PyObject_CallFunction");
    get(as_long, "PyLong_AsLong");
    get(as_utf8, "PyUnicode_AsUTF8");
    get(str, "PyObject_Str");
    get(decref, "Py_DecRef");
    get(fetch, "PyErr_Fetch");
    get(clear, "PyErr_Clear");
    return missing;
  }

  // The pending exception as text (and cleared).
  std::string error_text() {
    object type = nullptr, value = nullptr, tb = nullptr;
    fetch(&type, &value, &tb);
    std::string out = "unknown Python error";
    if (value)
      if (object s = str(value)) {
        if (const char* c = as_utf8(s)) out = c;
        decref(s);
      }
    for (object o : {type, value, tb})
      if (o) decref(o);
    clear();
    return out;
  }
};

// One interpreter per process, and one candidate in it.
struct embedded {
  python_api py;
  object host = nullptr;     // kforge_candidate.Host
  object forward = nullptr;  // host.forward
  std::string last_error;
  // The thread that loaded the candidate keeps its Python thread state between calls (the
  // worker calls from it): restoring it is cheaper than PyGILState's new state per call, and
  // its thread-locals (torch's grad mode, the current stream) persist.
  std::thread::id home;
  void* home_state = nullptr;
  // A call's outputs that ModelNew returned in its own memory, as Host.forward lists them:
  // [count, (dst, src, bytes) * count], copied into kforge's outputs by place().
  std::vector<std::uint64_t> placements;
  std::function<void(void*, const void*, std::size_t)> copy;
  // unplaced() returns with the interpreter's lock held; place() lets it go. held says how it
  // was taken, so a call after an unplaced one whose place() never came (the timer threw) works.
  bool held = false, held_at_home = false;
  int held_gil = 0;

  void lock() {
    if (held) return;
    held_at_home = std::this_thread::get_id() == home && home_state;
    if (held_at_home) py.restore_thread(home_state);
    else held_gil = py.gil_ensure();
    held = true;
  }
  void unlock() {
    if (!held) return;
    if (held_at_home) home_state = py.save_thread();
    else py.gil_release(held_gil);
    held = false;
  }

  // Host.forward: ModelNew's call, its outputs listed in placements (or converted into
  // kforge's outputs by Python when they are not a plain copy). Returns with the lock held.
  int unplaced(const kf_args* a) {
    lock();
    placements.assign(1 + 3 * static_cast<std::size_t>(a->num_outputs), 0);
    int rc = 1;
    object r = py.call(forward, "KK", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(a)),
                       static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(placements.data())));
    if (!r) {
      last_error = "the Python candidate's host failed: " + py.error_text();
    } else {
      rc = static_cast<int>(py.as_long(r));
      py.decref(r);
      if (rc != 0) {
        last_error.clear();
        if (object e = py.attr(host, "last_error")) {
          if (const char* c = py.as_utf8(e)) last_error = c;
          py.decref(e);
        } else {
          py.clear();
        }
      }
    }
    if (rc != 0) placements.assign(1, 0);
    return rc;
  }

  // The copies, then the lock goes: no Python thread of the candidate's can run between the
  // call's end and the copy's enqueue (Host.forward keeps the returned tensors alive).
  int place(int rc) {
    struct release {
      embedded* e;
      ~release() { e->unlock(); }
    } scope{this};
    if (rc != 0 || placements.empty()) return rc;
    const auto n = std::min<std::uint64_t>(placements[0], (placements.size() - 1) / 3);
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto* t = &placements[1 + 3 * i];
      copy(reinterpret_cast<void*>(t[0]), reinterpret_cast<const void*>(t[1]), static_cast<std::size_t>(t[2]));
    }
    placements.assign(1, 0);
    return rc;
  }
};

std::string joined(const nlohmann::json& paths) {
  std::string out;
  for (auto& p : paths) out += (out.empty() ? "" : ":") + p.get<std::string>();
  return out;
}

} // namespace

fs::path python_info_path(const fs::path& library) { return library.string() + ".python.json"; }

nlohmann::json python_candidate_spec(const problem::problem& p, const std::string& device, const fs::path& jit_dir) {
  auto spec = bridge::torch_request(p);
  nlohmann::json shapes = nlohmann::json::array();
  for (auto* t : p.inputs()) shapes.push_back({{"name", t->name}, {"dtype", dtype_name(t->dtype)}, {"shape", t->shape}});
  spec["abi_shapes"] = shapes;
  spec["device"] = device;
  spec["jit_dir"] = jit_dir.string();
  return spec;
}

namespace {

// The process's one interpreter, started by start_python (a deferred worker's warm-up) or by
// the first load_python.
struct interpreter {
  std::mutex m;
  bool tried = false;
  std::string failed;                  // why it could not start
  nlohmann::json record;               // the build record it started from
  std::shared_ptr<embedded> e;
  object mod = nullptr;                // kforge_candidate
  std::vector<kernel_library::load_step> steps;
  bool candidate_loaded = false;
};
interpreter& the_interpreter() {
  static interpreter i;
  return i;
}

std::int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1); }

// Starts the interpreter the record names and imports kforge's host (torch) and `modules`,
// holding i.m. Leaves the lock released (home_state kept).
void start_locked(interpreter& i, const fs::path& record_path, const std::vector<std::string>& modules) {
  if (i.tried) return;
  i.tried = true;
  try {
    i.record = nlohmann::json::parse(read_file(record_path));
  } catch (const std::exception& e) {
    i.failed = fmt::format("the Python candidate's build record is unreadable: {}", e.what());
    return;
  }
  const auto& interp = i.record["interpreter"];
  const std::string libpython = interp.value("libpython", "");
  if (libpython.empty()) {
    i.failed = interp.value("why_no_libpython", std::string("no shared libpython was found"));
    return;
  }
  // The interpreter's own environment, set before it starts: its home (the standard library)
  // and the recorded sys.path (the venv's site-packages, kforge's python/ folder).
  ::setenv("PYTHONHOME", interp.value("home", "").c_str(), 1);
  ::setenv("PYTHONPATH", joined(interp["path"]).c_str(), 1);
  ::setenv("PYTHONNOUSERSITE", "1", 1);
  ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  // RTLD_GLOBAL: extension modules (torch._C) resolve the interpreter's symbols from it.
  void* lib = ::dlopen(libpython.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    i.failed = fmt::format("cannot load {}: {}", libpython, ::dlerror());
    return;
  }
  auto e = std::make_shared<embedded>();
  if (auto missing = e->py.resolve(lib); !missing.empty()) {
    i.failed = fmt::format("{} lacks {} (not a CPython 3 library?)", libpython, missing);
    return;
  }
  std::int64_t t = now_ns();
  auto step = [&](std::string name) {
    i.steps.push_back({std::move(name), t, now_ns()});
    t = i.steps.back().end_ns;
  };
  e->py.initialize(0); // 0: no signal handlers; the worker's signals stay the worker's
  step("interpreter");
  i.mod = e->py.import("kforge_candidate");
  step("import torch (kforge's host)");
  if (!i.mod) {
    i.failed = fmt::format("cannot import kforge's Python host (python/kforge_candidate.py): {}", e->py.error_text());
    e->py.save_thread();
    return;
  }
  // Modules the candidate's source names (triton, torch.utils.cpp_extension): imported here,
  // before its code, so a deferred worker pays for them while the build runs. A module that
  // fails to import is left for the candidate's own import to report.
  for (auto& name : modules) {
    if (object m = e->py.import(name.c_str())) e->py.decref(m);
    else e->py.clear();
    step("import " + name);
  }
  e->home = std::this_thread::get_id();
  e->home_state = e->py.save_thread(); // the GIL is taken per call, from whichever thread calls
  i.e = std::move(e);
}

} // namespace

std::string start_python(const fs::path& record_path, const std::vector<std::string>& modules) {
  auto& i = the_interpreter();
  std::lock_guard lock(i.m);
  start_locked(i, record_path, modules);
  return i.failed;
}

std::variant<kernel_library, std::string> load_python(const std::string& path, const problem::problem& p,
                                                      device::backend& dev) {
  auto& i = the_interpreter();
  std::lock_guard lock(i.m);
  if (i.candidate_loaded) return std::string("a worker embeds one Python candidate; a second was asked for");
  start_locked(i, python_info_path(path), {});
  if (!i.failed.empty()) return i.failed;
  i.candidate_loaded = true;
  auto e = i.e;
  e->copy = [&dev](void* dst, const void* src, std::size_t bytes) { dev.copy(dst, src, bytes); };
  std::vector<kernel_library::load_step> steps = i.steps;
  std::int64_t t = now_ns();
  auto step = [&](const char* name) {
    steps.push_back({name, t, now_ns()});
    t = steps.back().end_ns;
  };
  e->lock();
  object mod = i.mod;
  const auto spec = python_candidate_spec(p, p.backend == problem::backend_kind::cuda ? "cuda" : "cpu", i.record.value("jit_dir", "")).dump();
  object load = e->py.attr(mod, "safe_load");
  object host = load ? e->py.call(load, "ss", path.c_str(), spec.c_str()) : nullptr;
  std::string why;
  if (!host) {
    why = e->py.error_text();
  } else if (object fwd = e->py.attr(host, "forward")) {
    e->host = host;
    e->forward = fwd;
    step("the candidate (Host)");
    // The host's own split of that step, when it gives one: [[name, begin_ns, end_ns], ...].
    if (object f = e->py.attr(host, "load_steps_json")) {
      if (object r = e->py.call(f, nullptr)) {
        if (const char* c = e->py.as_utf8(r)) {
          const auto j = nlohmann::json::parse(c, nullptr, false);
          if (j.is_array())
            for (auto& s : j)
              if (s.is_array() && s.size() == 3 && s[0].is_string() && s[1].is_number_integer() &&
                  s[2].is_number_integer())
                steps.push_back({s[0].get<std::string>(), s[1].get<std::int64_t>(), s[2].get<std::int64_t>()});
        }
        e->py.decref(r);
      }
      e->py.decref(f);
    }
    e->py.clear();
  } else { // safe_load's answer is the reason, as text
    e->py.clear();
    if (const char* c = e->py.as_utf8(host)) why = c;
    e->py.decref(host);
  }
  e->unlock();
  if (!e->forward) return why.empty() ? std::string("the Python candidate could not be loaded") : why;
  kernel_library k;
  k.unplaced = [e](const kf_args* a) { return e->unplaced(a); };
  k.place = [e](int rc) { return e->place(rc); };
  k.forward = [e](const kf_args* a) { return e->place(e->unplaced(a)); };
  k.last_error = [e] { return e->last_error; };
  k.keep_alive = e; // never finalized: the candidate may have left threads behind
  k.load_steps = std::move(steps);
  return k;
}

} // namespace kforge::worker
