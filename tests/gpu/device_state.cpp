// Device state a candidate's call can leave behind (label: gpu): a persisting-L2 set-aside
// shrinks the L2 every other process sees, the reference's timing process included, and an
// access-policy window keeps the candidate's own data resident for its next sample, and the
// timing stream's other attributes (priority, synchronization policy) would carry into the next
// sample. The CUDA backend undoes all of them before and after every timed call.
#include "device/backend.hpp"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

using namespace kforge;

TEST(gpu_device_state, l2_set_aside_window_priority_and_sync_policy_do_not_outlive_a_timed_call) {
  auto dev = device::make_backend(problem::backend_kind::cuda);
  const std::size_t bytes = std::size_t{4} << 20;
  void* buf = dev->allocate(bytes);
  auto stream = static_cast<cudaStream_t>(dev->stream());
  std::size_t inside = 0;
  int rc = -1;
  // What a candidate would do in its call: set aside L2 for persisting lines, and mark its data.
  (void)dev->time_call(
      [&] {
        if (cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes) != cudaSuccess) return 1;
        cudaStreamAttrValue w{};
        w.accessPolicyWindow.base_ptr = buf;
        w.accessPolicyWindow.num_bytes = bytes;
        w.accessPolicyWindow.hitRatio = 1.0f;
        w.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
        w.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
        if (cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &w) != cudaSuccess) return 2;
        cudaStreamAttrValue p{};
        p.syncPolicy = cudaSyncPolicySpin;
        if (cudaStreamSetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &p) != cudaSuccess) return 3;
        int least = 0, greatest = 0;
        cudaDeviceGetStreamPriorityRange(&least, &greatest);
        p.priority = greatest;
        if (cudaStreamSetAttribute(stream, cudaStreamAttributePriority, &p) != cudaSuccess) return 4;
        cudaDeviceGetLimit(&inside, cudaLimitPersistingL2CacheSize);
        return 0;
      },
      &rc);
  ASSERT_EQ(rc, 0) << "this GPU refused the set-aside or a stream attribute (" << rc << "): the test shows nothing here";
  EXPECT_GT(inside, 0u) << "the call could set it";
  std::size_t after = 1;
  ASSERT_EQ(cudaDeviceGetLimit(&after, cudaLimitPersistingL2CacheSize), cudaSuccess);
  EXPECT_EQ(after, 0u) << "the set-aside outlived the timed call";
  cudaStreamAttrValue v{};
  ASSERT_EQ(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v), cudaSuccess);
  EXPECT_EQ(v.accessPolicyWindow.num_bytes, 0u) << "the window outlived the timed call";
  ASSERT_EQ(cudaStreamGetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &v), cudaSuccess);
  EXPECT_NE(v.syncPolicy, cudaSyncPolicySpin) << "the synchronization policy outlived the timed call";
  int least = 0, greatest = 0;
  cudaDeviceGetStreamPriorityRange(&least, &greatest);
  ASSERT_EQ(cudaStreamGetAttribute(stream, cudaStreamAttributePriority, &v), cudaSuccess);
  if (least != greatest) EXPECT_EQ(v.priority, least) << "the raised priority outlived the timed call";
  dev->release(buf);
}
