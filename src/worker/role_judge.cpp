// Role "judge": the trusted process of a GPU-resident evaluation (docs/verification.md). It
// loads the reference, the float64 oracle and kforge's device kernels, never candidate code.
// It owns every byte a candidate touches: shared buffer sets (device/share.hpp), whose fds
// it sends on share_fd once, at start; the parent hands them to the candidate's workers.
// It draws each trial's inputs on the device, computes and keeps the truth there, and judges
// a candidate's outputs in place with its own kernels: only summaries leave the GPU.
// Commands (one JSON line each on stdin), each answered on the result channel:
//   {"cmd":"load","set":s,"trial":t}     trial t's inputs into set s, outputs poisoned -> "loaded"
//   {"cmd":"rotation","set":s,"case":c,"seed":x}  a timing rotation's inputs (no truth) -> "loaded"
//   {"cmd":"poison","set":s}              set s's outputs poisoned again -> "poisoned"
//   {"cmd":"snapshot","set":s}            the call's answer, copied as soon as it returned -> "snapped"
//   {"cmd":"judge","set":s,"trial":t,"run":r,"timed":b,"waited":w}  checks of that answer -> "check"...,
//                                         "judged" (waited: the pause after the stop was this batch's
//                                         earlier judge command's, so none is taken again)
//   {"cmd":"drop","trial":t}              trial t's truth no longer needed
//   {"cmd":"reset","trials":[...],"canary_seed":x}  the next evaluation of a search -> "reset"
// A [torch] problem has no reference library here: the parent has the bridge's helper run
// the module on an exchange buffer this process shares (fd after the sets'; its offsets in
// "ready"), trial by trial, before the trial is first loaded (bridge/torch_device.hpp):
//   {"cmd":"draw","trial":t}    trial t's inputs into the exchange, its outputs poisoned -> "drawn"
//   {"cmd":"truth","trial":t}   the module's outputs from the exchange kept as t's truth -> "kept"
//   {"cmd":"stage","case":c,"seed":x}  a timing rotation's inputs into the exchange, for
//                               PyTorch eager/compile timed in the helper (no truth) -> "staged"
// The parent stops the candidate's process group around every load and judge, so nothing
// but work already queued on the GPU can change a set meanwhile. Between the snapshot and
// the stop the candidate runs on for a pause (a thread that outlives the call acts then),
// and the judge waits another before it compares the outputs with the snapshot (work queued
// on the GPU lands then): either is deferred work.
#include "worker/roles.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/fd_passing.hpp"
#include "device/share.hpp"
#include "eval/compare.hpp"
#include "eval/device_kernels.hpp"
#include "eval/inputs.hpp"

#include <fmt/format.h>
#include <unistd.h>

#ifdef KFORGE_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <variant>

namespace kforge::worker {

#ifdef KFORGE_WITH_CUDA
namespace {

// After the stop: how long work queued on the GPU has to land before the outputs are compared
// with the snapshot (the parent's pause before the stop is device_judge's deferred_pause).
constexpr int deferred_wait_ms = 20;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) KFORGE_THROW(worker, "judge: {}: {}", what, cudaGetErrorString(e));
}
void kernel_check(int e, const char* what) { cuda_check(static_cast<cudaError_t>(e), what); }

// Device memory of this process, released with it.
struct dev_buffer {
  device::backend* dev = nullptr;
  void* p = nullptr;
  std::size_t bytes = 0;
  dev_buffer() = default;
  dev_buffer(device::backend& d, std::size_t n) : dev(&d), p(d.allocate(std::max<std::size_t>(n, 1))), bytes(n) {}
  dev_buffer(dev_buffer&& o) noexcept { *this = std::move(o); }
  dev_buffer& operator=(dev_buffer&& o) noexcept {
    std::swap(dev, o.dev);
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~dev_buffer() {
    if (dev && p) dev->release(p);
  }
};

struct trial_truth {
  std::vector<dev_buffer> inputs;           // nominal: what the candidate must find unchanged
  std::vector<dev_buffer> reference, oracle; // outputs at the problem's dtype and in double
};

class judge_process {
public:
  // `libs`: the reference and the oracle; none for a [torch] problem (its module runs in the
  // bridge's helper, on the exchange).
  judge_process(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
                std::optional<std::pair<kernel_library, kernel_library>> libs)
      : m_ch(ch), m_p(p), m_dev(dev), m_k(eval::load_device_kernels(job["libraries"]["kernels"].get<std::string>())),
        m_libs(std::move(libs)), m_layout(eval::shared_set_layout(p)), m_stream(static_cast<cudaStream_t>(dev.stream())) {
    if (m_libs) {
      m_rs.emplace(dev, p, eval::precision::nominal, 1);
      m_os.emplace(dev, p, eval::precision::oracle, 2);
    }
    for (auto& tj : job["trials"]) m_trials.push_back(trial_of(tj));
    m_ordinal = job.value("device", 0);
    const int nsets = job.value("sets", 1);
    // What this path holds on the device: the sets, every trial's truth (inputs, reference and
    // oracle outputs) and the candidate's workers' copies of a set's size. Refused up front
    // (the evaluation then takes the host path and says why), never out of memory half-way.
    std::size_t in = 0, out = 0, out64 = 0;
    for (auto b : m_layout.input_bytes) in += b;
    for (auto b : m_layout.output_bytes) out += b;
    for (auto* t : p.outputs()) out64 += static_cast<std::size_t>(t->numel()) * dtype_size(t->oracle_dtype());
    if (!m_libs) m_exchange_layout = exchange_layout();
    const std::size_t need = (nsets + 2) * m_layout.bytes + m_trials.size() * (in + out + out64) +
                             (m_libs ? 0 : m_exchange_layout.value("bytes", std::size_t{0}));
    std::size_t free_b = 0, total_b = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (need > free_b)
      KFORGE_THROW(worker, "the GPU-resident path needs about {:.1f} GiB of device memory, {:.1f} GiB are free",
                   need / 1073741824.0, free_b / 1073741824.0);
    // Verification calls in pairs where memory allows: set 0 and one more set, after the
    // parent's (no timing worker maps it, so a candidate's timing process never sees a
    // verification trial's answer), so one deferred-work pause serves two calls. It costs a
    // set, a second snapshot and a second first-call copy.
    m_verify_sets = {0};
    if (job.value("pair_verification", true) && need + m_layout.bytes + 2 * out <= free_b) m_verify_sets.push_back(nsets);
    for (int s = 0; s < nsets + (m_verify_sets.size() > 1 ? 1 : 0); ++s)
      m_sets.push_back(device::shared_memory::allocate(m_ordinal, m_layout.bytes));
    fresh_guards(job.value("canary_seed", std::uint64_t{1}));
    if (!m_libs) m_exchange = device::shared_memory::allocate(m_ordinal, m_exchange_layout["bytes"]);
    m_partials = dev_buffer(m_dev, sizeof(kf_scan) * std::max<std::uint64_t>(1, m_k.scan_blocks(max_numel())));
    m_diff = dev_buffer(m_dev, 16);
  }

  // The fds of every set (and the exchange's), once, on the share socket; then "ready" with a
  // set's size (what a worker maps) and the exchange's layout.
  void share(int sock) {
    std::vector<int> fds;
    for (auto& s : m_sets) fds.push_back(s.export_fd());
    if (!m_libs) fds.push_back(m_exchange.export_fd());
    send_fds(sock, "sets", fds);
    for (int fd : fds) ::close(fd);
    nlohmann::json ready{{"type", "ready"}, {"set_bytes", m_sets.empty() ? 0 : m_sets[0].size()},
                         {"verify_sets", m_verify_sets}};
    if (!m_libs) {
      ready["exchange"] = m_exchange_layout;
      ready["exchange"]["bytes"] = m_exchange.size();
    }
    m_ch.send(ready);
  }

  void serve(std::istream& commands) {
    for (std::string line; std::getline(commands, line);) {
      const auto cmd = nlohmann::json::parse(line, nullptr, false);
      const std::string what = cmd.is_object() ? cmd.value("cmd", "") : "";
      if (what == "finish") return;
      if (what == "reset") {
        reset(cmd.value("trials", nlohmann::json::array()), cmd.value("canary_seed", std::uint64_t{1}));
        m_ch.send({{"type", "reset"}});
        continue;
      }
      const int s = cmd.value("set", -1);
      if (what != "drop" && what != "draw" && what != "truth" && what != "stage" && (s < 0 || s >= static_cast<int>(m_sets.size())))
        KFORGE_THROW(worker, "judge: no set {} in '{}'", s, line.substr(0, 200));
      if (what == "load") {
        load(s, cmd.value("trial", -1));
        m_ch.send({{"type", "loaded"}, {"set", s}});
      } else if (what == "rotation") {
        rotation(s, cmd.value("case", ""), cmd.value("seed", std::uint64_t{0}));
        m_ch.send({{"type", "loaded"}, {"set", s}});
      } else if (what == "poison") {
        poison(s);
        m_dev.synchronize();
        m_ch.send({{"type", "poisoned"}, {"set", s}});
      } else if (what == "snapshot") {
        snapshot(s);
        m_ch.send({{"type", "snapped"}, {"set", s}});
      } else if (what == "judge") {
        judge(s, cmd.value("trial", -1), cmd.value("run", 0), cmd.value("timed", false), cmd.value("waited", false));
        m_ch.send({{"type", "judged"}, {"set", s}});
      } else if (what == "drop") {
        m_truth.erase(cmd.value("trial", -1));
      } else if (what == "draw" && !m_libs) {
        draw_for_module(cmd.value("trial", -1));
        m_ch.send({{"type", "drawn"}, {"trial", cmd.value("trial", -1)}});
      } else if (what == "truth" && !m_libs) {
        keep_module_truth(cmd.value("trial", -1));
        m_ch.send({{"type", "kept"}, {"trial", cmd.value("trial", -1)}});
      } else if (what == "stage" && !m_libs) {
        stage(cmd.value("case", ""), cmd.value("seed", std::uint64_t{0}));
        m_ch.send({{"type", "staged"}});
      } else {
        KFORGE_THROW(worker, "judge: unknown command '{}'", line.substr(0, 200));
      }
    }
  }

private:
  // Random canaries before and after every tensor of every set, new for each evaluation: a
  // candidate cannot restore a guard it overwrote. Only the guards are held here, never a
  // set's worth of host memory.
  void fresh_guards(std::uint64_t seed) {
    std::mt19937_64 canary(seed);
    m_canaries.clear();
    m_set_trial.assign(m_sets.size(), -1);
    m_first.clear();
    m_first.resize(m_sets.size());
    for (std::size_t s = 0; s < m_sets.size(); ++s) {
      std::vector<std::uint8_t> c(guard_offsets().size() * guard);
      for (auto& b : c) b = static_cast<std::uint8_t>(canary());
      for (std::size_t i = 0; i < guard_offsets().size(); ++i)
        m_dev.upload(set_base(static_cast<int>(s)) + guard_offsets()[i], c.data() + i * guard, guard);
      m_canaries.push_back(std::move(c));
    }
  }

  // The next evaluation of a search (judge_keeper.hpp): its trials, no truth of the last one,
  // fresh canaries, every set poisoned (each load poisons again). The last candidate's workers
  // have ended.
  void reset(const nlohmann::json& trials, std::uint64_t canary_seed) {
    if (trials.size() != m_trials.size())
      KFORGE_THROW(worker, "judge: {} trials, planned for {}", trials.size(), m_trials.size()); // the memory check's count
    m_trials.clear();
    for (auto& tj : trials) m_trials.push_back(trial_of(tj));
    m_truth.clear();
    m_drawn = {};
    m_drawn_trial = -1;
    m_snapped.clear();
    fresh_guards(canary_seed);
    for (int s = 0; s < static_cast<int>(m_sets.size()); ++s) poison(s);
    m_dev.synchronize();
  }

  std::uint64_t max_numel() const {
    std::uint64_t n = 1;
    for (auto* t : m_p.outputs()) n = std::max<std::uint64_t>(n, static_cast<std::uint64_t>(t->numel()));
    return n;
  }
  char* set_base(int s) { return static_cast<char*>(m_sets[s].data()); }
  void* set_input(int s, std::size_t k) { return set_base(s) + m_layout.inputs[k]; }
  void* set_output(int s, std::size_t k) { return set_base(s) + m_layout.outputs[k]; }

  void draw_case(const problem::case_spec& c, std::uint64_t seed, const std::vector<void*>& dst) {
    eval::draw_case(m_k, m_p, c, seed, dst, m_stream);
  }
  // A trial's nominal inputs into dst: its case, or the hidden case's slices (eval::plan_hidden).
  void draw_trial(const trial& t, const std::vector<void*>& dst) {
    for (auto& c : m_p.cases)
      if (c.name == t.case_name) return draw_case(c, t.seed, dst);
    if (t.case_name != eval::hidden_case || m_p.cases.size() < 2)
      KFORGE_THROW(internal, "no input case named '{}'", t.case_name);
    const auto h = eval::plan_hidden(m_p, t.seed);
    draw_case(m_p.cases[0], t.seed, dst);
    std::vector<dev_buffer> donor;
    std::vector<void*> dp;
    for (auto b : m_layout.input_bytes) dp.push_back(donor.emplace_back(m_dev, b).p);
    draw_case(m_p.cases[h.donor_case], h.donor_seed, dp);
    for (std::size_t k = 0; k < dst.size(); ++k) {
      if (h.inputs[k].rows.empty()) continue;
      const std::size_t row = m_layout.input_bytes[k] / h.inputs[k].count;
      for (auto r : h.inputs[k].rows)
        cuda_check(cudaMemcpyAsync(static_cast<char*>(dst[k]) + r * row, static_cast<char*>(dp[k]) + r * row, row,
                                   cudaMemcpyDeviceToDevice, m_stream),
                   "hidden case");
    }
    m_dev.synchronize(); // the donor's buffers go now
  }

  // Trial t's inputs, drawn on the device into buffers of their own (what a candidate must
  // find unchanged).
  trial_truth draw_inputs(int t) {
    if (t < 0 || t >= static_cast<int>(m_trials.size())) KFORGE_THROW(worker, "judge: no trial {}", t);
    trial_truth tt;
    std::vector<void*> nominal;
    for (auto b : m_layout.input_bytes) nominal.push_back(tt.inputs.emplace_back(m_dev, b).p);
    draw_trial(m_trials[t], nominal);
    return tt;
  }

  // Keeps t's truth, once complete, and sends the reference's own error once per case (the
  // first trials are one of each case).
  trial_truth& keep(int t, trial_truth tt) {
    m_dev.synchronize();
    const auto outs = m_p.outputs();
    if (t < static_cast<int>(m_p.cases.size()))
      for (std::size_t k = 0; k < outs.size(); ++k) {
        const auto e = scan_reference(*outs[k], tt, k);
        m_ch.send({{"type", "reference_error"}, {"trial", t}, {"index", k}, {"max_abs", e.max_ec},
                   {"rel_l2", e.o2 > 0 ? std::sqrt(e.ec2 / e.o2) : std::sqrt(e.ec2)}, {"max_abs_oracle", e.max_o}});
      }
    return m_truth.insert_or_assign(t, std::move(tt)).first->second;
  }

  trial_truth& truth_of(int t) {
    if (auto it = m_truth.find(t); it != m_truth.end()) return it->second;
    if (!m_libs) KFORGE_THROW(worker, "judge: trial {} has no truth: the module has not run on it", t);
    auto tt = draw_inputs(t);
    auto& [ref, orc] = *m_libs;
    const auto ins = m_p.inputs();
    // The reference's inputs, and the oracle's: the same values, widened where the tensor
    // follows the real type.
    for (std::size_t k = 0; k < ins.size(); ++k) {
      cuda_check(cudaMemcpyAsync(m_rs->args().inputs[k].data, tt.inputs[k].p, m_layout.input_bytes[k],
                                 cudaMemcpyDeviceToDevice, m_stream),
                 "reference inputs");
      if (ins[k]->oracle_dtype() == ins[k]->dtype)
        cuda_check(cudaMemcpyAsync(m_os->args().inputs[k].data, tt.inputs[k].p, m_layout.input_bytes[k],
                                   cudaMemcpyDeviceToDevice, m_stream),
                   "oracle inputs");
      else
        kernel_check(m_k.widen(ins[k]->dtype, tt.inputs[k].p, static_cast<double*>(m_os->args().inputs[k].data),
                               static_cast<std::uint64_t>(ins[k]->numel()), m_stream),
                     "oracle inputs");
    }
    if (!m_sized) {
      m_rs->set_workspace(workspace_size(ref, *m_rs), 3);
      m_os->set_workspace(workspace_size(orc, *m_os), 4);
      m_sized = true;
    }
    const auto outs = m_p.outputs();
    for (auto [lib, ts, subject, kept] : {std::tuple{&ref, &*m_rs, "reference", &tt.reference},
                                          std::tuple{&orc, &*m_os, "oracle", &tt.oracle}}) {
      ts->poison(0);
      m_dev.synchronize();
      const int rc = lib->forward(&ts->args());
      m_dev.synchronize();
      if (rc != 0)
        KFORGE_THROW(problem, "the {} failed on case '{}': {}", subject, m_trials[t].case_name,
                     returned_message(*lib, rc));
      for (std::size_t k = 0; k < outs.size(); ++k) {
        const auto bytes = static_cast<std::size_t>(outs[k]->numel()) * dtype_size(ts->args().outputs[k].dtype);
        kept->emplace_back(m_dev, bytes);
        cuda_check(cudaMemcpyAsync(kept->back().p, ts->args().outputs[k].data, bytes, cudaMemcpyDeviceToDevice, m_stream),
                   "keeping the truth");
      }
    }
    return keep(t, std::move(tt));
  }

  // The exchange a [torch] problem's module runs on: the inputs, then its outputs at the
  // problem's dtype ("reference") and in float64 ("oracle"), each 256-byte aligned.
  nlohmann::json exchange_layout() const {
    std::size_t at = 0;
    auto place = [&](std::size_t bytes) {
      const std::size_t o = at;
      at += (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
      return o;
    };
    nlohmann::json in = nlohmann::json::array(), ref = nlohmann::json::array(), orc = nlohmann::json::array();
    for (auto b : m_layout.input_bytes) in.push_back(place(b));
    for (auto* t : m_p.outputs()) {
      ref.push_back(place(static_cast<std::size_t>(t->numel()) * dtype_size(t->dtype)));
      orc.push_back(place(static_cast<std::size_t>(t->numel()) * dtype_size(t->oracle_dtype())));
    }
    return {{"inputs", in}, {"reference", ref}, {"oracle", orc}, {"bytes", at}};
  }
  char* exchange_at(const char* part, std::size_t k) {
    return static_cast<char*>(m_exchange.data()) + m_exchange_layout[part][k].get<std::size_t>();
  }

  // [torch]: trial t's inputs into the exchange for the module, its outputs poisoned (a
  // module answer that skips elements reads as NaN, never as a stale answer).
  void draw_for_module(int t) {
    auto tt = draw_inputs(t);
    for (std::size_t k = 0; k < tt.inputs.size(); ++k)
      cuda_check(cudaMemcpyAsync(exchange_at("inputs", k), tt.inputs[k].p, m_layout.input_bytes[k],
                                 cudaMemcpyDeviceToDevice, m_stream),
                 "inputs for the module");
    const auto outs = m_p.outputs();
    for (std::size_t k = 0; k < outs.size(); ++k)
      for (auto [part, dt] : {std::pair{"reference", outs[k]->dtype}, std::pair{"oracle", outs[k]->oracle_dtype()}})
        cuda_check(cudaMemsetAsync(exchange_at(part, k), eval::output_poison,
                                   static_cast<std::size_t>(outs[k]->numel()) * dtype_size(dt), m_stream),
                   "poisoning the module's outputs");
    m_dev.synchronize();
    m_drawn = std::move(tt);
    m_drawn_trial = t;
  }

  // [torch]: a timing rotation's values (as rotation() draws them) into the exchange's inputs,
  // which the helper copies for its eager/compile timing; no trial, no truth.
  void stage(const std::string& case_name, std::uint64_t seed) {
    std::vector<void*> dst;
    for (std::size_t k = 0; k < m_layout.inputs.size(); ++k) dst.push_back(exchange_at("inputs", k));
    draw_trial({case_name, seed, -1}, dst);
    m_dev.synchronize();
  }

  // [torch]: what the module wrote into the exchange, kept as trial t's truth.
  void keep_module_truth(int t) {
    if (m_drawn_trial != t) KFORGE_THROW(worker, "judge: trial {} was not drawn for the module", t);
    auto tt = std::move(m_drawn);
    m_drawn = {};
    m_drawn_trial = -1;
    const auto outs = m_p.outputs();
    for (std::size_t k = 0; k < outs.size(); ++k)
      for (auto [part, dt, kept] : {std::tuple{"reference", outs[k]->dtype, &tt.reference},
                                    std::tuple{"oracle", outs[k]->oracle_dtype(), &tt.oracle}}) {
        const auto bytes = static_cast<std::size_t>(outs[k]->numel()) * dtype_size(dt);
        kept->emplace_back(m_dev, bytes);
        cuda_check(cudaMemcpyAsync(kept->back().p, exchange_at(part, k), bytes, cudaMemcpyDeviceToDevice, m_stream),
                   "keeping the truth");
      }
    keep(t, std::move(tt));
  }

  void poison(int s) {
    for (std::size_t k = 0; k < m_layout.outputs.size(); ++k) {
      cuda_check(cudaMemsetAsync(set_output(s, k), eval::output_poison, m_layout.output_bytes[k], m_stream), "poison");
      // An answer slot nobody wrote reads as unwritten, never as a stale answer.
      cuda_check(cudaMemsetAsync(set_base(s) + m_layout.answers[k], eval::output_poison, m_layout.output_bytes[k],
                                 m_stream),
                 "poison");
    }
  }

  void load(int s, int t) {
    auto& tt = truth_of(t);
    for (std::size_t k = 0; k < tt.inputs.size(); ++k)
      cuda_check(cudaMemcpyAsync(set_input(s, k), tt.inputs[k].p, m_layout.input_bytes[k], cudaMemcpyDeviceToDevice,
                                 m_stream),
                 "loading inputs");
    poison(s);
    m_set_trial[s] = t;
    m_dev.synchronize();
  }

  void rotation(int s, const std::string& case_name, std::uint64_t seed) {
    std::vector<void*> dst;
    for (std::size_t k = 0; k < m_layout.inputs.size(); ++k) dst.push_back(set_input(s, k));
    draw_trial({case_name, seed, -1}, dst);
    poison(s);
    m_set_trial[s] = -1;
    m_dev.synchronize();
  }

  // (count, first) of the elements of width w that differ between a and b (device memory).
  std::pair<std::uint64_t, std::uint64_t> diff(const void* a, const void* b, std::uint64_t n, int w) {
    kernel_check(m_k.diff(a, b, n, w, m_diff.p, m_stream), "comparing");
    std::uint64_t r[2];
    m_dev.synchronize();
    m_dev.download(r, m_diff.p, sizeof r);
    return {r[0], r[1]};
  }
  double value_at(const void* data, kf_dtype dt, std::uint64_t i) {
    std::uint8_t b[8];
    m_dev.download(b, static_cast<const char*>(data) + i * dtype_size(dt), dtype_size(dt));
    return load_as_double(b, dt, 0);
  }

  kf_scan run_scan(const kf_scan_params& prm, const void* cand, const void* oracle, const void* ref, std::uint64_t n) {
    const auto blocks = m_k.scan_blocks(n);
    kernel_check(m_k.scan_output(&prm, cand, oracle, ref, n, static_cast<kf_scan*>(m_partials.p), m_stream), "judging");
    std::vector<kf_scan> parts(blocks);
    m_dev.synchronize();
    if (blocks) m_dev.download(parts.data(), m_partials.p, blocks * sizeof(kf_scan));
    kf_scan all = kf_scan_empty();
    for (auto& x : parts) kf_scan_combine(all, x);
    return all;
  }
  kf_scan scan_reference(const problem::tensor_spec& spec, const trial_truth& tt, std::size_t k) {
    auto prm = eval::scan_params(spec, m_p.tolerance, spec.dtype, spec.oracle_dtype(), spec.dtype);
    prm.real = 1; // the reference's error: every element counts, poison or not
    return run_scan(prm, tt.reference[k].p, tt.oracle[k].p, tt.reference[k].p, static_cast<std::uint64_t>(spec.numel()));
  }

  void judge(int s, int t, int run, bool timed, bool waited) {
    if (m_set_trial[s] != t) KFORGE_THROW(worker, "judge: set {} holds trial {}, not {}", s, m_set_trial[s], t);
    auto& tt = truth_of(t);
    const auto outs = m_p.outputs();
    const auto ins = m_p.inputs();
    const auto snapped = m_snapped.find(s);
    if (snapped == m_snapped.end()) KFORGE_THROW(worker, "judge: set {} has no snapshot", s);
    const auto& snap = m_snaps[snapped->second];
    m_snapped.erase(snapped); // its buffers are free again once this command ends
    // Work still queued on the GPU that changes the answer after the snapshot is deferred work.
    // A batch's later sets were stopped as long as its first (the parent stops the worker once).
    if (!waited) std::this_thread::sleep_for(std::chrono::milliseconds(deferred_wait_ms));
    std::vector<std::string> late;
    for (std::size_t k = 0; k < outs.size(); ++k)
      if (diff(snap[k].p, set_output(s, k), m_layout.output_bytes[k], 1).first) late.push_back(outs[k]->name);
    if (!timed) {
      send_check(m_ch, deferred_work_check(late), t, run);
      send_check(m_ch, guard_check(check_guards(s)), t, run);
      std::vector<std::string> changed;
      for (std::size_t k = 0; k < ins.size(); ++k)
        if (diff(set_input(s, k), tt.inputs[k].p, m_layout.input_bytes[k], 1).first) {
          changed.push_back(ins[k]->name);
          cuda_check(cudaMemcpyAsync(set_input(s, k), tt.inputs[k].p, m_layout.input_bytes[k], cudaMemcpyDeviceToDevice,
                                     m_stream),
                     "restoring inputs"); // the repeat must see identical inputs
        }
      send_check(m_ch, inputs_modified_check(changed), t, run);
    }
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const auto& spec = *outs[k];
      const auto n = static_cast<std::uint64_t>(spec.numel());
      const kf_dtype cd = spec.dtype, od = spec.oracle_dtype();
      const auto sc = run_scan(eval::scan_params(spec, m_p.tolerance, cd, od, cd), snap[k].p, tt.oracle[k].p,
                               tt.reference[k].p, n);
      std::map<std::size_t, eval::element_values> values;
      for (auto i : eval::scan_elements(spec, m_p.tolerance, sc))
        values[i] = {value_at(snap[k].p, cd, i), value_at(tt.oracle[k].p, od, i), value_at(tt.reference[k].p, cd, i)};
      for (auto& c : eval::judge_scan(spec, m_p.tolerance, sc, values)) send_check(m_ch, c, t, run);
      if (timed || !m_p.tolerance.deterministic) continue;
      // The repeat: the second call on the same inputs must match the first bit for bit.
      auto& first = m_first[s];
      if (run == 0) {
        if (first.size() < outs.size()) first.resize(outs.size());
        if (!first[k].p) first[k] = dev_buffer(m_dev, m_layout.output_bytes[k]);
        cuda_check(cudaMemcpyAsync(first[k].p, snap[k].p, m_layout.output_bytes[k], cudaMemcpyDeviceToDevice, m_stream),
                   "keeping the first call");
      } else if (k < first.size() && first[k].p) {
        const int w = static_cast<int>(dtype_size(cd));
        const auto [count, at] = diff(first[k].p, snap[k].p, n, w);
        auto c = count ? eval::repeat_verdict(spec, count, at, value_at(first[k].p, cd, at), value_at(snap[k].p, cd, at))
                       : eval::repeat_verdict(spec, 0, 0, 0, 0);
        send_check(m_ch, c, t, run);
      }
    }
    m_dev.synchronize();
  }

  // The call's answer: what the candidate's worker copied into the answer slots on the call's
  // stream as soon as it returned (in its own context: work it left on another stream of that
  // context could not land first, as it might before a copy of this context's was scheduled).
  void snapshot(int s) {
    auto& slot = m_snapped.try_emplace(s, free_snapshot()).first->second;
    for (std::size_t k = 0; k < m_layout.outputs.size(); ++k)
      cuda_check(cudaMemcpyAsync(m_snaps[slot][k].p, set_base(s) + m_layout.answers[k], m_layout.output_bytes[k],
                                 cudaMemcpyDeviceToDevice, m_stream),
                 "snapshot");
    m_dev.synchronize();
  }
  // Snapshot buffers no set holds now: as many exist as sets were snapped at once (a
  // verification pair: two), not one per set.
  int free_snapshot() {
    for (int i = 0; i < static_cast<int>(m_snaps.size()); ++i)
      if (std::none_of(m_snapped.begin(), m_snapped.end(), [i](auto& e) { return e.second == i; })) return i;
    auto& fresh = m_snaps.emplace_back();
    for (auto b : m_layout.output_bytes) fresh.emplace_back(m_dev, b);
    return static_cast<int>(m_snaps.size()) - 1;
  }

  static constexpr std::size_t guard = eval::guarded_buffer::guard_bytes;
  // Where each guard starts: before and after every input, then every output (the layout's order).
  const std::vector<std::size_t>& guard_offsets() {
    if (m_guards.empty()) {
      for (std::size_t k = 0; k < m_layout.inputs.size(); ++k)
        m_guards.insert(m_guards.end(), {m_layout.inputs[k] - guard, m_layout.inputs[k] + m_layout.input_bytes[k]});
      for (std::size_t k = 0; k < m_layout.outputs.size(); ++k)
        m_guards.insert(m_guards.end(), {m_layout.outputs[k] - guard, m_layout.outputs[k] + m_layout.output_bytes[k]});
    }
    return m_guards;
  }

  std::vector<std::string> check_guards(int s) {
    std::vector<std::string> bad;
    std::vector<std::uint8_t> got(guard);
    const auto ins = m_p.inputs();
    const auto outs = m_p.outputs();
    const auto& at = guard_offsets();
    for (std::size_t i = 0; i < at.size(); i += 2) {
      const std::size_t k = i / 2;
      const std::string what =
          k < ins.size() ? fmt::format("input '{}'", ins[k]->name) : fmt::format("output '{}'", outs[k - ins.size()]->name);
      const std::uint8_t* want = m_canaries[s].data() + i * guard;
      m_dev.download(got.data(), set_base(s) + at[i], guard);
      bool found = false;
      for (std::size_t j = guard; j-- > 0 && !found;) // nearest the data first
        if (got[j] != want[j]) {
          bad.push_back(fmt::format("{}: write {} bytes before the start", what, guard - j));
          found = true;
        }
      if (found) continue;
      m_dev.download(got.data(), set_base(s) + at[i + 1], guard);
      for (std::size_t j = 0; j < guard; ++j)
        if (got[j] != want[guard + j]) {
          bad.push_back(fmt::format("{}: write {} bytes after the end", what, j + 1));
          break;
        }
    }
    return bad;
  }

  channel_writer& m_ch;
  const problem::problem& m_p;
  device::backend& m_dev;
  eval::device_kernels m_k;
  std::optional<std::pair<kernel_library, kernel_library>> m_libs; // reference, oracle; none for [torch]
  std::optional<eval::tensor_set> m_rs, m_os;                       // their buffers
  device::shared_memory m_exchange;                                 // [torch]: the module's inputs and outputs
  nlohmann::json m_exchange_layout;
  trial_truth m_drawn;                                              // [torch]: the trial drawn for the module,
  int m_drawn_trial = -1;                                           // and its number
  eval::set_layout m_layout;
  cudaStream_t m_stream;
  int m_ordinal = 0;
  std::map<int, int> m_snapped; // set -> its snapshot in m_snaps, until judged
  std::vector<int> m_verify_sets; // the sets verification calls alternate between (ready says)
  bool m_sized = false;
  std::vector<trial> m_trials;
  std::vector<device::shared_memory> m_sets;
  std::vector<std::vector<std::uint8_t>> m_canaries;
  std::vector<int> m_set_trial;
  std::vector<std::vector<dev_buffer>> m_first; // per set: the first call's outputs, for the repeat
  std::vector<std::vector<dev_buffer>> m_snaps; // per snapshot: one buffer per output
  std::vector<std::size_t> m_guards; // guard_offsets()
  dev_buffer m_partials, m_diff;
  std::map<int, trial_truth> m_truth;
};

} // namespace
#endif

int run_judge(channel_writer& ch, const problem::problem& p, const nlohmann::json& job, device::backend& dev,
              std::istream& commands) {
#ifdef KFORGE_WITH_CUDA
  std::optional<std::pair<kernel_library, kernel_library>> libs;
  if (!p.torch) {
    libs = load_reference_and_oracle(ch, job, p, dev);
    if (!libs) return 0;
  }
  judge_process j(ch, p, job, dev, std::move(libs));
  j.share(share_fd);
  ::close(share_fd);
  j.serve(commands);
  return 0;
#else
  (void)p, (void)job, (void)dev, (void)commands;
  ch.send({{"type", "error"}, {"reason", "worker_error"}, {"message", "the judge needs a kforge built with CUDA"}});
  return 0;
#endif
}

} // namespace kforge::worker
