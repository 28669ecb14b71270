#include "build/compiler.hpp"
#include "device/calibration.hpp"

#include <gtest/gtest.h>

using namespace kforge;

TEST(resource_report, parses_ptxas_verbose_output_per_kernel) {
  const std::string diag = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4tilePKfPfl' for 'sm_90a'
ptxas info    : Function properties for _Z4tilePKfPfl
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function '_Z3tinyv' for 'sm_90a'
ptxas info    : Function properties for _Z3tinyv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 4 registers, used 0 barriers, 352 bytes cmem[0]
)";
  auto r = build::parse_resource_report(diag);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["kernel"], "_Z4tilePKfPfl");
  EXPECT_EQ(r[0]["registers"], 64);
  EXPECT_EQ(r[0]["smem_bytes"], 8192);
  EXPECT_EQ(r[0]["stack_bytes"], 16);
  EXPECT_EQ(r[0]["spill_store_bytes"], 8);
  EXPECT_EQ(r[0]["spill_load_bytes"], 12);
  EXPECT_EQ(r[1]["registers"], 4);
  EXPECT_EQ(r[1]["smem_bytes"], 0);
  EXPECT_TRUE(build::parse_resource_report("g++ said nothing").empty());
}

TEST(nvcc_build, compiles_for_sm90a_without_a_gpu) {
  // nvcc is on the build machine (not necessarily a GPU): the toolchain must work there.
  // The seed declares a tunable parameter: compile() builds it at its default.
  auto a = build::compile({.source = std::filesystem::path(KFORGE_SOURCE_DIR) / "problems" / "softmax" / "seed.cu"},
                          build::problem_backend::cuda);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_NE(a.command.find("-gencode=arch=compute_90a,code=sm_90a"), std::string::npos);
  ASSERT_FALSE(a.resources.empty());
  EXPECT_GT(a.resources[0]["registers"].get<int>(), 0);
  EXPECT_EQ(a.command.find("-lcublas"), std::string::npos); // vendor libraries only when used
}

TEST(roofline, floor_is_the_larger_of_memory_and_compute_time) {
  device::ceilings c;
  c.copy_bytes_per_s = 4e12;
  c.fp32_flops = 50e12;
  c.fp64_flops = 60e12;
  auto mem = device::roofline_of(c, 1e9, 4e9, KF_F32, 2e-3); // 1 ms of bytes, 0.02 ms of flops
  ASSERT_TRUE(mem.has_value());
  EXPECT_DOUBLE_EQ(mem->floor_s, 1e-3);
  EXPECT_EQ(mem->bound, "memory");
  EXPECT_DOUBLE_EQ(mem->fraction, 0.5);
  auto comp = device::roofline_of(c, 120e9, 1e6, KF_F64, 4e-3); // 2 ms of fp64 flops
  EXPECT_EQ(comp->bound, "compute");
  EXPECT_DOUBLE_EQ(comp->floor_s, 2e-3);
  EXPECT_FALSE(device::roofline_of(c, 0, 0, KF_F32, 1e-3).has_value());
}

TEST(calibration, cache_file_is_per_device_model) {
  auto a = device::calibration_path("NVIDIA H200 (sm_90, 132 SMs, 140 GiB, L2 60 MiB)");
  auto b = device::calibration_path("NVIDIA H200 (sm_90, 132 SMs, 139 GiB, L2 60 MiB)");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.filename(), "nvidia_h200.json");
  device::ceilings c;
  c.device = "X";
  c.fp32_flops = 3;
  auto back = device::ceilings_from_json(device::to_json(c));
  EXPECT_EQ(back.fp32_flops, 3);
  EXPECT_EQ(back.device, "X");
}

TEST(nvcc_build, cute_headers_are_on_the_include_path) {
  ASSERT_FALSE(build::cutlass_include_dir().empty()) << "run scripts/setup.sh --deps to unpack CUTLASS";
  auto a = build::compile_nvcc({.source = std::filesystem::path(KFORGE_SOURCE_DIR) / "examples" / "softmax_cute.cu"});
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_NE(a.command.find("cutlass"), std::string::npos);
}
