#pragma once
// What the stages of worker::evaluate() share (plan, build_roles, truth, judge,
// candidate_run, timing): where the workers run, and how checks and outputs travel.
#include "eval/buffers.hpp"
#include "eval/result.hpp"
#include "problem/problem.hpp"
#include "worker/evaluate.hpp"
#include "worker/protocol.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>

namespace kforge::worker {

/// The workers of one evaluation: which executable, on which device, under which watchdog.
struct worker_context {
  const problem::problem& p;
  std::filesystem::path exe; // kforge-worker
  int device = 0;            // the leased device's ordinal
  double timeout_s = 60;     // the per-step watchdog of verification
};

/// One output of one call: (trial, run, output index).
using output_key = std::tuple<int, int, std::size_t>;

/// Receives each check as it is made: to the caller's observer, then into the evaluation.
using check_sink = std::function<void(eval::check_result)>;

/// Where an evaluation's time goes, step by step: each entry is [name, start, seconds], the
/// start counted from the evaluation's. Kept in the evaluation's phases as "steps".
struct timeline {
  using clock = std::chrono::steady_clock;
  clock::time_point origin = clock::now();
  nlohmann::json* out = nullptr; // the array entries go to
  void add(const std::string& name, clock::time_point since) const { add(name, since, clock::now()); }
  void add(const std::string& name, clock::time_point since, clock::time_point until) const {
    if (!out) return;
    auto ms = [](auto d) { return std::round(std::chrono::duration<double>(d).count() * 1e4) / 1e4; };
    out->push_back(nlohmann::json::array({name, ms(since - origin), ms(until - since)}));
  }
};

/// Records into the evaluation as things are found, telling the caller's observer first
/// (so it can store each before the next arrives).
struct recorder {
  evaluation& ev;
  const evaluate_observer& observer;
  timeline steps{timeline::clock::now(), &(ev.phases["steps"] = nlohmann::json::array())};
  void check(eval::check_result c) {
    if (observer.on_check) observer.on_check(c);
    ev.checks.push_back(std::move(c));
  }
  void timing(eval::timing_summary s) {
    if (observer.on_timing) observer.on_timing(s);
    ev.timings.push_back(std::move(s));
  }
  [[nodiscard]] check_sink checks() {
    return [this](eval::check_result c) { check(std::move(c)); };
  }
};

/// A "check" frame (a worker's or the judge's) as the check it reports, its case named from
/// the evaluation's trials.
[[nodiscard]] eval::check_result check_of(const nlohmann::json& header, const nlohmann::json& trials);

/// An "output" frame's tensor. Takes the payload: tensors of gigabytes are moved, never copied.
[[nodiscard]] eval::host_tensor tensor_of(message& m);

} // namespace kforge::worker
