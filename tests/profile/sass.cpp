// profile/sass: the instruction mix of cuobjdump -sass listings.
#include "profile/sass.hpp"

#include "test_util.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace kforge::profile;

namespace {
std::string fixture(const std::string& name) { return kforge::test::read_test_file("profile/data/" + name); }
} // namespace

TEST(profile_sass, counts_the_fixture_functions) {
  const auto fns = parse_sass(fixture("probe.sass"));
  ASSERT_EQ(fns.size(), 2u);
  const auto& s = fns[0];
  EXPECT_EQ(s.name, "_Z12softmax_rowsPKfPfii");
  EXPECT_EQ(s.demangled, "softmax_rows(float const*, float*, int, int)");
  EXPECT_EQ(s.arch, "sm_90a");
  EXPECT_EQ(s.instructions, 22); // encoding-only lines and the ".........." trailer are not instructions
  EXPECT_EQ(s.opcodes.at("LDG"), 4);
  EXPECT_EQ(s.opcodes.at("EXIT"), 2); // one predicated
  EXPECT_EQ(s.opcodes.at("BAR"), 2);
  EXPECT_EQ(s.global_loads, 4);
  EXPECT_EQ(s.global_load_bytes, (std::map<int, int>{{4, 2}, {16, 2}}));
  EXPECT_EQ(s.global_stores, 1);
  EXPECT_EQ(s.global_store_bytes, (std::map<int, int>{{4, 1}}));
  EXPECT_EQ(s.local_loads, 1);
  EXPECT_EQ(s.local_stores, 2);
  EXPECT_EQ(s.shared_loads, 1);
  EXPECT_EQ(s.shared_stores, 1);
  EXPECT_EQ(s.barriers, 2);
  EXPECT_EQ(s.hgmma, 0);
  EXPECT_TRUE(vectorized_loads(s));

  const auto& g = fns[1];
  EXPECT_EQ(g.name, "gemm_wgmma");
  EXPECT_EQ(g.demangled, "gemm_wgmma");
  EXPECT_EQ(g.instructions, 12);
  EXPECT_EQ(g.hgmma, 2);
  EXPECT_EQ(g.tma, 1);
  EXPECT_EQ(g.barriers, 1);
  EXPECT_EQ(g.global_loads, 0);
  EXPECT_EQ(g.global_store_bytes, (std::map<int, int>{{2, 1}, {8, 1}}));
  EXPECT_FALSE(vectorized_loads(g));
}

TEST(profile_sass, widths_predicates_and_modifiers) {
  const std::string text = "Function : k\n"
                           "/*0000*/ @!P1 LDG.E.U8 R0, desc[UR4][R2.64] ;\n"
                           "/*0010*/ LDG.E.S16 R0, desc[UR4][R2.64] ;\n"
                           "/*0020*/ LDG.E.64.CONSTANT R0, desc[UR4][R2.64] ;\n"
                           "/*0030*/ LDG.E.LTC128B.128 R0, desc[UR4][R2.64] ;\n"  // LTC128B is a cache hint, .128 the width
                           "/*0040*/ LDG.E.ENL2.256 R0, R4, desc[UR4][R2.64] ;\n"
                           "/*0050*/ LDGSTS.E.BYPASS.LTC128B.128 [R5], desc[UR4][R2.64] ;\n"
                           "/*0060*/ @P0 STG.E.128 desc[UR4][R2.64], R4 ;\n"
                           "/*0070*/ HMMA.16816.F32.BF16 R4, R8, R12, R4 ;\n"
                           "/*0080*/ IMMA.16832.S8.S8 R4, R8, R12, R4 ;\n"
                           "/*0090*/ UBLKCP.S.G [UR4], [UR6], UR8 ;\n";
  const auto fns = parse_sass(text);
  ASSERT_EQ(fns.size(), 1u);
  const auto& f = fns[0];
  EXPECT_EQ(f.instructions, 10);
  EXPECT_EQ(f.global_loads, 6);
  EXPECT_EQ(f.global_load_bytes, (std::map<int, int>{{1, 1}, {2, 1}, {8, 1}, {16, 2}, {32, 1}}));
  EXPECT_EQ(f.global_store_bytes, (std::map<int, int>{{16, 1}}));
  EXPECT_EQ(f.hmma, 1);
  EXPECT_EQ(f.imma, 1);
  EXPECT_EQ(f.tma, 1);
}

TEST(profile_sass, nvdisasm_layout_and_no_functions) {
  const std::string text = "\t.section\t.text._Z3addPfS_,\"ax\",@progbits\n"
                           "\t.type\t_Z3addPfS_,@function\n"
                           ".text._Z3addPfS_:\n"
                           "        /*0000*/                   LDG.E R2, desc[UR4][R2.64] ;\n"
                           ".L_x_0:\n"
                           "        /*0010*/                   STG.E desc[UR4][R4.64], R2 ;\n"
                           "        /*0020*/                   EXIT ;\n";
  const auto fns = parse_sass(text);
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0].name, "_Z3addPfS_");
  EXPECT_EQ(fns[0].demangled, "add(float*, float*)");
  EXPECT_EQ(fns[0].instructions, 3);
  EXPECT_TRUE(parse_sass("cuobjdump info    : File 'x.so' does not contain device code\n").empty());
}

TEST(profile_sass, names_match_across_demanglers) {
  EXPECT_EQ(base_name("_Z12softmax_rowsPKfPfii"), "softmax_rows");
  EXPECT_EQ(base_name("softmax_rows(const float *, float *, int, int)"), "softmax_rows");
  EXPECT_EQ(base_name("void finalize<128, \"sum\">(float *, int)"), "finalize");
  EXPECT_EQ(base_name("void ns::k<(int)4>(float const*)"), "ns::k");
  EXPECT_EQ(base_name("gemm_wgmma"), "gemm_wgmma");
  const auto fns = parse_sass(fixture("probe.sass"));
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(find_function(fns, "softmax_rows(const float *, float *, int, int)"), &fns[0]); // ncu's spelling
  EXPECT_EQ(find_function(fns, "_Z12softmax_rowsPKfPfii"), &fns[0]);
  EXPECT_EQ(find_function(fns, "gemm_wgmma"), &fns[1]);
  EXPECT_EQ(find_function(fns, "other_kernel(int)"), nullptr);
}

TEST(profile_sass, summary_and_json) {
  const auto fns = parse_sass(fixture("probe.sass"));
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(summarize(fns[0]),
            "softmax_rows: 22 instr; global loads 4B x2 16B x2; stores 4B x1; LDL/STL 1/2 (local memory: register "
            "spills or stack arrays); HGMMA 0, HMMA 0; BAR 2; LDS/STS 1/1");
  EXPECT_EQ(summarize(fns[1]),
            "gemm_wgmma: 12 instr; global loads none; stores 2B x1 8B x1; LDL/STL 0/0 (no local memory); HGMMA 2, "
            "HMMA 0; BAR 1; TMA 1");
  const auto all = summarize(fns);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1);
  const auto j = to_json(fns[0]);
  EXPECT_EQ(j["instructions"], 22);
  EXPECT_EQ(j["global_load_bytes"]["16"], 2);
  EXPECT_EQ(j["opcodes"]["LDG"], 4);
  EXPECT_EQ(j["vectorized_loads"], true);
  EXPECT_EQ(j["demangled"], "softmax_rows(float const*, float*, int, int)");
}

TEST(sass_names, ncu_and_the_demangler_spell_the_anonymous_namespace_differently) {
  EXPECT_EQ(kforge::profile::base_name("<unnamed>::softmax_rows(const float *, float *, long)"), "softmax_rows");
  EXPECT_EQ(kforge::profile::base_name("(anonymous namespace)::softmax_rows(float const*, float*, long)"), "softmax_rows");
}
