// compute-sanitizer's reports parsed from canned text (this machine cannot run kernels),
// and the wrapper plumbing run end to end with a stand-in sanitizer on a CPU problem.
// To add a report format: paste a sample below (written in the tool's layout) and assert
// what a user must see from it.
#include "problem/problem.hpp"
#include "test_util.hpp"
#include "worker/sanitize.hpp"
#include "build/compiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sys/stat.h>

using namespace kforge;

namespace {

const char* k_memcheck = R"(========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at 0x1a0 in void softmax_oob<256>(const float *, float *, int)
=========     by thread (255,0,0) in block (63,0,0)
=========     Address 0x7f3e12000400 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3e11f00000 of size 1048576 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x2dfbef]
=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1
=========
========= Invalid __global__ read of size 4 bytes
=========     at 0x1a0 in void softmax_oob<256>(const float *, float *, int)
=========     by thread (255,0,0) in block (62,0,0)
=========     Address 0x7f3e12000800 is out of bounds
=========
candidate output that is not the sanitizer's
========= ERROR SUMMARY: 2 errors
)";

const char* k_racecheck = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at racy_sum(const float *, float *, int)+0x2f0 in /tmp/racy.cu:14
=========     and Read access at racy_sum(const float *, float *, int)+0x340 in /tmp/racy.cu:17 [248 hazards]
=========
========= Warning: Race reported between Read access at helper(float *)+0x10 in /tmp/racy.cu:30
=========     and Write access at helper(float *)+0x20 in /tmp/racy.cu:31 [2 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
)";

const char* k_initcheck = R"(========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at 0x90 in reads_workspace(float *, const float *)
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f1000000000
=========
========= Host API memory access error at host access to 0x7f1000000000 of size 64 bytes
=========     Uninitialized access at 0x7f1000000020 on access by cudaMemcpy source
=========     Saved host backtrace up to driver entry point at error
=========
========= ERROR SUMMARY: 2 errors
)";

const char* k_synccheck = R"(========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block
=========     at 0x3b0 in divergent_sync(float *)
=========     by thread (32,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
)";

const char* k_clean = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n";

worker::worker_outcome done() { return {.end = worker::worker_end::done, .detail = "done"}; }

} // namespace

TEST(sanitize_parse, memcheck_invalid_read_is_one_finding_counted_twice) {
  auto r = worker::parse_sanitizer_output("memcheck", k_memcheck);
  ASSERT_TRUE(r.error_count.has_value());
  EXPECT_EQ(*r.error_count, 2);
  ASSERT_EQ(r.findings.size(), 1u);
  const auto& f = r.findings[0];
  EXPECT_EQ(f.kind, "Invalid __global__ read of size 4 bytes");
  EXPECT_EQ(f.kernel, "softmax_oob<256>(const float *, float *, int)");
  EXPECT_EQ(f.thread, "thread (255,0,0) in block (63,0,0)");
  EXPECT_NE(f.address.find("out of bounds"), std::string::npos);
  EXPECT_EQ(f.count, 2);
}

TEST(sanitize_parse, racecheck_counts_errors_not_warnings) {
  auto r = worker::parse_sanitizer_output("racecheck", k_racecheck);
  ASSERT_TRUE(r.error_count.has_value());
  EXPECT_EQ(*r.error_count, 1);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].kind, "Race reported between Write access and Read access");
  EXPECT_EQ(r.findings[0].severity, "error");
  EXPECT_EQ(r.findings[0].kernel, "racy_sum(const float *, float *, int)");
  EXPECT_EQ(r.findings[0].location, "/tmp/racy.cu:14");
  EXPECT_EQ(r.findings[1].severity, "warning");
  auto c = worker::sanitize_check("racecheck", done(), k_racecheck);
  EXPECT_EQ(c.name, "sanitize_racecheck");
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.message, "1 error: Race reported between Write access and Read access in racy_sum(const float *, "
                       "float *, int) at /tmp/racy.cu:14");
}

TEST(sanitize_parse, initcheck_device_and_host_reads) {
  auto r = worker::parse_sanitizer_output("initcheck", k_initcheck);
  EXPECT_EQ(r.error_count, 2);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].kind, "Uninitialized __global__ memory read of size 4 bytes");
  EXPECT_EQ(r.findings[0].kernel, "reads_workspace(float *, const float *)");
  EXPECT_EQ(r.findings[1].kind, "Host API memory access error at host access to 0x7f1000000000 of size 64 bytes");
  EXPECT_NE(r.findings[1].address.find("cudaMemcpy"), std::string::npos);
}

TEST(sanitize_parse, synccheck_divergent_barrier) {
  auto c = worker::sanitize_check("synccheck", done(), k_synccheck);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.detail["error_count"], 1);
  EXPECT_EQ(c.detail["findings"][0]["kernel"], "divergent_sync(float *)");
  EXPECT_NE(c.message.find("Barrier error detected"), std::string::npos);
}

TEST(sanitize_parse, clean_run_passes_and_a_missing_summary_does_not) {
  auto c = worker::sanitize_check("memcheck", done(), k_clean);
  EXPECT_TRUE(c.passed) << c.message;
  EXPECT_EQ(c.detail["error_count"], 0);
  EXPECT_TRUE(c.detail["findings"].empty());
  // No report at all (the sanitizer never ran, or its log was lost): not clean.
  auto none = worker::sanitize_check("memcheck", done(), "");
  EXPECT_FALSE(none.passed);
  EXPECT_NE(none.message.find("no ERROR SUMMARY"), std::string::npos);
  // A clean summary from a worker that crashed under the tool is not clean either.
  auto crashed = worker::sanitize_check("memcheck", {.end = worker::worker_end::crashed, .detail = "SIGSEGV"}, k_clean);
  EXPECT_FALSE(crashed.passed);
}

TEST(sanitize_command, names_tool_log_and_limits_before_the_worker) {
  auto argv = worker::sanitizer_command("/cuda/bin/compute-sanitizer", "racecheck", "/tmp/x/racecheck.log");
  ASSERT_GE(argv.size(), 5u);
  EXPECT_EQ(argv[0], "/cuda/bin/compute-sanitizer");
  auto has = [&](const std::string& k, const std::string& v) {
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == k && argv[i + 1] == v) return true;
    return false;
  };
  EXPECT_TRUE(has("--tool", "racecheck"));
  EXPECT_TRUE(has("--log-file", "/tmp/x/racecheck.log"));
  EXPECT_TRUE(has("--print-limit", "20"));
  EXPECT_FALSE(has("--padding", "4096"));
  auto mem = worker::sanitizer_command("/cuda/bin/compute-sanitizer", "memcheck", "/tmp/x/memcheck.log");
  EXPECT_NE(std::find(mem.begin(), mem.end(), "--padding"), mem.end()); // reads just past a buffer are faults
}

TEST(sanitize_command, environment_variable_names_the_sanitizer) {
  ::setenv("KFORGE_COMPUTE_SANITIZER", "/opt/x/compute-sanitizer", 1);
  EXPECT_EQ(worker::find_compute_sanitizer(), "/opt/x/compute-sanitizer");
  ::unsetenv("KFORGE_COMPUTE_SANITIZER");
}

TEST(sanitize_run, a_cpu_problem_is_skipped_with_a_reason) {
  auto p = problem::load(test::problems_dir() / "softmax");
  auto s = worker::sanitize(p, *p.seed, {});
  EXPECT_NE(s.skipped.find("compute-sanitizer is for CUDA problems"), std::string::npos) << s.skipped;
  EXPECT_TRUE(s.checks.empty());
  EXPECT_TRUE(s.passed());
}

// The plumbing end to end: a stand-in sanitizer takes the real worker's place in front of
// it, keeps a copy of the job, runs the worker, and writes a canned report per tool.
TEST(sanitize_run, stand_in_sanitizer_wraps_the_worker_and_its_report_becomes_checks) {
  test::cache_env cache;
  test::temp_dir d;
  auto p = problem::load(test::problems_dir() / "softmax");
  p.sanitize.shapes = {{"x", {8, 64}}, {"y", {8, 64}}};
  std::vector<std::string> ins{"x"}, outs{"y"};
  auto lib = build::compile({.source = *p.seed, .real = p.dtype, .role = "candidate", .input_names = ins,
                             .output_names = outs},
                            build::problem_backend::cpu);
  ASSERT_TRUE(lib.ok) << lib.diagnostics;

  // Runs confined like the real tool (the tool profile), so it may write only its log: the
  // job it passed on goes there too, on a line of its own after the summary.
  const auto fake = d / "compute-sanitizer";
  test::write(fake, "#!/bin/sh\n"
                    "while [ $# -gt 1 ]; do case \"$1\" in\n"
                    "  --tool) tool=$2; shift 2;; --log-file) log=$2; shift 2;; --*) shift 2;; *) break;; esac; done\n"
                    "IFS= read -r job\n" // byte by byte from a pipe: what follows stays for the worker
                    "{ printf '%s\\n' \"$job\"; cat; } | \"$@\"; rc=$?\n"
                    "if [ \"$tool\" = memcheck ]; then\n"
                    "  printf '========= Invalid __global__ write of size 4 bytes\\n=========     at 0x10 in k(float *)\\n"
                    "========= ERROR SUMMARY: 1 error\\n' > \"$log\"\n"
                    "else printf '========= ERROR SUMMARY: 0 errors\\n' > \"$log\"; fi\n"
                    "printf 'JOB %s\\n' \"$job\" >> \"$log\"\n"
                    "exit $rc\n");
  ::chmod(fake.c_str(), 0755);

  worker::sanitize_options o;
  o.worker_exe = test::worker_binary();
  o.sanitizer = fake;
  o.tools = {"memcheck", "initcheck"};
  o.timeout_s = 60;
  std::vector<std::string> seen;
  o.on_check = [&](const eval::check_result& c) { seen.push_back(c.name); };
  auto s = worker::sanitize_library(p, lib.library, o);
  ASSERT_EQ(s.checks.size(), 2u);
  EXPECT_EQ(seen, (std::vector<std::string>{"sanitize_memcheck", "sanitize_initcheck"}));
  EXPECT_FALSE(s.checks[0].passed);
  EXPECT_EQ(s.checks[0].message, "1 error: Invalid __global__ write of size 4 bytes in k(float *)");
  EXPECT_TRUE(s.checks[1].passed) << s.checks[1].message;
  EXPECT_EQ(s.checks[1].detail["worker"], "done") << s.checks[1].detail.dump();
  EXPECT_FALSE(s.passed());

  // The job that reached the worker: the reduced shapes, unguarded buffers, one trial.
  const auto report = s.checks[1].detail["report"].get<std::string>();
  const auto at = report.find("JOB ");
  ASSERT_NE(at, std::string::npos) << report;
  auto job = nlohmann::json::parse(report.substr(at + 4, report.find('\n', at) - at - 4));
  EXPECT_EQ(s.confinement.value("unconfined", ""), "") << "the stand-in runs confined, as the real tool does";
  EXPECT_EQ(job["role"], "verify");
  EXPECT_EQ(job["shapes"]["x"], (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(job["guards"], false);
  EXPECT_EQ(job["trials"].size(), 1u);
}
