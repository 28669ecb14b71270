// Role "verify": the candidate alone, called twice on each trial's inputs, with the checks
// only this process can make (guards, inputs unchanged, deferred work); its outputs go to
// the parent, which judges them.
#include "worker/roles.hpp"

#include "device/cuda_backend.hpp"
#include "eval/inputs.hpp"
#include "worker/launch_guard.hpp"

#include <fmt/format.h>

#include <chrono>
#include <random>
#include <thread>
#include <variant>

namespace kforge::worker {
namespace {
// How long a verification call's outputs must stay unchanged after its stream is done.
constexpr int deferred_wait_ms = 20;
} // namespace

int run_verify(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev) {
  std::mt19937_64 canary(job.value("canary_seed", std::uint64_t{1}));
  std::string unwatched; // CUDA only: which streams the candidate's kernels run on
  auto guard = p.backend == problem::backend_kind::cuda ? launch_guard::start(dev.stream(), &unwatched) : nullptr;
  auto cand = load_kernel(job["libraries"]["candidate"], p, dev);
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
  int at_trial = -1, at_run = 0; // where a resource_limit_hit happened
  try {
    for (auto& tj : job["trials"]) {
      const trial t = trial_of(tj);
      at_trial = t.index;
      at_run = 0;
      const auto inputs = eval::make_trial_inputs(p, t.case_name, t.seed, eval::precision::nominal);
      ts.upload_inputs(inputs);
      if (!sized) {
        ch.send({{"type", "progress"}, {"phase", "workspace"}, {"trial", t.index}});
        ts.set_workspace(workspace_size(k, ts), canary());
        sized = true;
      }
      for (int run = 0; run < 2; ++run) {
        at_run = run;
        ts.poison(ws_poison[run]);
        ch.send({{"type", "progress"}, {"phase", "call"}, {"trial", t.index}, {"run", run}});
        dev.synchronize(); // the poison is in place before the candidate starts, whatever stream it uses
        int rc = 0;
        std::vector<eval::host_tensor> at_return, settled;
        try {
          rc = call_forward(k, &ts.args(), guard.get());
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
        send_check(ch, deferred_work_check(late), t.index, run);
        if (guard)
          if (auto v = guard->take_violation())
            send_check(ch, {.name = v->check, .passed = false, .message = v->message}, t.index, run);
        send_check(ch, guard_check(ts.check_guards()), t.index, run);
        const auto after = ts.download_inputs();
        std::vector<std::string> changed;
        for (std::size_t i = 0; i < after.size(); ++i)
          if (after[i].bytes != inputs[i].bytes) changed.push_back(p.inputs()[i]->name);
        send_check(ch, inputs_modified_check(changed), t.index, run);
        if (!changed.empty()) ts.upload_inputs(inputs); // the repeat must see identical inputs
        send_outputs(ch, at_return, "candidate", t.index, run);
      }
    }
  } catch (const resource_limit_hit& e) {
    ch.send({{"type", "check"}, {"name", "resource_limit"}, {"trial", at_trial}, {"run", at_run}, {"passed", false},
             {"message", e.what()}});
  }
  return 0;
}

} // namespace kforge::worker
