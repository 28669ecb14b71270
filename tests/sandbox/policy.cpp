// The parent's side of the sandbox: the policy's JSON (what travels to kforge-confine), the
// report's JSON (what comes back), the command line, and the scratch dir's removal.
#include "core/error.hpp"
#include "sandbox_util.hpp"

#include <sys/stat.h>

using namespace kforge;
using nlohmann::json;

namespace {

sandbox::policy full_policy() {
  sandbox::policy p;
  p.read_paths = {"/usr", "/opt/cuda", std::string("/tmp/caf\xe9-latin1")};  // not UTF-8
  p.write_paths = {"/tmp/out"};
  p.device_paths = {"/dev/null", "/dev/nvidia0"};
  p.scratch = "/tmp/scratch";
  p.env = {{"PATH", "/usr/bin"}, {"RAW", std::string("\xff\xfe")}, {"EMPTY", ""}};
  p.lim = {1ull << 33, 64, 1ull << 30, 600.5, 1ull << 28};
  p.profile = sandbox::syscall_profile::tool;
  p.proc_self_write = false;
  p.require = {"seccomp", "landlock_filesystem"};
  p.skip = {"network_namespace"};
  return p;
}

} // namespace

TEST(sandbox_policy, json_round_trip_keeps_every_field_and_every_byte) {
  const auto p = full_policy();
  const auto text = sandbox::to_json(p).dump();  // must not throw on the non-UTF-8 bytes
  const auto q = sandbox::policy_from_json(json::parse(text));
  EXPECT_EQ(q.read_paths, p.read_paths);
  EXPECT_EQ(q.write_paths, p.write_paths);
  EXPECT_EQ(q.device_paths, p.device_paths);
  EXPECT_EQ(q.scratch, p.scratch);
  EXPECT_EQ(q.env, p.env);
  EXPECT_EQ(q.lim.memory_bytes, p.lim.memory_bytes);
  EXPECT_EQ(q.lim.processes, p.lim.processes);
  EXPECT_EQ(q.lim.file_bytes, p.lim.file_bytes);
  EXPECT_DOUBLE_EQ(q.lim.cpu_s, p.lim.cpu_s);
  EXPECT_EQ(q.lim.scratch_bytes, p.lim.scratch_bytes);
  EXPECT_EQ(q.profile, p.profile);
  EXPECT_EQ(q.proc_self_write, p.proc_self_write);
  EXPECT_EQ(q.require, p.require);
  EXPECT_EQ(q.skip, p.skip);
  EXPECT_EQ(sandbox::to_json(q), sandbox::to_json(p));
}

TEST(sandbox_policy, non_utf8_bytes_travel_as_hex) {
  const auto j = sandbox::to_json(full_policy());
  EXPECT_EQ(j["read_paths"][2], json({{"hex", "2f746d702f636166e92d6c6174696e31"}}));
  EXPECT_EQ(j["read_paths"][0], "/usr");
  EXPECT_EQ(j["env"]["RAW"], json({{"hex", "fffe"}}));
}

TEST(sandbox_policy, defaults_from_an_empty_object) {
  const auto p = sandbox::policy_from_json(json::object());
  EXPECT_TRUE(p.read_paths.empty());
  EXPECT_TRUE(p.scratch.empty());
  EXPECT_EQ(p.profile, sandbox::syscall_profile::worker);
  EXPECT_TRUE(p.proc_self_write);
  EXPECT_EQ(p.lim.memory_bytes, 0u);
}

TEST(sandbox_policy, a_malformed_policy_is_a_usage_error_naming_what_is_wrong) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"read_path": []})", "unknown key 'read_path'"},  // a typo must not weaken a policy
      {R"({"limits": {"memory": 5}})", "unknown key 'memory'"},
      {R"({"read_paths": ["relative/dir"]})", "not an absolute path"},
      {R"({"read_paths": "/usr"})", "must be an array"},
      {R"({"scratch": 5})", "scratch must be a string"},
      {R"({"limits": {"memory_bytes": -1}})", "non-negative integer"},
      {R"({"limits": {"processes": 1.5}})", "non-negative integer"},
      {R"({"limits": {"cpu_s": "ten"}})", "cpu_s"},
      {R"({"profile": "root"})", "profile 'root'"},
      {R"({"proc_self_write": 1})", "true or false"},
      {R"({"skip": ["landlock"]})", "unknown layer 'landlock'"},
      {R"({"require": [5]})", "layer names"},
      {R"({"env": {"A=B": "x"}})", "not a variable name"},
      {R"({"env": {"A": 5}})", "env.A must be a string"},
      {R"({"env": ["A"]})", "env must be an object"},
      {R"({"read_paths": [{"hex": "zz"}]})", "not hexadecimal"},
      {R"([])", "must be an object"},
  };
  for (auto& [text, want] : bad) {
    const auto j = json::parse(text);
    try {
      (void)sandbox::policy_from_json(j);
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const kforge::error& e) {
      EXPECT_EQ(e.kind(), error_kind::usage) << j.dump();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what() << " (wanted " << want << ")";
    }
  }
}

TEST(sandbox_policy, system_read_paths_leave_out_secrets_and_home) {
  const auto paths = sandbox::system_read_paths();
  for (const char* p : {"/etc", "/etc/shadow", "/root", "/home", "/tmp", "/proc", "/"})
    EXPECT_EQ(std::count(paths.begin(), paths.end(), std::filesystem::path(p)), 0) << p;
  EXPECT_EQ(std::count(paths.begin(), paths.end(), std::filesystem::path("/usr")), 1);
}

TEST(sandbox_launch, confined_argv_wraps_the_program) {
  ::setenv("KFORGE_CONFINE", "/opt/kf/kforge-confine", 1);
  sandbox::policy p;
  p.scratch = "/tmp/s";
  const auto a = sandbox::confined_argv(p, {"/usr/bin/g++", "-c", "x.cpp"}, 4);
  ASSERT_EQ(a.size(), 9u);
  EXPECT_EQ(a[0], "/opt/kf/kforge-confine");
  EXPECT_EQ(a[1], "--policy");
  EXPECT_EQ(sandbox::policy_from_json(json::parse(a[2])).scratch, "/tmp/s");
  EXPECT_EQ(a[3], "--report-fd");
  EXPECT_EQ(a[4], "4");
  EXPECT_EQ(a[5], "--");
  EXPECT_EQ(std::vector<std::string>(a.begin() + 6, a.end()), (std::vector<std::string>{"/usr/bin/g++", "-c", "x.cpp"}));
  const auto b = sandbox::confined_argv(p, {"/bin/true"}, -1);
  EXPECT_EQ(std::find(b.begin(), b.end(), "--report-fd"), b.end());
  EXPECT_EQ(b[3], "--");
  ::unsetenv("KFORGE_CONFINE");
  // Beside this test binary there is none: the one the build tree names is found.
  EXPECT_EQ(sandbox::confine_exe().filename(), "kforge-confine");
  EXPECT_TRUE(std::filesystem::exists(sandbox::confine_exe())) << sandbox::confine_exe();
}

TEST(sandbox_launch, kforge_sandbox_off_is_a_reason_and_nothing_else_is) {
  ::unsetenv("KFORGE_SANDBOX");
  EXPECT_EQ(sandbox::disabled_reason(), "");
  ::setenv("KFORGE_SANDBOX", "on", 1);
  EXPECT_EQ(sandbox::disabled_reason(), "");
  ::setenv("KFORGE_SANDBOX", "off", 1);
  EXPECT_NE(sandbox::disabled_reason().find("KFORGE_SANDBOX=off"), std::string::npos);
  ::unsetenv("KFORGE_SANDBOX");
}

TEST(sandbox_launch, scratch_dir_is_private_and_removed) {
  std::filesystem::path where;
  {
    sandbox::scratch_dir s;
    where = s.path();
    struct stat st {};
    ASSERT_EQ(::stat(where.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::filesystem::create_directories(where / "a" / "b");
    test::write(where / "a" / "b" / "f", "x");
    ::chmod((where / "a").c_str(), 0);  // left unreadable by the program
  }
  EXPECT_FALSE(std::filesystem::exists(where));
}

TEST(sandbox_launch, scratch_dir_removal_never_follows_a_symlink) {
  test::temp_dir outside;
  test::write(outside / "precious", "keep me");
  std::filesystem::create_directories(outside / "dir");
  test::write(outside / "dir" / "also", "keep me too");
  {
    sandbox::scratch_dir s;
    std::filesystem::create_symlink(outside.path / "precious", s.path() / "link-to-file");
    std::filesystem::create_directory_symlink(outside.path / "dir", s.path() / "link-to-dir");
    std::filesystem::create_directories(s.path() / "sub");
    std::filesystem::create_directory_symlink(outside.path, s.path() / "sub" / "link-up");
  }
  EXPECT_TRUE(std::filesystem::exists(outside / "precious"));
  EXPECT_TRUE(std::filesystem::exists(outside / "dir" / "also"));
}

TEST(sandbox_launch, scratch_dir_moves) {
  sandbox::scratch_dir a;
  const auto p = a.path();
  sandbox::scratch_dir b(std::move(a));
  EXPECT_EQ(b.path(), p);
  EXPECT_TRUE(a.path().empty());
  EXPECT_TRUE(std::filesystem::exists(p));
}

TEST(sandbox_report, json_round_trip_and_missing) {
  const sandbox::layer_report r{{"user_namespace", true, "uid 0"}, {"seccomp", false, "seccomp_load: EINVAL"},
                                {"limits", false, "RLIMIT_NPROC not enforced"}};
  const auto j = sandbox::to_json(r);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j[1], json({{"name", "seccomp"}, {"active", false}, {"detail", "seccomp_load: EINVAL"}}));
  const auto back = sandbox::report_from_json(j);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].detail, "RLIMIT_NPROC not enforced");
  EXPECT_EQ(sandbox::missing(back), (std::vector<std::string>{"seccomp", "limits"}));
  // The whole report line is accepted too.
  EXPECT_EQ(sandbox::report_from_json(json{{"layers", j}, {"landlock_abi", 7}}).size(), 3u);
  EXPECT_THROW((void)sandbox::report_from_json(json{{"layers", 5}}), kforge::error);
  EXPECT_THROW((void)sandbox::report_from_json(json::array({{{"name", "x"}}})), kforge::error);
}
