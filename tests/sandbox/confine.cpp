// kforge-confine's mechanics: the report, how it ends (exactly as the program did), the
// environment, the working directory, requirements, and that nothing of the sandbox outlives
// the program or kforge-confine itself.
#include "sandbox_util.hpp"

#include <sys/stat.h>
#include <thread>

using namespace kforge;
using test::run_confined;

TEST(confine, the_report_names_every_layer_in_order_with_a_detail) {
  test::confined c;
  const auto r = run_confined(c.policy, {"exit", "0"});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  ASSERT_TRUE(r.has_report) << r.describe();
  ASSERT_EQ(r.layers.size(), sandbox::layer_names().size());
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    EXPECT_EQ(r.layers[i].name, sandbox::layer_names()[i]);
    EXPECT_FALSE(r.layers[i].detail.empty()) << r.layers[i].name;
    EXPECT_EQ(r.layers[i].detail.find("not applied"), std::string::npos) << r.layers[i].name << ": " << r.layers[i].detail;
  }
  const auto line = nlohmann::json::parse(r.report_text.substr(0, r.report_text.find('\n')));
  EXPECT_EQ(line["landlock_abi"], sandbox::landlock_abi());
  EXPECT_EQ(r.report_text.back(), '\n');
}

TEST(confine, a_skipped_layer_is_reported_missing_with_the_reason) {
  test::confined c;
  c.policy.skip = {"seccomp", "network_namespace"};
  const auto r = run_confined(c.policy, {"exit", "0"});
  ASSERT_TRUE(r.has_report) << r.describe();
  for (const char* n : {"seccomp", "network_namespace"}) {
    const auto* l = sandbox::find_layer(r.layers, n);
    ASSERT_NE(l, nullptr);
    EXPECT_FALSE(l->active);
    EXPECT_EQ(l->detail, "skipped by the policy");
  }
  const auto gone = sandbox::missing(r.layers);
  EXPECT_NE(std::find(gone.begin(), gone.end(), "seccomp"), gone.end());
}

TEST(confine, exit_codes_are_mirrored) {
  test::confined c;
  for (int code : {0, 1, 7, 42, 255}) {
    const auto r = run_confined(c.policy, {"exit", std::to_string(code)});
    EXPECT_TRUE(r.exited(code)) << code << ": " << r.describe();
  }
}

TEST(confine, a_signal_is_mirrored_as_the_same_signal) {
  test::confined c;
  const auto r = run_confined(c.policy, {"segv"});
  EXPECT_TRUE(r.signaled(SIGSEGV)) << r.describe();
  EXPECT_FALSE(WCOREDUMP(r.status)) << "kforge-confine must not dump core";
}

TEST(confine, a_program_that_cannot_be_executed_is_127) {
  test::confined c;
  c.policy.read_paths.push_back("/nonexistent-dir");
  auto argv = sandbox::confined_argv(c.policy, {"/nonexistent-dir/prog"}, -1);
  std::string cmd;
  for (auto& a : argv) cmd += "'" + a + "' ";
  const int st = std::system((cmd + ">/dev/null 2>&1").c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 127) << st;
}

TEST(confine, bad_usage_and_a_bad_policy_are_125_and_nothing_runs) {
  test::temp_dir out;
  const auto mark = out / "ran";
  const auto confine = test::confine_binary().string();
  const auto prog = test::attacker_binary().string();
  const std::vector<std::string> bad{
      "'" + confine + "' --policy '{\"read_path\": []}' -- '" + prog + "' write " + mark.string(),
      "'" + confine + "' --policy 'not json' -- '" + prog + "' write " + mark.string(),
      "'" + confine + "' -- '" + prog + "' write " + mark.string(),
      "'" + confine + "' --policy '{}' --report-fd 99 -- '" + prog + "' write " + mark.string(),
      "'" + confine + "' --policy '{}' -- attacker-without-a-path write " + mark.string(),
      "'" + confine + "' --policy '{}'",
  };
  for (auto& cmd : bad) {
    const int st = std::system((cmd + " >/dev/null 2>&1").c_str());
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 125) << cmd << ": " << st;
  }
  EXPECT_FALSE(std::filesystem::exists(mark));
}

TEST(confine, a_required_layer_that_is_missing_stops_the_program) {
  test::confined c;
  test::temp_dir out;
  c.policy.write_paths = {out.path};
  c.policy.skip = {"seccomp"};
  c.policy.require = {"seccomp"};
  const auto r = run_confined(c.policy, {"write", (out / "ran").string()});
  EXPECT_TRUE(r.exited(125)) << r.describe();
  EXPECT_NE(r.output.find("required layers not in force"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out / "ran"));
  EXPECT_TRUE(r.has_report) << "the report still says what was in force";
  // The control: with what it requires in force, it runs.
  c.policy.skip.clear();
  const auto ok = run_confined(c.policy, {"write", (out / "ran").string()});
  KFORGE_REQUIRE_LAYERS(ok, "seccomp", "landlock_filesystem");
  EXPECT_TRUE(ok.exited(0)) << ok.describe();
  EXPECT_TRUE(std::filesystem::exists(out / "ran"));
}

TEST(confine, the_environment_is_exactly_the_policys) {
  ::setenv("OPENAI_API_KEY", "sk-test-must-not-leak", 1);
  ::setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak", 1);
  ::setenv("KFORGE_DB", "/tmp/kforge-secret.db", 1);
  test::confined c;
  c.policy.env["KF_ONLY"] = "yes";
  const auto r = run_confined(c.policy, {"env"});
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::unsetenv("KFORGE_DB");
  KFORGE_REQUIRE_LAYERS(r, "environment");
  ASSERT_TRUE(r.exited(0)) << r.describe();
  std::set<std::string> got;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) got.insert(line);
  const std::string s = c.scratch.path().string();
  const std::set<std::string> want{"PATH=/usr/bin:/bin", "LANG=C", "KF_ONLY=yes", "HOME=" + s, "TMPDIR=" + s};
  EXPECT_EQ(got, want);
  EXPECT_EQ(r.output.find("must-not-leak"), std::string::npos);
}

TEST(confine, the_program_starts_in_its_scratch_dir) {
  test::confined c;
  const auto r = run_confined(c.policy, {"cwd"});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_EQ(r.output, c.scratch.path().string() + "\n");
}

TEST(confine, the_scratch_tmpfs_is_private_to_the_sandbox) {
  test::confined c;
  const auto r = run_confined(c.policy, {"write", "left-behind"});
  KFORGE_REQUIRE_LAYERS(r, "mount_namespace");
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_FALSE(std::filesystem::exists(c.scratch.path() / "left-behind"));
  // Without a tmpfs the dir itself is the scratch: the control.
  c.policy.lim.scratch_bytes = 0;
  const auto plain = run_confined(c.policy, {"write", "left-behind"});
  ASSERT_TRUE(plain.exited(0)) << plain.describe();
  EXPECT_TRUE(std::filesystem::exists(c.scratch.path() / "left-behind"));
}

namespace {

// A setsid grandchild that outlives the program must end with it: none is left once
// kforge-confine has returned, and the file it would write later never appears.
void grandchild_does_not_outlive(const std::vector<std::string>& skip) {
  test::confined c;
  test::temp_dir out;
  c.policy.write_paths = {out.path};
  c.policy.skip = skip;
  const auto marker = test::random_token();
  // The control: the grandchild can write there, and lives on after the program has waited.
  const auto ctl = run_confined(c.policy, {"orphan-wait", (out / "control").string(), "0", marker});
  ASSERT_TRUE(ctl.exited(0)) << ctl.describe();
  EXPECT_TRUE(std::filesystem::exists(out / "control"));
  const auto r = run_confined(c.policy, {"orphan", (out / "late").string(), "300", marker});
  ASSERT_TRUE(r.exited(0)) << r.describe();
  EXPECT_TRUE(test::processes_with(marker).empty()) << "a process of the sandbox outlived kforge-confine";
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // past the grandchild's delay
  EXPECT_FALSE(std::filesystem::exists(out / "late")) << "the setsid grandchild ran on after the program";
}

} // namespace

TEST(confine, a_setsid_grandchild_ends_with_the_program) {
  grandchild_does_not_outlive({});
}

TEST(confine, a_setsid_grandchild_ends_with_the_program_without_a_pid_namespace) {
  // init is then a child subreaper that kills what comes back to it.
  grandchild_does_not_outlive({"pid_namespace", "mount_namespace"});
}

TEST(confine, killing_kforge_confine_ends_the_whole_sandbox) {
  test::confined c;
  const auto marker = test::random_token();
  test::run_options o;
  std::vector<pid_t> seen;
  o.while_running = [&](pid_t confine) {
    for (int i = 0; i < 500 && seen.size() < 3; ++i) {  // kforge-confine, its init and the program
      seen = test::processes_with(marker);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(confine, SIGKILL);
  };
  // kforge-confine's argv holds the program's, marker included: three processes carry it.
  const auto r = run_confined(c.policy, {"sleep", "60000", marker}, o);
  EXPECT_TRUE(r.signaled(SIGKILL)) << r.describe();
  ASSERT_EQ(seen.size(), 3u);
  std::vector<pid_t> left = test::processes_with(marker);
  for (int i = 0; i < 500 && !left.empty(); ++i) {  // PDEATHSIG is delivered asynchronously
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    left = test::processes_with(marker);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the sandbox outlived kforge-confine";
}

TEST(confine, unprivileged_every_layer_of_this_machine_is_in_force) {
  if (auto why = test::unprivileged_unusable(); !why.empty()) GTEST_SKIP() << why;
  test::confined c;
  test::give_to_nobody(c.scratch.path());
  const auto r = run_confined(c.policy, {"exit", "3"}, {.unprivileged = true});
  ASSERT_TRUE(r.exited(3)) << r.describe();
  ASSERT_TRUE(r.has_report);
  // Every layer this kernel supports (this machine kind: Landlock ABI 7, unprivileged user
  // namespaces) must be in force for an unprivileged user; anything else is named.
  KFORGE_REQUIRE_LAYERS(r, "user_namespace");
  EXPECT_TRUE(sandbox::missing(r.layers).empty()) << r.lacking(sandbox::layer_names());
}

TEST(confine, as_the_test_user_every_layer_this_kernel_has_is_in_force) {
  // A regression guard for this machine kind (Landlock ABI >= 6, user namespaces): nothing
  // but RLIMIT_NPROC for root may be missing.
  if (sandbox::landlock_abi() < 6) GTEST_SKIP() << "Landlock ABI " << sandbox::landlock_abi() << " < 6";
  test::confined c;
  const auto r = run_confined(c.policy, {"exit", "0"});
  KFORGE_REQUIRE_LAYERS(r, "user_namespace");
  for (auto& l : r.layers) {
    if (l.name == "limits" && ::getuid() == 0) continue;
    EXPECT_TRUE(l.active) << l.name << ": " << l.detail;
  }
}

TEST(confine, a_machine_without_user_namespaces_gets_the_reasons_and_the_other_layers) {
  // Unprivileged and without a user namespace (as where they are disabled), the other
  // namespaces cannot be made: each is reported with the kernel's reason, and Landlock,
  // seccomp and the limits still hold.
  if (auto why = test::unprivileged_unusable(); !why.empty()) GTEST_SKIP() << why;
  test::confined c;
  test::give_to_nobody(c.scratch.path());
  c.policy.skip = {"user_namespace"};
  test::temp_dir secret;
  test::write(secret / "key", "sk-secret");
  ::chmod(secret.path.c_str(), 0755);
  ::chmod((secret / "key").c_str(), 0644);
  const auto r = run_confined(c.policy, {"read", (secret / "key").string()}, {.unprivileged = true});
  ASSERT_TRUE(r.has_report) << r.describe();
  for (const char* n : {"network_namespace", "mount_namespace", "pid_namespace"}) {
    const auto* l = sandbox::find_layer(r.layers, n);
    ASSERT_NE(l, nullptr);
    EXPECT_FALSE(l->active) << n;
    EXPECT_NE(l->detail.find("unshare(CLONE_NEW"), std::string::npos) << l->detail;
    EXPECT_NE(l->detail.find("Operation not permitted"), std::string::npos) << l->detail;
  }
  KFORGE_REQUIRE_LAYERS(r, "landlock_filesystem", "seccomp");
  EXPECT_TRUE(r.exited(1)) << r.describe();
}
