#include "core/dtype.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace kforge;

TEST(dtype, names_round_trip) {
  for (kf_dtype t : {KF_F16, KF_BF16, KF_F32, KF_F64, KF_I8, KF_I32, KF_I64, KF_U8, KF_BOOL}) {
    auto back = dtype_from_name(dtype_name(t));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, t);
  }
  EXPECT_FALSE(dtype_from_name("float32").has_value());
}

TEST(dtype, sizes_and_reals) {
  EXPECT_EQ(dtype_size(KF_F16), 2u);
  EXPECT_EQ(dtype_size(KF_F64), 8u);
  EXPECT_EQ(dtype_size(KF_BOOL), 1u);
  EXPECT_TRUE(dtype_is_real(KF_BF16));
  EXPECT_FALSE(dtype_is_real(KF_I32));
  EXPECT_EQ(dtype_c_name(KF_F32), "float");
  EXPECT_EQ(dtype_c_name(KF_F64), "double");
}

TEST(dtype, half_and_bfloat16_round_to_nearest) {
  unsigned char buf[2];
  for (double v : {0.0, 1.0, -2.5, 65504.0, 6.103515625e-05, 3.0517578125e-05, 0.1}) {
    store_from_double(buf, KF_F16, 0, v);
    const double back = load_as_double(buf, KF_F16, 0);
    EXPECT_NEAR(back, v, std::fabs(v) * dtype_epsilon(KF_F16) + 6e-8) << v;
  }
  store_from_double(buf, KF_F16, 0, 1e6);
  EXPECT_TRUE(std::isinf(load_as_double(buf, KF_F16, 0)));
  store_from_double(buf, KF_BF16, 0, 1.0 + 1.0 / 512); // halfway below 1+2^-7: rounds to even (1.0)
  EXPECT_EQ(load_as_double(buf, KF_BF16, 0), 1.0);
  store_from_double(buf, KF_BF16, 0, 3.0e38);
  EXPECT_NEAR(load_as_double(buf, KF_BF16, 0), 3.0e38, 3.0e38 * 0.004);
}

TEST(dtype, integers_and_floats_store_exactly) {
  long long i64 = 0;
  store_from_double(&i64, KF_I64, 0, -123456789.0);
  EXPECT_EQ(i64, -123456789);
  float f = 0;
  store_from_double(&f, KF_F32, 0, 0.1);
  EXPECT_EQ(f, 0.1f);
}
