// `kforge doctor`: the layers this machine puts in force, as text and as JSON, and an exit
// status scripts can rely on.
#include "core/subprocess.hpp"
#include "device/backend.hpp"
#include "sandbox_util.hpp"

using namespace kforge;

TEST(doctor, json_lists_every_layer_and_the_exit_status_agrees) {
  ::setenv("KFORGE_CONFINE", test::confine_binary().c_str(), 1);
  ::unsetenv("KFORGE_SANDBOX");
  const auto r = run_command({test::kforge_binary().string(), "doctor", "--json"}, 120);
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["schema"], "kforge.doctor/1");
  const auto layers = sandbox::report_from_json(j["layers"]);
  ASSERT_EQ(layers.size(), sandbox::layer_names().size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].name, sandbox::layer_names()[i]);
    EXPECT_FALSE(layers[i].detail.empty());
  }
  EXPECT_EQ(j["landlock_abi"], sandbox::landlock_abi());
  EXPECT_TRUE(j["kernel"].is_string() && !j["kernel"].get<std::string>().empty());
  EXPECT_EQ(j["disabled"], false);
  EXPECT_EQ(j["missing"].get<std::vector<std::string>>(), sandbox::missing(layers));
  EXPECT_EQ(r.exit_code, sandbox::missing(layers).empty() ? 0 : 1) << r.output;
  // Whether CUDA problems are judged on the GPU here: without a device, why not.
  ASSERT_TRUE(j["gpu_path"]["available"].is_boolean()) << r.output;
  if (device::device_count(problem::backend_kind::cuda) == 0) {
    EXPECT_FALSE(j["gpu_path"]["available"].get<bool>());
    EXPECT_FALSE(j["gpu_path"]["why"].get<std::string>().empty());
  }
}

TEST(doctor, says_when_confinement_is_turned_off) {
  ::setenv("KFORGE_CONFINE", test::confine_binary().c_str(), 1);
  ::setenv("KFORGE_SANDBOX", "off", 1);
  const auto r = run_command({test::kforge_binary().string(), "doctor", "--json"}, 120);
  ::unsetenv("KFORGE_SANDBOX");
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_NE(j["disabled"].get<std::string>().find("KFORGE_SANDBOX=off"), std::string::npos);
  EXPECT_EQ(r.exit_code, 1);
  const auto text = run_command({test::kforge_binary().string(), "doctor"}, 120);
  EXPECT_NE(text.output.find("landlock_filesystem"), std::string::npos) << text.output;
}

TEST(doctor, names_the_reason_when_kforge_confine_is_missing) {
  ::setenv("KFORGE_CONFINE", "/nonexistent/kforge-confine", 1);
  const auto r = run_command({test::kforge_binary().string(), "doctor", "--json"}, 120);
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(r.exit_code, 1);
  for (auto& l : j["layers"]) {
    EXPECT_FALSE(l["active"].get<bool>());
    EXPECT_NE(l["detail"].get<std::string>().find("kforge-confine not found"), std::string::npos);
  }
  ::setenv("KFORGE_CONFINE", test::confine_binary().c_str(), 1);
}

TEST(doctor, bad_usage_is_exit_2) {
  const auto r = run_command({test::kforge_binary().string(), "doctor", "--no-such-flag"}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
}
