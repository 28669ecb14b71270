// The sandbox's resource limits end a candidate with a named status, resource_limit, and a
// message that says which limit: a worker killed by SIGXCPU (CPU time) or SIGXFSZ (file
// size), or a candidate call that threw std::bad_alloc (memory) or std::system_error with
// errc::resource_unavailable_try_again (processes/threads). Each candidate below hits one,
// on the CPU gelu problem; the signal ones set the limit themselves (the sandbox sets it in
// a real run), so the test holds with or without confinement.
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

// A correct gelu, with `before` run at the start of every call and `extra` at file scope.
std::filesystem::path gelu(const test::temp_dir& d, const std::string& name, const std::string& extra,
                           const std::string& before) {
  const auto f = d / (name + ".cpp");
  test::write(f, "#include <kforge/kernel.h>\n#include <cmath>\n#include <cstdint>\n#include <new>\n"
                 "#include <system_error>\n#include <sys/resource.h>\n#include <fcntl.h>\n#include <unistd.h>\n"
                 "#include <cstdlib>\n" +
                     extra +
                     "\nKF_EXPORT int kf_forward(const kf_args* a) {\n" + before +
                     "\n  const kf_tensor& xt = a->inputs[0];\n  int64_t n = 1;\n"
                     "  for (int d = 0; d < xt.ndim; ++d) n *= xt.shape[d];\n"
                     "  const float* x = static_cast<const float*>(xt.data);\n"
                     "  float* y = static_cast<float*>(a->outputs[0].data);\n"
                     "  for (int64_t i = 0; i < n; ++i) { const float v = x[i];\n"
                     "    y[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))); }\n"
                     "  return 0;\n}\n");
  return f;
}

worker::evaluation run(const std::filesystem::path& candidate, bool time = false) {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time = time;
  o.time_budget_s = 0.3;
  o.timeout_s = 20;
  return worker::evaluate(problem::load(test::problems_dir() / "gelu"), candidate, o);
}

void expect_resource_limit(const worker::evaluation& ev, const std::string& which) {
  EXPECT_EQ(ev.status, "resource_limit") << ev.message;
  EXPECT_NE(ev.message.find(which), std::string::npos) << ev.message;
}

} // namespace

TEST(resource_limits, an_allocation_that_fails_is_the_memory_limit) {
  test::cache_env env;
  test::temp_dir d;
  // ::operator new directly: a new-expression whose result is unused may be elided.
  expect_resource_limit(run(gelu(d, "alloc", "", "  ::operator delete(::operator new(std::size_t{1} << 62));")),
                        "memory limit");
}

TEST(resource_limits, a_thread_that_cannot_be_created_is_the_process_limit) {
  test::cache_env env;
  test::temp_dir d;
  // What std::thread throws when clone() fails with EAGAIN (RLIMIT_NPROC, a pids cgroup).
  expect_resource_limit(
      run(gelu(d, "threads", "",
               "  throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), \"thread\");")),
      "process/thread limit");
}

TEST(resource_limits, a_workspace_query_that_cannot_allocate_is_the_memory_limit) {
  test::cache_env env;
  test::temp_dir d;
  expect_resource_limit(
      run(gelu(d, "workspace",
               "KF_EXPORT size_t kf_workspace_bytes(const kf_args*) {\n"
               "  ::operator delete(::operator new(std::size_t{1} << 62));\n  return 0;\n}\n",
               "")),
      "memory limit");
}

TEST(resource_limits, cpu_time_past_the_limit_is_named) {
  test::cache_env env;
  test::temp_dir d;
  // One more second of CPU than already used, then spin: the kernel sends SIGXCPU.
  const auto ev = run(gelu(d, "cpu", "",
                           "  rusage u{};  getrusage(RUSAGE_SELF, &u);\n"
                           "  rlimit l{};  getrlimit(RLIMIT_CPU, &l);\n"
                           "  l.rlim_cur = u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1;  setrlimit(RLIMIT_CPU, &l);\n"
                           "  for (volatile unsigned long i = 0;; i = i + 1) {}"));
  expect_resource_limit(ev, "CPU time limit");
}

TEST(resource_limits, a_file_past_the_size_limit_is_named) {
  test::cache_env env;
  test::temp_dir d;
  const auto ev = run(gelu(d, "fsize", "",
                           "  rlimit l{};  getrlimit(RLIMIT_FSIZE, &l);  l.rlim_cur = 1;  setrlimit(RLIMIT_FSIZE, &l);\n"
                           "  const char* tmp = std::getenv(\"TMPDIR\");\n"
                           "  char path[4096];  snprintf(path, sizeof path, \"%s/kforge-fsize-XXXXXX\", tmp && *tmp ? tmp : \"/tmp\");\n"
                           "  int fd = mkstemp(path);  unlink(path);\n"
                           "  if (fd >= 0) { (void)!write(fd, \"ab\", 2); (void)!write(fd, \"cd\", 2); }"));
  expect_resource_limit(ev, "file size limit");
}

TEST(resource_limits, an_allocation_that_fails_while_timed_is_named_too) {
  test::cache_env env;
  test::temp_dir d;
  // Verification makes two calls per trial (four trials: three cases and the hidden one);
  // every later call, all of them timed, fails to allocate.
  const auto ev = run(gelu(d, "alloc_timed", "static int calls = 0;",
                           "  if (++calls > 8) ::operator delete(::operator new(std::size_t{1} << 62));"),
                      true);
  expect_resource_limit(ev, "memory limit");
  EXPECT_NE(ev.message.find("during timing"), std::string::npos) << ev.message;
}
