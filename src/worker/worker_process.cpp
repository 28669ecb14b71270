#include "worker/worker_process.hpp"

#include "core/error.hpp"
#include "device/backend.hpp"
#include "device/cuda_backend.hpp"
#include "eval/buffers.hpp"
#include "eval/inputs.hpp"
#include "eval/timer.hpp"
#include "problem/problem.hpp"
#include "worker/kernel_library.hpp"
#include "worker/protocol.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>
#include <iterator>
#include <memory>
#include <random>
#include <tuple>
#include <variant>

namespace kforge::worker {
namespace {

// How long a verification call's outputs must stay unchanged after its stream is done.
constexpr int deferred_wait_ms = 20;

struct trial {
  std::string case_name;
  std::uint64_t seed;
  int index;
};

void send_outputs(channel_writer& ch, const std::vector<eval::host_tensor>& outs, const std::string& subject, int t,
                  int run) {
  for (std::size_t k = 0; k < outs.size(); ++k)
    ch.send({{"type", "output"}, {"subject", subject}, {"trial", t}, {"run", run}, {"index", k},
             {"dtype", static_cast<int>(outs[k].dtype)}},
            outs[k].bytes.data(), outs[k].bytes.size());
}

std::size_t workspace_size(const kernel_library& k, eval::tensor_set& ts) {
  return k.workspace ? k.workspace(&ts.args()) : 0;
}

std::string returned_message(const kernel_library& k, int rc) {
  const auto why = k.last_error();
  return why.empty() ? fmt::format("kf_forward returned {}", rc) : fmt::format("kf_forward returned {}: {}", rc, why);
}

int run_oracle(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  auto ref = load_kernel(job["libraries"]["reference"], p);
  auto orc = load_kernel(job["libraries"]["oracle"], p);
  for (auto* l : {&ref, &orc})
    if (auto* e = std::get_if<std::string>(l)) {
      ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", "reference: " + *e}});
      return 0;
    }
  auto& r = std::get<kernel_library>(ref);
  auto& o = std::get<kernel_library>(orc);
  eval::tensor_set rs(dev, p, eval::precision::nominal, 1), os(dev, p, eval::precision::oracle, 2);
  bool sized = false;
  for (auto& tj : job["trials"]) {
    trial t{tj["case"], tj["seed"], tj["trial"]};
    const auto nominal = eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal);
    rs.upload_inputs(nominal);
    os.upload_inputs(eval::widen_to_oracle(p, nominal));
    if (!sized) {
      rs.set_workspace(workspace_size(r, rs), 3);
      os.set_workspace(workspace_size(o, os), 4);
      sized = true;
    }
    for (auto [lib, ts, subject] : {std::tuple{&r, &rs, "reference"}, std::tuple{&o, &os, "oracle"}}) {
      ts->poison(0);
      ch.send({{"type", "progress"}, {"subject", subject}, {"trial", t.index}});
      const int rc = lib->forward(&ts->args());
      dev.synchronize();
      if (rc != 0) {
        ch.send({{"type", "error"}, {"reason", "returned_error"},
                 {"message", fmt::format("the {} failed on case '{}': {}", subject, t.case_name,
                                         returned_message(*lib, rc))}});
        return 0;
      }
      send_outputs(ch, ts->download_outputs(), subject, t.index, 0);
    }
  }
  return 0;
}

int run_verify(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  std::mt19937_64 canary(job.value("canary_seed", std::uint64_t{1}));
  auto cand = load_kernel(job["libraries"]["candidate"], p);
  if (auto* e = std::get_if<std::string>(&cand)) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", *e}});
    return 0;
  }
  auto& k = std::get<kernel_library>(cand);
  // "guards": false under compute-sanitizer, so that an access past a buffer leaves its allocation.
  eval::tensor_set ts(dev, p, eval::precision::nominal, canary(), job.value("guards", true));
  bool sized = false;
  // Workspace poison differs between the two calls on the same inputs, so a candidate
  // that reads workspace it never wrote computes two different answers.
  constexpr std::uint8_t ws_poison[2] = {0xFF, 0x55};
  for (auto& tj : job["trials"]) {
    trial t{tj["case"], tj["seed"], tj["trial"]};
    const auto inputs = eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal);
    ts.upload_inputs(inputs);
    if (!sized) {
      ch.send({{"type", "progress"}, {"phase", "workspace"}, {"trial", t.index}});
      ts.set_workspace(workspace_size(k, ts), canary());
      sized = true;
    }
    for (int run = 0; run < 2; ++run) {
      ts.poison(ws_poison[run]);
      ch.send({{"type", "progress"}, {"phase", "call"}, {"trial", t.index}, {"run", run}});
      dev.synchronize(); // the poison is in place before the candidate starts, whatever stream it uses
      int rc = 0;
      std::vector<eval::host_tensor> at_return, settled;
      try {
        rc = k.forward(&ts.args());
        // The call's answer is what its outputs hold once its stream is done (on the CPU: at
        // return). Then the whole device, a pause and the outputs again: work left on
        // another stream or in a thread that outlives the call changes them in between.
        dev.synchronize_stream();
        if (rc == 0) at_return = ts.download_outputs();
        dev.synchronize();
        if (rc == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(deferred_wait_ms));
          dev.synchronize();
          settled = ts.download_outputs();
        }
      } catch (const device::fault& f) {
        ch.send({{"type", "check"}, {"name", "device_error"}, {"trial", t.index}, {"run", run}, {"passed", false},
                 {"message", fmt::format("the candidate faulted the GPU: {}", f.what())}});
        return 0;
      }
      if (rc != 0) {
        ch.send({{"type", "check"}, {"name", "returned_error"}, {"trial", t.index}, {"run", run}, {"passed", false},
                 {"message", returned_message(k, rc)}});
        return 0;
      }
      std::vector<std::string> late;
      for (std::size_t i = 0; i < at_return.size(); ++i)
        if (at_return[i].bytes != settled[i].bytes) late.push_back(p.outputs()[i]->name);
      ch.send({{"type", "check"}, {"name", "deferred_work"}, {"trial", t.index}, {"run", run}, {"passed", late.empty()},
               {"message", late.empty() ? ""
                                        : fmt::format("output '{}' changed after the call's stream was done: work "
                                                      "outside args->stream, or a thread that outlives the call",
                                                      late.front())},
               {"detail", {{"changed", late}}}});
      auto guards = ts.check_guards();
      ch.send({{"type", "check"}, {"name", "guard"}, {"trial", t.index}, {"run", run}, {"passed", guards.empty()},
               {"message", guards.empty() ? "" : "out-of-bounds write: " + guards.front()},
               {"detail", {{"violations", guards}}}});
      const auto after = ts.download_inputs();
      std::vector<std::string> changed;
      for (std::size_t i = 0; i < after.size(); ++i)
        if (after[i].bytes != inputs[i].bytes) changed.push_back(p.inputs()[i]->name);
      ch.send({{"type", "check"}, {"name", "inputs_modified"}, {"trial", t.index}, {"run", run},
               {"passed", changed.empty()},
               {"message", changed.empty() ? "" : fmt::format("the candidate changed input '{}'", changed.front())},
               {"detail", {{"changed", changed}}}});
      if (!changed.empty()) ts.upload_inputs(inputs); // the repeat must see identical inputs
      send_outputs(ch, at_return, "candidate", t.index, run);
    }
  }
  return 0;
}

int run_time(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  const auto& tj = job["timing"];
  eval::timing_config cfg;
  cfg.budget_s = tj.value("budget_s", 2.0);
  cfg.warmup = tj.value("warmup", 2);
  cfg.min_samples = tj.value("min_samples", 10);
  cfg.max_samples = tj.value("max_samples", 1000);
  cfg.target_rel_ci = tj.value("target_rel_ci", 0.01);
  const int rotations = tj.value("rotations", 3);
  std::mt19937_64 rng(tj.value("seed", std::uint64_t{7}));

  struct subject_state {
    std::string name;
    kernel_library lib;
    std::vector<std::unique_ptr<eval::tensor_set>> sets;
  };
  std::vector<subject_state> subjects;
  // The candidate first, then the reference, then any baselines.
  for (auto& sj : job["subjects"]) {
    const std::string name = sj["name"];
    auto l = load_kernel(sj["library"], p);
    if (auto* e = std::get_if<std::string>(&l)) {
      ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", fmt::format("{}: {}", name, *e)}});
      return 0;
    }
    subjects.push_back({name, std::get<kernel_library>(l), {}});
  }
  // Fresh inputs per rotation, the same values for both subjects: a ratio of like with like.
  std::vector<std::vector<eval::host_tensor>> inputs;
  for (int r = 0; r < rotations; ++r)
    inputs.push_back(eval::make_inputs(p, p.cases[r % p.cases.size()], rng(), eval::precision::nominal));
  for (auto& s : subjects)
    for (int r = 0; r < rotations; ++r) {
      auto ts = std::make_unique<eval::tensor_set>(dev, p, eval::precision::nominal, rng());
      ts->upload_inputs(inputs[r]);
      ts->set_workspace(workspace_size(s.lib, *ts), rng());
      s.sets.push_back(std::move(ts));
    }
  // Re-verification of timed calls: the parent's recheck trials (verification trials, whose
  // truth it has) replace a rotation's inputs for one timed call, at a random early call and
  // after sampling ends, and once go into buffers of their own. Their outputs go back with
  // "trial" = the place in the rechecks list. The candidate sees a timed call
  // like any other, so a cache keyed on pointers, or a switch after N calls, answers wrong.
  std::vector<trial> rechecks;
  for (auto& rj : job.value("rechecks", nlohmann::json::array())) rechecks.push_back({rj["case"], rj["seed"], rj["trial"]});
  auto recheck_inputs = [&](const trial& t) { return eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal); };
  const int early_call = rechecks.empty() ? -1 : static_cast<int>(rng() % (cfg.warmup + cfg.min_samples));
  int candidate_calls = 0, pending = -1;

  std::vector<eval::timing_subject> ts;
  for (auto& s : subjects) {
    eval::timing_subject t{s.name, [&s](int r) { return s.lib.forward(&s.sets[r]->args()); },
                           [&s](int r) { s.sets[r]->poison(0xFF); }, [&s](int r) { return s.sets[r]->regions(); },
                           rotations, {}};
    if (s.name == "candidate" && !rechecks.empty()) {
      t.prepare = [&, sp = &s](int r) {
        if (candidate_calls++ == early_call) sp->sets[r]->upload_inputs(recheck_inputs(rechecks[0])), pending = r;
        sp->sets[r]->poison(0xFF);
      };
      t.finish = [&, sp = &s](int r) {
        if (pending != r) return;
        send_outputs(ch, sp->sets[r]->download_outputs(), "candidate", 0, 0);
        sp->sets[r]->upload_inputs(inputs[r]);
        pending = -1;
      };
    }
    ts.push_back(std::move(t));
  }
  ch.send({{"type", "progress"}, {"phase", "timing"}});
  bool failed = false;
  for (auto& r : eval::time_interleaved(dev, ts, cfg)) {
    failed |= r.failed_rc != 0;
    ch.send({{"type", "timing"}, {"subject", r.subject}, {"samples", r.samples}, {"failed_rc", r.failed_rc}});
  }
  if (failed || rechecks.size() < 3 || subjects.empty() || subjects[0].name != "candidate") return 0;
  // After sampling: one more timed call in the timed buffers, one in new buffers.
  auto& cand = subjects[0];
  eval::tensor_set fresh(dev, p, eval::precision::nominal, rng());
  fresh.upload_inputs(recheck_inputs(rechecks[2]));
  fresh.set_workspace(workspace_size(cand.lib, fresh), rng());
  cand.sets[0]->upload_inputs(recheck_inputs(rechecks[1]));
  for (auto [set, place] : {std::pair{cand.sets[0].get(), 1}, std::pair{&fresh, 2}}) {
    set->poison(0xFF);
    dev.flush_caches(set->regions());
    int rc = 0;
    (void)dev.time_call([&] { return cand.lib.forward(&set->args()); }, &rc);
    if (rc != 0) {
      ch.send({{"type", "timing"}, {"subject", "candidate"}, {"samples", nlohmann::json::array()}, {"failed_rc", rc}});
      return 0;
    }
    send_outputs(ch, set->download_outputs(), "candidate", place, 0);
  }
  return 0;
}

// One call of the candidate on one trial's inputs, inside the profiler's collection range
// (after a warm-up call outside it), for `kforge profile` under ncu.
int run_profile(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  auto cand = load_kernel(job["libraries"]["candidate"], p);
  if (auto* e = std::get_if<std::string>(&cand)) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", *e}});
    return 0;
  }
  auto& k = std::get<kernel_library>(cand);
  const auto& tj = job["trials"].at(0);
  eval::tensor_set ts(dev, p, eval::precision::nominal, 7, false);
  ts.upload_inputs(eval::make_trial_inputs(p, tj["case"], tj["seed"], eval::precision::nominal));
  ts.set_workspace(workspace_size(k, ts), 9);
  for (int call = 0; call < 2; ++call) {
    ts.poison(0xFF);
    dev.synchronize();
    if (call == 1) dev.profiler_range(true);
    const int rc = k.forward(&ts.args());
    dev.synchronize();
    if (call == 1) dev.profiler_range(false);
    if (rc != 0) {
      ch.send({{"type", "error"}, {"reason", "returned_error"}, {"message", returned_message(k, rc)}});
      return 0;
    }
  }
  ch.send({{"type", "profiled"}});
  return 0;
}

int run_calibrate(channel_writer& ch, const nlohmann::json& job) {
  const std::string path = job["libraries"]["calibrate"];
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", std::string("dlopen: ") + ::dlerror()}});
    return 0;
  }
  using calibrate_fn = int (*)(double*, int);
  auto fn = reinterpret_cast<calibrate_fn>(::dlsym(h, "kf_calibrate"));
  if (!fn) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", "no kf_calibrate"}});
    return 0;
  }
  std::vector<double> v(5, 0.0);
  const int rc = fn(v.data(), static_cast<int>(v.size()));
  ch.send({{"type", "calibration"}, {"rc", rc}, {"values", v}});
  return 0;
}

} // namespace

int worker_process_main() {
  // Nothing outside this process may read its memory or ptrace it (where the kernel enforces it).
  ::prctl(PR_SET_DUMPABLE, 0);
  std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  auto job = nlohmann::json::parse(text, nullptr, false);
  if (job.is_discarded() || !job.contains("nonce")) {
    std::cerr << "kforge-worker: expected a JSON job on stdin (this program is started by kforge)\n";
    return 2;
  }
  auto n = nonce_from_hex(job["nonce"]);
  if (!n) return 2;
  channel_writer ch(result_fd, *n);
  ::fcntl(result_fd, F_SETFD, FD_CLOEXEC); // programs the candidate starts do not inherit the channel
  try {
    ch.send({{"type", "hello"}, {"pid", ::getpid()}});
    if (job.value("role", "") == "calibrate") {
      run_calibrate(ch, job);
      ch.send({{"type", "done"}});
      return 0;
    }
    // "shapes": tensor shapes that replace the problem's (the reduced shape of a sanitizer run).
    const auto p = problem::with_shapes(problem::load(job["problem"].get<std::string>()),
                                        job.value("shapes", std::map<std::string, std::vector<int64_t>>{}));
    auto dev = device::make_backend(p.backend, job.value("device", 0));
    const std::string role = job["role"];
    int rc = 0;
    if (role == "oracle") rc = run_oracle(ch, p, job, *dev);
    else if (role == "verify") rc = run_verify(ch, p, job, *dev);
    else if (role == "time") rc = run_time(ch, p, job, *dev);
    else if (role == "profile") rc = run_profile(ch, p, job, *dev);
    else KFORGE_THROW(internal, "unknown worker role '{}'", role);
    ch.send({{"type", "done"}});
    return rc;
  } catch (const device::fault& f) {
    // The context is gone; report it as the candidate's fault (only candidate code ran on it).
    try {
      ch.send({{"type", "error"}, {"reason", "device_error"}, {"message", f.what()}});
      ch.send({{"type", "done"}});
    } catch (...) {
    }
    return 1;
  } catch (const std::exception& e) {
    try {
      ch.send({{"type", "error"}, {"reason", "worker_error"}, {"message", e.what()}});
      ch.send({{"type", "done"}});
    } catch (...) {
    }
    return 1;
  }
}

} // namespace kforge::worker
