#pragma once
// The worker side of an evaluation: the process that loads kernels and calls them.
// It reads one job (JSON) on stdin, reports on the result channel (protocol.hpp) and
// exits. Roles (one file each, roles.hpp):
//   "oracle"    load the reference at nominal precision and in double; for each trial
//               draw the inputs, run both, send both outputs. Never loads a candidate.
//   "verify"    load the candidate; for each trial: poison, call, check guards and
//               inputs, send the outputs; then the same again on identical inputs.
//   "time"      load candidate and reference; time them interleaved on rotating inputs.
//   "profile"   one candidate call in the profiler's range; "calibrate" the device's ceilings.
// Judging happens in the parent, which never runs candidate code.
namespace kforge::worker {

/// Entry point of the kforge-worker executable. @return the process exit code.
int worker_process_main();

} // namespace kforge::worker
