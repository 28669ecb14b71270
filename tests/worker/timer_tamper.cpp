// Timer tampering by symbol interposition: a candidate that exports the clock functions
// the timer calls must not reach the timer. The worker's clock comes from libc (and the
// CUDA runtime, events included, is linked in statically); a candidate is loaded later,
// RTLD_LOCAL, so its clock_gettime is only its own. Were it otherwise (a candidate
// preloaded, or timing moved into code the candidate links against), a frozen clock would
// report every call as instant.
#include "build/compiler.hpp"
#include "test_util.hpp"
#include "worker/evaluate.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

using namespace kforge;

TEST(timer_tamper, a_candidate_exporting_clock_gettime_cannot_freeze_the_timer) {
  test::cache_env env;
  test::temp_dir d;
  const auto p = problem::load(test::problems_dir() / "softmax");
  // The reference's own softmax, plus clock functions that always say "time zero".
  test::write(d / "frozen_clock.cpp", "#include <time.h>\n#include <sys/time.h>\n"
                                      "extern \"C\" __attribute__((visibility(\"default\"))) int clock_gettime(clockid_t, struct timespec* t) {\n"
                                      "  t->tv_sec = 0; t->tv_nsec = 0; return 0; }\n"
                                      "extern \"C\" __attribute__((visibility(\"default\"))) int gettimeofday(struct timeval* t, void*) {\n"
                                      "  t->tv_sec = 0; t->tv_usec = 0; return 0; }\n"
                                      "#include \"reference_copy.h\"\n");
  // A copy beside it: a candidate's compiler reads only its own folder's headers (confinement).
  test::write(d / "reference_copy.h", read_file(p.reference));
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time_budget_s = 0.3;
  const auto ev = worker::evaluate(p, d / "frozen_clock.cpp", o);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_NE(ev.timing("candidate"), nullptr);
  // A frozen clock would make the median 0; the reference's own code takes real time.
  EXPECT_GT(ev.timing("candidate")->median_s, 0.1 * ev.timing("reference")->median_s);
}

// Reference tampering: a candidate that finds the reference's kf_forward among the objects
// loaded in its process (dl_iterate_phdr, then dlsym) and patches its first bytes into a
// jump to a 200 ms sleep. When the reference was timed in the candidate's worker, this made
// the reference 6x slower and the candidate "6x faster". The reference and baselines are
// now timed in a worker of their own that never loads candidate code, so there is nothing
// to patch: the candidate (the reference's own code) times like the reference.
#if defined(__x86_64__)
namespace {

const char* patching_candidate = R"(
#include <kforge/kernel.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdint>
#include <cstring>
#include <ctime>

namespace {
int slow_forward(const kf_args*) {
  timespec t{0, 200000000};
  nanosleep(&t, nullptr);
  return 0;
}
// movabs rax, slow_forward; jmp rax
void patch(void* f) {
  unsigned char code[12] = {0x48, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0};
  const auto target = reinterpret_cast<std::uintptr_t>(&slow_forward);
  std::memcpy(code + 2, &target, 8);
  if (std::memcmp(f, code, sizeof code) == 0) return;
  const long page = sysconf(_SC_PAGESIZE);
  auto* start = reinterpret_cast<unsigned char*>(reinterpret_cast<std::uintptr_t>(f) & ~(page - 1));
  if (mprotect(start, 2 * page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return;
  std::memcpy(f, code, sizeof code);
}
int visit(dl_phdr_info* info, size_t, void* self) {
  if (!info->dlpi_name || !*info->dlpi_name) return 0;
  void* h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return 0;
  void* f = dlsym(h, "kf_forward");
  if (f && f != self) patch(f);
  return 0;
}
} // namespace

#define kf_forward reference_forward
#include REFERENCE
#undef kf_forward

KF_EXPORT int kf_forward(const kf_args* a) {
  dl_iterate_phdr(visit, reinterpret_cast<void*>(&kf_forward));
  return reference_forward(a);
}
)";

// The candidate, with the reference it includes named.
std::filesystem::path write_patcher(const test::temp_dir& d, const problem::problem& p) {
  const auto f = d / "patch_reference.cpp";
  // The reference as a header beside it: a candidate's compiler reads only its own folder's headers.
  test::write(d / "reference_copy.h", read_file(p.reference));
  test::write(f, std::string("#define REFERENCE \"reference_copy.h\"\n") + patching_candidate);
  return f;
}

std::vector<std::string> names_of(const problem::problem& p, bool inputs) {
  std::vector<std::string> out;
  for (auto* t : inputs ? p.inputs() : p.outputs()) out.push_back(t->name);
  return out;
}

} // namespace

TEST(timer_tamper, the_patching_candidate_does_patch_a_reference_loaded_beside_it) {
  // The attack is real: with the reference loaded in the same process (as the timing worker
  // used to), one call of the candidate turns the reference's kf_forward into the sleep.
  test::cache_env env;
  test::temp_dir d;
  const auto p = problem::load(test::problems_dir() / "softmax");
  auto build = [&](const std::filesystem::path& src, const std::string& role) {
    return build::compile({.source = src, .real = p.dtype, .role = role, .input_names = names_of(p, true),
                           .output_names = names_of(p, false)},
                          build::problem_backend::cpu);
  };
  const auto ref = build(p.reference, "reference"), cand = build(write_patcher(d, p), "candidate");
  ASSERT_TRUE(ref.ok) << ref.diagnostics;
  ASSERT_TRUE(cand.ok) << cand.diagnostics;
  void* rh = ::dlopen(ref.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* ch = ::dlopen(cand.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(rh && ch) << ::dlerror();
  using forward_fn = int (*)(const kf_args*);
  auto ref_forward = reinterpret_cast<forward_fn>(::dlsym(rh, "kf_forward"));
  auto cand_forward = reinterpret_cast<forward_fn>(::dlsym(ch, "kf_forward"));
  ASSERT_TRUE(ref_forward && cand_forward);
  const kf_args no_tensors{}; // the reference refuses these at once (returns 1) unless patched
  ASSERT_EQ(ref_forward(&no_tensors), 1);
  (void)cand_forward(&no_tensors);
  EXPECT_EQ(ref_forward(&no_tensors), 0) << "the candidate did not patch the reference loaded beside it";
}

TEST(timer_tamper, a_candidate_cannot_patch_the_reference_it_is_timed_against) {
  test::cache_env env;
  test::temp_dir d;
  const auto p = problem::load(test::problems_dir() / "softmax");
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.trials_per_case = 1;
  o.time_budget_s = 0.3;
  const auto ev = worker::evaluate(p, write_patcher(d, p), o);
  ASSERT_EQ(ev.status, "passed") << ev.message;
  ASSERT_TRUE(ev.speedup().has_value());
  // Patched, every reference sample would take 200 ms and the speedup be in the tens or
  // hundreds; the candidate is the reference's own code, so about 1.
  EXPECT_LT(*ev.speedup(), 3.0) << "reference median " << ev.timing("reference")->median_s << " s, candidate "
                                << ev.timing("candidate")->median_s << " s";
  EXPECT_LT(ev.timing("reference")->median_s, 0.2);
}
#endif
