// The build cache is trusted by content, and cleans up after killed builders.
#include "build/build_cache.hpp"
#include "build/compiler.hpp"
#include "core/fs.hpp"
#include "core/hash.hpp"
#include "core/process_owner.hpp"
#include "core/subprocess.hpp"
#include "test_util.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

using namespace kforge;
namespace fs = std::filesystem;

namespace {

const char* kernel = R"(#include <kforge/kernel.h>
KF_EXPORT int kf_forward(const kf_args* a) { (void)a; return 7; }
)";

/// Loads `so` and calls kf_forward(nullptr). @return what it returned, or -1 when it does not load.
int call_forward(const fs::path& so) {
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  auto* f = reinterpret_cast<int (*)(const kf_args*)>(::dlsym(h, "kf_forward"));
  const int rc = f ? f(nullptr) : -1;
  ::dlclose(h);
  return rc;
}

/// The owner line of a process that has ended (a child that was killed and reaped).
std::string dead_owner() {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t child = ::fork();
  if (child == 0) {
    const auto line = to_string(current_process_owner()) + "\n";
    (void)!::write(fds[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string line;
  char c;
  while (::read(fds[0], &c, 1) == 1) line += c;
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  return line;
}

fs::path make_tmp(const std::string& name, const std::string& owner) {
  const auto d = build::cache_dir() / name;
  fs::create_directories(d);
  test::write(d / "kernel.so", "half a build");
  if (!owner.empty()) test::write(d / "owner", owner);
  return d;
}

} // namespace

TEST(build_cache, the_artifact_sha256_is_recorded_and_served_with_it) {
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cpp", kernel);
  auto a = build::compile_host({.source = d / "k.cpp"});
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_EQ(a.sha256, sha256_file(a.library));
  EXPECT_TRUE(a.cache_note.empty());
  const auto recorded = read_file(a.library.parent_path() / "sha256");
  EXPECT_EQ(recorded.substr(0, 64), a.sha256);
  auto b = build::compile_host({.source = d / "k.cpp"});
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.sha256, a.sha256);
  EXPECT_TRUE(b.cache_note.empty());
}

TEST(build_cache, an_overwritten_artifact_is_rebuilt_not_loaded_and_the_build_says_why) {
  // The attack: a candidate replaces the cached reference (or oracle) library with its
  // own, so that later evaluations compare against whatever it chose.
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cpp", kernel);
  test::write(d / "evil.cpp", R"(#include <kforge/kernel.h>
KF_EXPORT int kf_forward(const kf_args* a) { (void)a; return 666; }
)");
  auto good = build::compile_host({.source = d / "k.cpp"});
  auto evil = build::compile_host({.source = d / "evil.cpp"});
  ASSERT_TRUE(good.ok && evil.ok);
  ASSERT_EQ(call_forward(evil.library), 666);
  fs::copy_file(evil.library, good.library, fs::copy_options::overwrite_existing); // a loadable impostor

  auto again = build::compile_host({.source = d / "k.cpp"});
  ASSERT_TRUE(again.ok) << again.diagnostics;
  EXPECT_FALSE(again.cached);
  EXPECT_NE(again.cache_note.find("cached kernel.so did not match its recorded sha256 (the cache was modified)"),
            std::string::npos)
      << again.cache_note;
  EXPECT_NE(again.cache_note.find("rebuilt"), std::string::npos);
  EXPECT_EQ(again.sha256, sha256_file(again.library));
  EXPECT_NE(again.sha256, evil.sha256);
  EXPECT_EQ(call_forward(again.library), 7); // the real kernel, not the impostor

  // Once rebuilt, it is served from the cache again with no note.
  auto served = build::compile_host({.source = d / "k.cpp"});
  EXPECT_TRUE(served.cached);
  EXPECT_TRUE(served.cache_note.empty());
}

TEST(build_cache, an_entry_with_no_recorded_sha256_is_not_trusted) {
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cpp", kernel);
  auto a = build::compile_host({.source = d / "k.cpp"});
  ASSERT_TRUE(a.ok);
  fs::remove(a.library.parent_path() / "sha256"); // as an older kforge left it, or a candidate
  auto b = build::compile_host({.source = d / "k.cpp"});
  EXPECT_FALSE(b.cached);
  EXPECT_NE(b.cache_note.find("no recorded sha256"), std::string::npos) << b.cache_note;
  EXPECT_TRUE(fs::exists(b.library.parent_path() / "sha256"));

  // A forged record that does not match is no better.
  test::write(b.library.parent_path() / "sha256", sha256_hex("something else") + "  kernel.so\n");
  std::string note;
  EXPECT_FALSE(build::cache_lookup(b.cache_key, "kernel.so", &note));
  EXPECT_NE(note.find("did not match"), std::string::npos);
  EXPECT_FALSE(fs::exists(b.library.parent_path())); // the entry is gone
}

TEST(build_cache, temporary_folders_of_dead_builders_are_swept) {
  test::cache_env env;
  fs::create_directories(build::cache_dir());
  const auto dead = make_tmp(".tmp-aaaa-build-1-1", dead_owner());
  auto reused_pid = current_process_owner();
  reused_pid.start_ticks += 3;
  const auto reused = make_tmp(".tmp-bbbb-build-2-2", to_string(reused_pid) + "\n");
  const auto mine = make_tmp(".tmp-cccc-build-3-3", to_string(current_process_owner()) + "\n");
  auto remote = current_process_owner();
  remote.host = "another-host";
  const auto elsewhere = make_tmp(".tmp-dddd-build-4-4", to_string(remote) + "\n");
  const auto anonymous_fresh = make_tmp(".tmp-eeee-build-5-5", "");
  const auto anonymous_old = make_tmp(".tmp-ffff-build-6-6", "");
  fs::last_write_time(anonymous_old, fs::file_time_type::clock::now() - std::chrono::hours(48));
  const auto elsewhere_old = make_tmp(".tmp-gggg-build-7-7", to_string(remote) + "\n");
  fs::last_write_time(elsewhere_old, fs::file_time_type::clock::now() - std::chrono::hours(48));
  const auto entry = build::cache_dir() / "0123456789abcdef"; // a published entry: never swept
  fs::create_directories(entry);
  fs::last_write_time(entry, fs::file_time_type::clock::now() - std::chrono::hours(48));

  EXPECT_EQ(build::cache_sweep_stale(), 4);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(reused));
  EXPECT_FALSE(fs::exists(anonymous_old));
  EXPECT_FALSE(fs::exists(elsewhere_old));
  EXPECT_TRUE(fs::exists(mine));            // a build in progress in a live process
  EXPECT_TRUE(fs::exists(elsewhere));       // another host's, and recent: cannot tell
  EXPECT_TRUE(fs::exists(anonymous_fresh)); // no owner yet, and recent
  EXPECT_TRUE(fs::exists(entry));
}

TEST(build_cache, a_killed_kforge_leaves_a_folder_that_the_next_one_removes) {
  // kforge is killed in the middle of a build (the compiler hangs); the next kforge that
  // builds anything removes the folder.
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "slow.cpp", "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args*) { return 0; }\n");
  test::write(d / "cxx.sh", "#!/bin/sh\n[ \"$1\" = --version ] && { echo fake-cxx 1; exit 0; }\necho $$ > \"" +
                               (d / "compiler.pid").string() + "\"\nexec sleep 600\n");
  fs::permissions(d / "cxx.sh", fs::perms::owner_all);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setenv("KFORGE_CXX", (d / "cxx.sh").c_str(), 1);
    (void)build::compile_host({.source = d / "slow.cpp"});
    ::_exit(0);
  }
  auto tmp_folders = [] {
    int n = 0;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(build::cache_dir(), ec)) n += e.path().filename().string().starts_with(".tmp-");
    return n;
  };
  // Wait for the compiler to start (the folder and its owner file exist by then).
  for (int i = 0; i < 3000 && !fs::exists(d / "compiler.pid"); ++i) ::usleep(10'000);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (fs::exists(d / "compiler.pid")) ::kill(std::stoi(read_file(d / "compiler.pid")), SIGKILL); // the orphan
  ASSERT_EQ(tmp_folders(), 1); // left behind

  auto r = run_command({test::kforge_binary().string(), "--db", (d / "k.db").string(), "eval",
                        (test::problems_dir() / "gelu").string(), (test::problems_dir() / "gelu" / "seed.cpp").string(),
                        "--no-time", "--trials", "1"},
                       300);
  EXPECT_EQ(r.exit_code, 0) << r.output << " signal " << r.signal << " timed out " << r.timed_out;
  EXPECT_EQ(tmp_folders(), 0);
}
