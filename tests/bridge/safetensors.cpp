// The safetensors files that carry tensors to and from the PyTorch bridge.
#include "bridge/safetensors.hpp"
#include "core/error.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using namespace kforge;

namespace {
std::vector<std::uint8_t> floats(std::initializer_list<float> v) {
  std::vector<std::uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}
} // namespace

TEST(safetensors, round_trips_tensors_and_metadata_in_order) {
  test::temp_dir d;
  const auto f = d / "t.safetensors";
  std::vector<bridge::named_tensor> in{{"y", KF_F32, {2, 2}, floats({1, 2, 3, 4})},
                                       {"idx", KF_I64, {3}, std::vector<std::uint8_t>(24, 7)},
                                       {"empty", KF_F64, {0, 5}, {}}};
  bridge::write_safetensors(f, in, {{"problem", "softmax"}});
  // The layout: 8-byte length, header padded to 8, data.
  std::ifstream raw(f, std::ios::binary);
  std::uint64_t n = 0;
  raw.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  std::map<std::string, std::string> meta;
  auto out = bridge::read_safetensors(f, &meta);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].name, "y");
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out[0].bytes, in[0].bytes);
  EXPECT_EQ(out[1].dtype, KF_I64);
  EXPECT_EQ(out[1].bytes, in[1].bytes);
  EXPECT_EQ(meta.at("problem"), "softmax");
}

TEST(safetensors, refuses_what_is_wrong_and_names_it) {
  test::temp_dir d;
  EXPECT_THROW(bridge::write_safetensors(d / "a", {{"x", KF_F32, {3}, floats({1, 2})}}), kforge::error);
  EXPECT_THROW(bridge::write_safetensors(d / "a", {{"x", KF_F32, {1}, floats({1})}, {"x", KF_F32, {1}, floats({1})}}),
               kforge::error);
  auto expect_bad = [&](const std::string& bytes, const std::string& needle) {
    const auto f = d / "bad";
    write_file_atomic(f, bytes);
    try {
      (void)bridge::read_safetensors(f);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const kforge::error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto file = [](const std::string& header, std::size_t data) {
    std::string s(8, '\0');
    const std::uint64_t n = header.size();
    std::memcpy(s.data(), &n, 8);
    return s + header + std::string(data, '\0');
  };
  expect_bad("abc", "too short");
  expect_bad(file("{\"x\":", 0), "not a JSON object");
  expect_bad(file(R"({"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1), "F8_E4M3");
  expect_bad(file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "4-byte data section");
  expect_bad(file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "need 12");
  expect_bad(file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
             "overlap");
  std::string trunc = file("{}", 0);
  trunc[0] = 100;
  expect_bad(trunc, "truncated");
}
