// The parsers and the digest on a real capture: ncu (--print-units base) and cuobjdump on
// an H200, for a coalesced `scale` kernel and a `strided` one (data/h200_probe_*).
#include "profile/digest.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace kforge::profile;

namespace {
std::string fixture(const std::string& name) { return kforge::test::read_test_file("profile/data/" + name); }
} // namespace

TEST(profile_h200_capture, every_collected_metric_is_read_in_base_units) {
  const auto ks = parse_ncu_csv(fixture("h200_probe_raw.csv"));
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "scale(const float *, float *, int)");
  EXPECT_EQ(ks[1].name, "strided(const float *, float *, int)");
  EXPECT_EQ(ks[1].grid, "(65536, 1, 1)");
  for (auto& k : ks)
    for (const char* m : ncu_metrics) EXPECT_TRUE(si(k, m).has_value()) << k.name << ": " << m;
  EXPECT_NEAR(*si(ks[0], "gpu__time_duration.sum"), 49.728e-6, 1e-12); // "49,728" ns
  EXPECT_NEAR(*si(ks[0], "dram__bytes.sum.per_second"), 2.3105585585585e12, 1e3);
}

TEST(profile_h200_capture, digest_tells_the_strided_kernel_apart) {
  const auto ks = parse_ncu_csv(fixture("h200_probe_raw.csv"));
  const auto sass = parse_sass(fixture("h200_probe.sass"));
  ASSERT_EQ(sass.size(), 2u);
  ASSERT_NE(find_function(sass, ks[0].name), nullptr);
  ASSERT_NE(find_function(sass, ks[1].name), nullptr);
  EXPECT_EQ(find_function(sass, ks[1].name)->name, "_Z7stridedPKfPfi");
  const auto d = digest(ks, {.dram_bytes_per_s = 4.2e12}, &sass);
  ASSERT_EQ(d.kernels.size(), 2u);
  EXPECT_EQ(d.kernels[0].bound, "memory");
  EXPECT_DOUBLE_EQ(*d.kernels[0].ld_sectors_per_request, 4.0);
  EXPECT_EQ(d.kernels[1].bound, "latency");
  EXPECT_DOUBLE_EQ(*d.kernels[1].ld_sectors_per_request, 32.0);
  EXPECT_EQ(d.kernels[1].top_stalls.at(0).reason, "long_scoreboard");
  const auto text = to_text(d, &sass);
  EXPECT_NE(text.find("global loads 32.0 sectors/request"), std::string::npos) << text;
  EXPECT_NE(text.find("SASS: strided:"), std::string::npos) << text;
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 25) << text;
}
