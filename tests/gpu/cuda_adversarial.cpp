// The CUDA adversarial suite (tests/adversarial/cuda/), against tests/gpu/problems. Label: gpu.
#include "adversarial_suite.hpp"

using namespace kforge;
using test::adversary;

namespace {
class cuda_adversarial : public ::testing::TestWithParam<adversary> {};
std::filesystem::path gpu_problems() { return test::source_dir() / "tests" / "gpu" / "problems"; }
} // namespace

TEST_P(cuda_adversarial, is_rejected_for_the_declared_reason) { test::expect_rejected(GetParam(), gpu_problems()); }

INSTANTIATE_TEST_SUITE_P(cuda, cuda_adversarial, ::testing::ValuesIn(test::load_suite("cuda")), test::test_name);

// Python candidates (ModelNew, with torch and Triton) that cheat on the GPU.
INSTANTIATE_TEST_SUITE_P(python_cuda, cuda_adversarial, ::testing::ValuesIn(test::load_suite("python_cuda")),
                         test::test_name);
