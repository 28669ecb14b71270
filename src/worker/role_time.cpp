// Roles "time" (the candidate) and "time_trusted" (the reference and baselines): the
// subjects of the job, timed one sample at a time as the parent asks, on rotating inputs.
// The parent interleaves the two workers sample by sample (worker/timing.cpp), so the
// candidate never shares a process with the code it is compared with. Commands, one JSON
// line each on stdin:
//   {"cmd":"sample","subject":"reference","rotation":2} -> {"type":"sample","subject","rotation","seconds","rc"}
//   {"cmd":"kernels","calls":3}  -> {"type":"kernels","subjects":{name: [...]}} (or "why"): what each
//                                   subject's calls launched (worker/kernel_trace.hpp), untimed
//   {"cmd":"finish","rechecks":true}                    -> the candidate's timed calls after sampling; then "done"
// End of input is a finish without rechecks.
// On the GPU-resident path (job "shared": the candidate's worker) the rotations' buffers are
// the judge's shared sets, whose fds arrive on share_fd, one per rotation and one more never
// timed; the parent re-verifies through the judge, so this worker knows nothing of rechecks:
//   {"cmd":"call","set":i}  one timed call on set i (R: the extra set) -> {"type":"sample",...}
// The trusted worker then draws its rotations on the device (job libraries.kernels), the same values.
#include "worker/roles.hpp"

#include "core/error.hpp"
#include "device/share.hpp"
#include "eval/device_kernels.hpp"
#include "eval/inputs.hpp"
#include "eval/timer.hpp"
#include "worker/kernel_trace.hpp"
#include "worker/launch_guard.hpp"

#include <sched.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <memory>
#include <random>
#include <variant>

namespace kforge::worker {

int run_time(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
             std::istream& commands) {
  const auto& tj = job["timing"];
  const int warmup = tj.value("warmup", 2), min_samples = tj.value("min_samples", 10);
  const int rotations = tj.value("rotations", 3);
  const bool flush = tj.value("flush_caches", true);
  // Both timing workers get the same seed: the rotations' inputs are its first draws, so
  // every subject is timed on the same values, a ratio of like with like.
  std::mt19937_64 rng(tj.value("seed", std::uint64_t{7}));

  struct subject_state {
    std::string name;
    kernel_library lib;
    std::vector<std::unique_ptr<eval::tensor_set>> sets;
  };
  // Launches watched in both timing workers, so that CUPTI's per-launch cost is on both sides
  // of the ratio; only the candidate's violations are reported.
  std::string unwatched;
  auto guard = p.backend == problem::backend_kind::cuda ? launch_guard::start(dev.stream(), &unwatched) : nullptr;
  std::vector<subject_state> subjects;
  for (auto& sj : job["subjects"]) {
    const std::string name = sj["name"];
    auto l = load_kernel(sj["library"], p, dev);
    if (auto* e = std::get_if<std::string>(&l)) {
      ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", fmt::format("{}: {}", name, *e)}});
      return 0;
    }
    subjects.push_back({name, std::get<kernel_library>(l), {}});
  }
  const bool shared = job.value("shared", false);
  const bool on_device = shared || job.value("libraries", nlohmann::json::object()).contains("kernels");
  std::vector<std::vector<eval::host_tensor>> inputs;
  std::vector<std::uint64_t> rotation_seeds;
  for (int r = 0; r < rotations; ++r) {
    rotation_seeds.push_back(rng());
    if (!on_device) inputs.push_back(eval::make_inputs(p, p.cases[r % p.cases.size()], rotation_seeds.back(), eval::precision::nominal));
  }
  std::vector<device::shared_memory> mapped; // shared: the judge's sets, rotations then the extra one
  if (shared) {
    for (int fd : shared_sets(job)) {
      mapped.push_back(device::shared_memory::import(job.value("device", 0), fd, job["set_bytes"].get<std::size_t>()));
      ::close(fd);
    }
    if (static_cast<int>(mapped.size()) != rotations + 1)
      KFORGE_THROW(worker, "time worker: {} shared sets for {} rotations", mapped.size(), rotations);
  }
  std::optional<eval::device_kernels> kernels;
  if (!shared && on_device) kernels = eval::load_device_kernels(job["libraries"]["kernels"].get<std::string>());
  std::unique_ptr<eval::tensor_set> extra; // shared: the set timed only by a "call" command
  for (auto& s : subjects) {
    for (int r = 0; r < rotations; ++r) {
      std::unique_ptr<eval::tensor_set> ts;
      if (shared) {
        ts = std::make_unique<eval::tensor_set>(dev, p, mapped[r].data());
      } else {
        ts = std::make_unique<eval::tensor_set>(dev, p, eval::precision::nominal, rng());
        if (kernels) {
          std::vector<void*> dst;
          for (int k = 0; k < ts->args().num_inputs; ++k) dst.push_back(ts->args().inputs[k].data);
          eval::draw_case(*kernels, p, p.cases[r % p.cases.size()], rotation_seeds[r], dst, dev.stream());
          dev.synchronize();
        } else {
          ts->upload_inputs(inputs[r]);
        }
      }
      ts->set_workspace(workspace_size(s.lib, *ts), rng());
      s.sets.push_back(std::move(ts));
    }
    if (shared && !extra) {
      extra = std::make_unique<eval::tensor_set>(dev, p, mapped[rotations].data());
      extra->set_workspace(workspace_size(s.lib, *extra), rng());
    }
  }
  // Re-verification of timed calls: the parent's recheck trials (verification trials, whose
  // truth it has) replace a rotation's inputs for one timed call, at a random early call and
  // after sampling ends, and once go into buffers of their own. Their outputs go back with
  // "trial" = the place in the rechecks list. The candidate sees a timed call
  // like any other, so a cache keyed on pointers, or a switch after N calls, answers wrong.
  std::vector<trial> rechecks;
  for (auto& rj : job.value("rechecks", nlohmann::json::array())) rechecks.push_back(trial_of(rj));
  auto recheck_inputs = [&](const trial& t) { return eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal); };
  const int early_call = rechecks.empty() ? -1 : static_cast<int>(rng() % (warmup + min_samples));
  int candidate_calls = 0, pending = -1;

  // A call into a subject's code: a sandbox limit it hits ends this worker (resource_limit).
  auto forward = [&guard](const kernel_library& lib, eval::tensor_set& set) {
    return call_forward(lib, &set.args(), guard.get());
  };
  // A timed call: the outputs a Python candidate returned are copied in after the timer stopped.
  auto timed = [&guard, &dev](const kernel_library& lib, eval::tensor_set& set, int* rc) {
    return time_forward(dev, lib, &set.args(), guard.get(), rc);
  };
  bool violation_sent = false;
  auto report_launch_violation = [&] {
    if (!guard || violation_sent || job.value("role", "") != "time") return;
    if (auto v = guard->take_violation()) {
      ch.send({{"type", "error"}, {"reason", v->check}, {"message", v->message}});
      violation_sent = true;
    }
  };
  std::vector<eval::timing_subject> ts;
  for (auto& s : subjects) {
    eval::timing_subject t{s.name, [&s, &guard](int r) { return call_unplaced(s.lib, &s.sets[r]->args(), guard.get()); },
                           [&s](int r) { s.sets[r]->poison(0xFF); }, [&s](int r) { return s.sets[r]->regions(); },
                           rotations, {}, [&s](int rc) { return place_outputs(s.lib, rc); }};
    if (shared) // the call's answer into the set's answer slots, for the judge's re-verification
      t.finish = [&s, &dev](int r) {
        s.sets[r]->copy_answers();
        dev.synchronize_stream();
      };
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
  nlohmann::json names = nlohmann::json::array();
  for (auto& s : subjects) names.push_back(s.name);
  ch.send({{"type", "ready"}, {"subjects", names}});
  ch.send({{"type", "progress"}, {"phase", "timing"}});

  // Pinned to one CPU when the parent asks (KFORGE_TIMING_CPUS, worker/command_input.hpp): this
  // thread only, which makes every timed call, so threads started earlier keep their CPUs.
  if (const auto& pin = tj.value("pin_cpus", nlohmann::json::array()); pin.size() == 2) {
    const int cpu = pin[job.value("role", "") == "time" ? 0 : 1].get<int>();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)::sched_setaffinity(0, sizeof set, &set); // refused: the samples say so by their spread, nothing breaks
  }

  bool recheck_after = false;
  for (std::string line; std::getline(commands, line);) {
    const auto cmd = nlohmann::json::parse(line, nullptr, false);
    const std::string what = cmd.is_object() ? cmd.value("cmd", "") : "";
    if (what == "finish") {
      recheck_after = cmd.value("rechecks", false);
      break;
    }
    if (what == "call" && shared && !subjects.empty()) { // a re-verified timed call, judged by the judge
      const int i = cmd.value("set", -1);
      if (i < 0 || i > rotations) KFORGE_THROW(worker, "time worker: no set {}", i);
      auto& set = i < rotations ? *subjects[0].sets[i] : *extra;
      set.poison(0xFF);
      if (flush) dev.flush_caches(set.regions());
      int rc = 0;
      const double seconds = timed(subjects[0].lib, set, &rc);
      set.copy_answers();
      dev.synchronize_stream();
      report_launch_violation();
      ch.send({{"type", "sample"}, {"subject", subjects[0].name}, {"set", i}, {"seconds", seconds}, {"rc", rc}});
      continue;
    }
    if (what == "kernels") { // after sampling, outside every timed call: tracing costs per launch
      const int calls = std::clamp(cmd.value("calls", 3), 1, 20);
      nlohmann::json reply = {{"type", "kernels"}, {"subjects", nlohmann::json::object()}};
      std::string why;
      if (p.backend != problem::backend_kind::cuda) {
        reply["why"] = "a CPU problem launches no kernels";
      } else {
        for (auto& s : subjects) {
          auto& set = *s.sets[0]; // timed already: the set never timed stays so for its recheck
          dev.synchronize();
          auto trace = kernel_trace::start(&why);
          if (!trace) break;
          int rc = 0;
          for (int c = 0; c < calls && rc == 0; ++c) {
            set.poison(0xFF);
            rc = forward(s.lib, set);
          }
          dev.synchronize();
          reply["subjects"][s.name] = trace->finish(calls);
        }
        if (!why.empty()) reply["why"] = why;
      }
      ch.send(reply);
      continue;
    }
    if (what != "sample") KFORGE_THROW(worker, "time worker: unknown command '{}'", line.substr(0, 200));
    const std::string name = cmd.value("subject", "");
    const int r = cmd.value("rotation", -1);
    auto it = std::find_if(ts.begin(), ts.end(), [&](auto& s) { return s.name == name; });
    if (it == ts.end() || r < 0 || r >= rotations)
      KFORGE_THROW(worker, "time worker: no subject '{}' with rotation {}", name, r);
    const auto got = eval::take_sample(dev, *it, r, flush);
    report_launch_violation();
    ch.send({{"type", "sample"}, {"subject", name}, {"rotation", r}, {"seconds", got.seconds}, {"rc", got.rc}});
  }
  if (!recheck_after || rechecks.size() < 3 || subjects.empty() || subjects[0].name != "candidate") return 0;
  // After sampling: one more timed call in the timed buffers, one in new buffers.
  auto& cand = subjects[0];
  eval::tensor_set fresh(dev, p, eval::precision::nominal, rng());
  fresh.upload_inputs(recheck_inputs(rechecks[2]));
  fresh.set_workspace(workspace_size(cand.lib, fresh), rng());
  cand.sets[0]->upload_inputs(recheck_inputs(rechecks[1]));
  for (auto [set, place] : {std::pair{cand.sets[0].get(), 1}, std::pair{&fresh, 2}}) {
    set->poison(0xFF);
    if (flush) dev.flush_caches(set->regions());
    int rc = 0;
    (void)timed(cand.lib, *set, &rc);
    if (rc != 0) {
      ch.send({{"type", "error"}, {"reason", "returned_error"},
               {"message", fmt::format("the candidate returned {} on a re-verified timed call after sampling", rc)}});
      return 0;
    }
    send_outputs(ch, set->download_outputs(), "candidate", place, 0);
  }
  return 0;
}

} // namespace kforge::worker
