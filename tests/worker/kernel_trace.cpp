// What ran: kernel names classified by library, and CUPTI records summarised per call. (The
// trace itself needs a GPU: tests/gpu/python_candidate.cpp.)
#include "worker/kernel_trace.hpp"

#include <gtest/gtest.h>

using namespace kforge::worker;

TEST(kernel_trace, library_names_are_recognised_and_custom_kernels_name_none) {
  EXPECT_EQ(library_of("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(Params)"), "CUTLASS");
  EXPECT_EQ(library_of("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT"), "cuBLAS");
  EXPECT_EQ(library_of("ampere_sgemm_128x64_nn"), "cuBLAS");
  EXPECT_EQ(library_of("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1"), "cuBLAS");
  EXPECT_EQ(library_of("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw"), "cuDNN");
  EXPECT_EQ(library_of("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, float const*, int)"),
            "ATen");
  EXPECT_EQ(library_of("void at::native::vectorized_elementwise_kernel<4, at::native::direct_copy_kernel_cuda>"), "ATen");
  EXPECT_EQ(library_of("softmax_rows"), "");
  EXPECT_EQ(library_of("_kernel"), ""); // a Triton kernel keeps the Python function's name
}

TEST(kernel_trace, records_group_by_name_per_call_with_the_most_time_first) {
  const std::vector<kernel_record> recs = {{"copy", 1e-6}, {"softmax_rows", 9e-6}, {"copy", 1e-6},
                                           {"softmax_rows", 11e-6}, {"copy", 2e-6}, {"copy", 2e-6}};
  const auto j = summarize_kernels(recs, 2);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["name"], "softmax_rows");
  EXPECT_DOUBLE_EQ(j[0]["launches"].get<double>(), 1.0);
  EXPECT_NEAR(j[0]["gpu_s"].get<double>(), 10e-6, 1e-12);
  EXPECT_EQ(j[0]["library"], "");
  EXPECT_EQ(j[1]["name"], "copy");
  EXPECT_DOUBLE_EQ(j[1]["launches"].get<double>(), 2.0);
  EXPECT_NEAR(j[1]["gpu_s"].get<double>(), 3e-6, 1e-12);
  EXPECT_TRUE(summarize_kernels({}, 3).empty());
}
