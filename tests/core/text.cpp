// Secrets scrubbed out of candidate text, and bytes that are not UTF-8 made showable.
#include "core/text.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

using namespace kforge;

using test::scoped_env;

TEST(secrets, names_that_look_secret) {
  for (auto n : {"OPENAI_API_KEY", "anthropic_api_key", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                 "MYSQL_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "hf_token"})
    EXPECT_TRUE(looks_secret(n)) << n;
  for (auto n : {"HOME", "PATH", "KFORGE_CACHE", "CUDA_VISIBLE_DEVICES", "LANG"}) EXPECT_FALSE(looks_secret(n)) << n;
}

TEST(secrets, a_printed_key_is_replaced_by_its_name) {
  scoped_env key("KFORGE_TEST_API_KEY", "sk-test-0123456789abcdef");
  const std::string printed = "oops: sk-test-0123456789abcdef\nand again sk-test-0123456789abcdef!";
  const auto s = scrub_secrets(printed);
  EXPECT_EQ(s.find("sk-test-0123456789abcdef"), std::string::npos) << s;
  EXPECT_EQ(s, "oops: [redacted:KFORGE_TEST_API_KEY]\nand again [redacted:KFORGE_TEST_API_KEY]!");
  EXPECT_EQ(scrub_secrets("nothing secret here"), "nothing secret here");
}

TEST(secrets, short_values_and_ordinary_names_are_left_alone) {
  scoped_env shortv("KFORGE_TEST_SHORT_TOKEN", "1234567"); // 7 characters: too short to tell from text
  scoped_env plain("KFORGE_TEST_PLAIN", "visible-value-123");
  EXPECT_EQ(scrub_secrets("1234567 visible-value-123"), "1234567 visible-value-123");
}

TEST(secrets, a_variable_an_llm_config_names_is_secret_whatever_its_name) {
  scoped_env v("KFORGE_TEST_LLM_VAR", "value-of-a-configured-key");
  EXPECT_EQ(scrub_secrets("x value-of-a-configured-key"), "x value-of-a-configured-key");
  add_secret_variable("KFORGE_TEST_LLM_VAR");
  EXPECT_EQ(scrub_secrets("x value-of-a-configured-key"), "x [redacted:KFORGE_TEST_LLM_VAR]");
}

TEST(secrets, the_longer_of_two_overlapping_values_is_replaced_whole) {
  scoped_env a("KFORGE_TEST_A_KEY", "abcdefgh");
  scoped_env b("KFORGE_TEST_B_KEY", "abcdefgh-and-more");
  EXPECT_EQ(scrub_secrets("abcdefgh-and-more abcdefgh"), "[redacted:KFORGE_TEST_B_KEY] [redacted:KFORGE_TEST_A_KEY]");
}

TEST(secrets, json_stays_valid_and_escaped_values_are_found) {
  scoped_env key("KFORGE_TEST_JSON_TOKEN", "tok\"en\\with-quotes");
  scoped_env num("KFORGE_TEST_NUM_KEY", "123456789");
  nlohmann::json j{{"output", "printed tok\"en\\with-quotes"}, {"n", 123456789}, {"s", "123456789"}};
  const auto text = j.dump();
  ASSERT_NE(text.find("tok\\\"en\\\\with-quotes"), std::string::npos); // escaped in the document
  const auto s = scrub_secrets_json(text);
  auto back = nlohmann::json::parse(s); // still JSON
  EXPECT_EQ(back["output"], "printed [redacted:KFORGE_TEST_JSON_TOKEN]");
  EXPECT_EQ(back["n"], 123456789); // a number is not candidate text: left as it is
  EXPECT_EQ(back["s"], "[redacted:KFORGE_TEST_NUM_KEY]");
  // Text that is not JSON is scrubbed as text.
  EXPECT_EQ(scrub_secrets_json("{broken 123456789"), "{broken [redacted:KFORGE_TEST_NUM_KEY]");
  // As plain text, the escaped form is found too.
  EXPECT_EQ(scrub_secrets(text).find("with-quotes"), std::string::npos);
}

TEST(utf8, validity) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")); // été € 😀
  EXPECT_FALSE(is_valid_utf8("\xff\xfe"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));     // a UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80")); // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));         // cut short
}

TEST(utf8, stray_bytes_become_replacement_characters_and_json_can_hold_them) {
  const std::string bad = "ok \xff\xfe end \xc3\xa9";
  const auto fixed = to_valid_utf8(bad);
  EXPECT_EQ(fixed, "ok \xEF\xBF\xBD\xEF\xBF\xBD end \xc3\xa9");
  EXPECT_TRUE(is_valid_utf8(fixed));
  EXPECT_NO_THROW((void)nlohmann::json(fixed).dump());
  EXPECT_EQ(to_valid_utf8("fine \xc3\xa9"), "fine \xc3\xa9");
}

TEST(utf8, printable_paths_keep_stray_bytes_apart) {
  EXPECT_EQ(printable_path("/tmp/\xff.cpp"), "/tmp/\\xff.cpp");
  EXPECT_NE(printable_path("\xfe.cpp"), printable_path("\xff.cpp"));
  EXPECT_EQ(printable_path("/tmp/caf\xc3\xa9.cpp"), "/tmp/caf\xc3\xa9.cpp");
}
