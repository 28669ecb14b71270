// profile/ncu: metric names, ncu's raw CSV, units, and ncu's failure lines.
#include "core/error.hpp"
#include "profile/ncu.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace kforge;
using namespace kforge::profile;

namespace {
std::string fixture(const std::string& name) { return kforge::test::read_test_file("profile/data/" + name); }
} // namespace

TEST(profile_ncu, metrics_argument_lists_every_metric_once) {
  const auto arg = metrics_argument();
  std::set<std::string> seen;
  std::stringstream ss(arg);
  for (std::string m; std::getline(ss, m, ',');) EXPECT_TRUE(seen.insert(m).second) << m;
  EXPECT_EQ(seen.size(), std::size(ncu_metrics));
  EXPECT_TRUE(seen.count("gpu__time_duration.sum"));
  EXPECT_TRUE(seen.count("launch__occupancy_limit_shared_mem"));
  for (const char* r : stall_reasons) EXPECT_TRUE(seen.count(stall_metric(r))) << r;
  EXPECT_EQ(arg.find(' '), std::string::npos);
}

TEST(profile_ncu, parses_the_fixture_with_preamble_units_separators_and_na) {
  const auto ks = parse_ncu_csv(fixture("softmax_ncu_raw.csv"));
  ASSERT_EQ(ks.size(), 2u);
  const auto& a = ks[0];
  EXPECT_EQ(a.id, 0);
  EXPECT_EQ(a.name, "softmax_rows(const float *, float *, int, int)");
  EXPECT_EQ(a.grid, "(8192, 1, 1)");
  EXPECT_EQ(a.block, "(256, 1, 1)");
  EXPECT_DOUBLE_EQ(a.values.at("gpu__time_duration.sum"), 41.22);
  EXPECT_EQ(a.units.at("gpu__time_duration.sum"), "usecond");
  EXPECT_DOUBLE_EQ(a.values.at("launch__grid_size"), 8192);                 // "8,192"
  EXPECT_DOUBLE_EQ(a.values.at("smsp__inst_executed.sum"), 12345678);       // "12,345,678"
  EXPECT_FALSE(a.values.count("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")); // "n/a"
  EXPECT_FALSE(a.values.count("Kernel Name"));
  EXPECT_DOUBLE_EQ(a.values.at("CC"), 9.0); // unknown numeric columns are kept
  // a kernel name with commas and doubled quotes
  EXPECT_EQ(ks[1].id, 1);
  EXPECT_EQ(ks[1].name, "void finalize<128, \"sum\">(float *, int)");
  EXPECT_DOUBLE_EQ(ks[1].values.at("launch__grid_size"), 4);
}

TEST(profile_ncu, si_converts_to_base_units) {
  const auto ks = parse_ncu_csv(fixture("softmax_ncu_raw.csv"));
  ASSERT_FALSE(ks.empty());
  const auto& a = ks[0];
  EXPECT_NEAR(*si(a, "gpu__time_duration.sum"), 41.22e-6, 1e-15);
  EXPECT_NEAR(*si(a, "dram__bytes.sum"), 134.22e6, 1);
  EXPECT_NEAR(*si(a, "dram__bytes.sum.per_second"), 3.26e12, 1e3);
  EXPECT_NEAR(*si(a, "sm__cycles_elapsed.avg.per_second"), 1.75e9, 1);          // cycle/nsecond
  EXPECT_NEAR(*si(a, "launch__shared_mem_per_block_dynamic"), 1020, 1e-9);      // Kbyte
  EXPECT_DOUBLE_EQ(*si(a, "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 81.73); // percent stays percent
  ASSERT_TRUE(si(a, "launch__registers_per_thread").has_value());
  EXPECT_DOUBLE_EQ(*si(a, "launch__registers_per_thread"), 72);                 // register/thread: a count
  EXPECT_FALSE(si(a, "no_such_metric").has_value());

  EXPECT_DOUBLE_EQ(*unit_scale("msecond"), 1e-3);
  EXPECT_DOUBLE_EQ(*unit_scale("nsecond"), 1e-9);
  EXPECT_DOUBLE_EQ(*unit_scale("second"), 1.0);
  EXPECT_DOUBLE_EQ(*unit_scale("Gbyte/second"), 1e9);
  EXPECT_DOUBLE_EQ(*unit_scale("Tbyte/second"), 1e12);
  EXPECT_DOUBLE_EQ(*unit_scale("byte/usecond"), 1e6);
  EXPECT_DOUBLE_EQ(*unit_scale("Kibyte"), 1024.0);
  EXPECT_DOUBLE_EQ(*unit_scale("Ghz"), 1e9);
  EXPECT_DOUBLE_EQ(*unit_scale("MHz"), 1e6);
  EXPECT_DOUBLE_EQ(*unit_scale("%"), 1.0);
  EXPECT_DOUBLE_EQ(*unit_scale("register/thread"), 1.0);
  EXPECT_DOUBLE_EQ(*unit_scale("Kinst"), 1e3);
  EXPECT_FALSE(unit_scale("Qbyte").has_value());
  // --print-units base spellings
  EXPECT_DOUBLE_EQ(*unit_scale("ns"), 1e-9);
  EXPECT_DOUBLE_EQ(*unit_scale("us"), 1e-6);
  EXPECT_DOUBLE_EQ(*unit_scale("byte/s"), 1.0);
  EXPECT_DOUBLE_EQ(*unit_scale("hz"), 1.0);
  EXPECT_DOUBLE_EQ(*unit_scale("byte/block"), 1.0);
  EXPECT_DOUBLE_EQ(*unit_scale("SM"), 1.0);
}

TEST(profile_ncu, header_anywhere_columns_in_any_order_crlf_and_noise) {
  const std::string csv =
      "program says \"hello\", world\r\n"
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"Block Size\",\"Grid Size\",\"dram__bytes.sum\"\r\n"
      "\"\",\"\",\"msecond\",\"\",\"\",\"Gbyte\"\r\n"
      "\"3\",\"k(int)\",\"1.5\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"\"\r\n"
      "stray output line from the app\r\n"
      "\"4\",\"k(int)\",\"2\",\"(32, 1, 1)\",\"(1, 1, 1)\",\"1,000.5\"\r\n";
  const auto ks = parse_ncu_csv(csv);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].id, 3);
  EXPECT_NEAR(*si(ks[0], "gpu__time_duration.sum"), 1.5e-3, 1e-12);
  EXPECT_FALSE(si(ks[0], "dram__bytes.sum").has_value()); // empty
  EXPECT_NEAR(*si(ks[1], "dram__bytes.sum"), 1000.5e9, 1);
}

TEST(profile_ncu, no_kernel_is_an_empty_vector_not_an_error) {
  EXPECT_TRUE(parse_ncu_csv("").empty());
  EXPECT_TRUE(parse_ncu_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n").empty());
  // a header and units, no rows
  EXPECT_TRUE(parse_ncu_csv("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"usecond\"\n").empty());
}

TEST(profile_ncu, permission_error_throws_with_the_fix) {
  const std::string out =
      "==PROF== Connected to process 77 (/bin/app)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on "
      "the target device 0. For instructions on enabling permissions, see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
      "==PROF== Disconnected from process 77\n"
      "==ERROR== The application returned an error code (1).\n";
  try {
    (void)parse_ncu_csv(out);
    FAIL() << "expected kforge::error";
  } catch (const kforge::error& e) {
    EXPECT_EQ(e.kind(), error_kind::worker);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("permission"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("root"), std::string::npos) << msg;
  }
}

TEST(profile_ncu, failure_lines) {
  EXPECT_EQ(ncu_failure("==PROF== Connected\nall fine\n"), "");
  EXPECT_EQ(ncu_failure("==WARNING== No kernels were profiled.\n"), "");
  const auto missing = ncu_failure("==ERROR== Failed to find metric regex:^sm__bogus_metric.sum$\n"
                                   "==ERROR== The application returned an error code (1).\n");
  EXPECT_NE(missing.find("sm__bogus_metric.sum"), std::string::npos) << missing;
  EXPECT_EQ(missing.find('\n'), std::string::npos);
  const auto plain = ncu_failure("==ERROR== The application returned an error code (11).\n"
                                 "==ERROR== Profiling failed because a driver resource was unavailable.\n");
  EXPECT_EQ(plain.rfind("Profiling failed because a driver resource was unavailable.", 0), 0u) << plain;
  EXPECT_NE(plain.find("error code (11)"), std::string::npos);
  // other errors without a header throw; with a header they are left to the caller
  EXPECT_THROW((void)parse_ncu_csv("==ERROR== Profiling failed.\n"), kforge::error);
}
