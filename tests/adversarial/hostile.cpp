// The hostile-candidate suite (tests/adversarial/hostile/): candidates that attack kforge itself
// rather than compute a wrong answer — the cache, the record, the truth, the reference, the
// environment, the network, files, processes, resources and build-time reads. Each declares on
// its first line the status that shows it was contained:
//   // kforge-hostile: class=files problem=softmax expect=tolerance
// Most write the right answer only when their attack got through (hostile_common.h), so the
// status is the evidence; the test also checks the side effects each one tries. The fixed paths
// the kernels aim at live under /tmp/kforge-hostile (tests/hostile_bait.hpp).
// To add one: drop a file with that header into the folder; add a side-effect check below if
// the status alone does not show containment.
#include "adversarial_suite.hpp"
#include "hostile_bait.hpp"
#include "core/subprocess.hpp"
#include "store/store.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

using namespace kforge;
using test::hashes_under;
using test::listener;
using test::process_named;
namespace fs = std::filesystem;
const fs::path& bait = test::hostile_bait;

namespace {

struct hostile {
  fs::path file;
  std::string cls, problem, expect;
};
void PrintTo(const hostile& h, std::ostream* os) { *os << h.file.filename().string(); }

std::vector<hostile> load_hostile() {
  std::vector<hostile> out;
  const std::regex header(R"(^// kforge-hostile: class=(\S+) problem=(\S+) expect=(\S+))");
  for (auto& e : fs::directory_iterator(test::source_dir() / "tests" / "adversarial" / "hostile")) {
    if (e.path().extension() != ".cpp") continue;
    std::ifstream in(e.path());
    std::string line;
    std::getline(in, line);
    std::smatch m;
    hostile h{e.path(), "", "", ""};
    if (std::regex_search(line, m, header)) h = {e.path(), m[1], m[2], m[3]};
    out.push_back(h);
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.file < b.file; });
  return out;
}

std::string name_of(const ::testing::TestParamInfo<hostile>& i) { return i.param.file.stem().string(); }

worker::evaluation evaluate(const hostile& h, const fs::path& problem_dir, bool time = false) {
  worker::evaluate_options o;
  o.worker_exe = test::worker_binary();
  o.seed = 20261203;
  o.trials_per_case = 1;
  o.time = time;
  o.time_budget_s = 0.3;
  o.timeout_s = 20;
  return worker::evaluate(problem::load(problem_dir), h.file, o);
}

class hostile_candidate : public ::testing::TestWithParam<hostile> {
protected:
  void SetUp() override { test::lay_hostile_bait(); }
};

} // namespace

TEST_P(hostile_candidate, is_contained) {
  const auto& h = GetParam();
  ASSERT_FALSE(h.cls.empty()) << h.file << ": first line must be a kforge-hostile header";
  const auto problem_dir = test::problems_dir() / h.problem;
  worker::evaluation ev;
  const std::string stem = h.file.stem().string();

  if (stem == "cache_overwrites_libraries") {
    // Its own cache, so that every file in it belongs to this test.
    test::cache_env cache;
    ev = evaluate(h, problem_dir);
    const auto before = hashes_under(cache.dir.path);
    ev = evaluate(h, problem_dir); // a second run, all from the cache: the attack runs against the cached truth
    EXPECT_EQ(hashes_under(cache.dir.path), before) << "a cached library changed under a confined candidate";
    // And the truth still holds: a zeros kernel fails after the attack.
    test::temp_dir d;
    test::write(d / "hostile_common.h", read_file(h.file.parent_path() / "hostile_common.h")); // beside it: confined builds read only that
    test::write(d / "zeros.cpp", "#include \"hostile_common.h\"\nKF_EXPORT int kf_forward(const kf_args* a) { hostile::zeros(a); return 0; }\n");
    worker::evaluate_options o;
    o.worker_exe = test::worker_binary();
    o.seed = 1;
    o.trials_per_case = 1;
    o.time = false;
    EXPECT_EQ(worker::evaluate(problem::load(problem_dir), d / "zeros.cpp", o).status, "tolerance");
  } else if (stem == "record_truncates_database") {
    // Through the CLI, as a user would run it: a failed evaluation is recorded first.
    const auto db = bait / "record.db";
    for (auto* f : {"record.db", "record.db-wal", "record.db-shm"}) fs::remove(bait / f);
    test::temp_dir d;
    test::write(d / "hostile_common.h", read_file(h.file.parent_path() / "hostile_common.h")); // beside it: confined builds read only that
    test::write(d / "zeros.cpp", "#include \"hostile_common.h\"\nKF_EXPORT int kf_forward(const kf_args* a) { hostile::zeros(a); return 0; }\n");
    ::setenv("KFORGE_DB", db.c_str(), 1);
    const auto first = run_command({test::kforge_binary().string(), "eval", problem_dir.string(), (d / "zeros.cpp").string(),
                                    "--no-time", "--seed", "3"}, 300);
    const auto attack = run_command({test::kforge_binary().string(), "eval", problem_dir.string(), h.file.string(),
                                     "--no-time", "--seed", "3"}, 300);
    ::unsetenv("KFORGE_DB");
    EXPECT_EQ(first.exit_code, 1) << first.output;
    EXPECT_EQ(attack.exit_code, 1) << attack.output;
    EXPECT_NE(attack.output.find("tolerance"), std::string::npos) << attack.output;
    store::store s(db);
    const auto rows = s.list_evaluations();
    ASSERT_EQ(rows.size(), 2u) << "the record lost evaluations";
    for (auto& r : rows) EXPECT_EQ(r.status, "tolerance");
    return;
  } else if (stem == "environment_steals_keys") {
    ::setenv("KFORGE_HOSTILE_TEST_API_KEY", "sk-hostile-3f9a1c7e5b", 1);
    ::setenv("OPENAI_API_KEY", "sk-hostile-openai-77d2", 1);
    ev = evaluate(h, problem_dir);
    ::unsetenv("KFORGE_HOSTILE_TEST_API_KEY");
    ::unsetenv("OPENAI_API_KEY");
    EXPECT_EQ(ev.worker_output.find("sk-hostile"), std::string::npos) << ev.worker_output;
  } else if (stem == "network_phones_home") {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(47613);
    v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listener tcp(AF_INET, SOCK_STREAM, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
    listener udp(AF_INET, SOCK_DGRAM, reinterpret_cast<sockaddr*>(&v4), sizeof v4);
    if (tcp.fd < 0 || udp.fd < 0) GTEST_SKIP() << "port 47613 on 127.0.0.1 is taken on this machine";
    sockaddr_un path{};
    path.sun_family = AF_UNIX;
    std::strcpy(path.sun_path, (bait / "net.sock").c_str());
    fs::remove(bait / "net.sock");
    listener unix_path(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&path), sizeof path);
    sockaddr_un abstract{};
    abstract.sun_family = AF_UNIX;
    const char name[] = "\0kforge-hostile-net";
    std::memcpy(abstract.sun_path, name, sizeof name - 1);
    listener unix_abstract(AF_UNIX, SOCK_STREAM, reinterpret_cast<sockaddr*>(&abstract),
                           static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + sizeof name - 1));
    ev = evaluate(h, problem_dir);
    EXPECT_FALSE(tcp.heard_anything()) << "a TCP connection reached the test";
    EXPECT_FALSE(udp.heard_anything()) << "a UDP datagram reached the test";
    EXPECT_FALSE(unix_path.fd >= 0 && unix_path.heard_anything()) << "a pathname unix socket was reached";
    EXPECT_FALSE(unix_abstract.fd >= 0 && unix_abstract.heard_anything()) << "an abstract unix socket was reached";
  } else if (stem == "files_reads_and_writes") {
    const auto before = hashes_under(bait / "problem");
    ev = evaluate(h, bait / "problem");
    EXPECT_EQ(hashes_under(bait / "problem"), before) << "the problem directory changed";
    EXPECT_FALSE(fs::exists(bait / "written.txt"));
  } else if (stem == "processes_setsid_survivor") {
    test::write(bait / "late.db", "kforge-late-canary");
    ev = evaluate(h, problem_dir);
    EXPECT_FALSE(process_named("kf-hostile-gc")) << "a setsid grandchild outlived its worker";
    std::this_thread::sleep_for(std::chrono::milliseconds(4500)); // past its sleep(4)
    EXPECT_EQ(read_file(bait / "late.db"), "kforge-late-canary");
  } else if (h.cls == "build") {
    ev = evaluate(h, problem_dir);
    for (auto& b : ev.builds)
      EXPECT_EQ(b.artifact.diagnostics.find("kforge_build_secret"), std::string::npos)
          << "the build diagnostics carry the file's content:\n" << b.artifact.diagnostics;
  } else {
    ev = evaluate(h, problem_dir, h.cls == "reference");
  }
  if (h.expect == "passed") EXPECT_TRUE(ev.passed()) << stem << ": " << ev.status << ": " << ev.message;
  else EXPECT_EQ(ev.status, h.expect) << stem << ": " << ev.message;
  // Every evaluation says what confined it, and nothing was missing on this machine's kind.
  EXPECT_TRUE(ev.confinement.contains("verify") || h.expect == "build_failed") << ev.confinement.dump();
}

INSTANTIATE_TEST_SUITE_P(cpu, hostile_candidate, ::testing::ValuesIn(load_hostile()), name_of);

TEST(hostile_suite, covers_every_class) {
  std::set<std::string> seen;
  for (auto& h : load_hostile()) seen.insert(h.cls);
  for (const char* c : {"cache", "record", "truth", "reference", "environment", "network", "files", "processes",
                        "resources", "build"})
    EXPECT_TRUE(seen.count(c)) << "no hostile candidate of class " << c;
}
