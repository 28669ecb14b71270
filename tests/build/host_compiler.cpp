#include "build/compiler.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace kforge;

namespace {
const char* good = R"(#include <kforge/kernel.h>
KF_EXPORT int kf_forward(const kf_args* a) { (void)a; return sizeof(KF_REAL) == 8 ? 0 : 1; }
)";
} // namespace

TEST(host_compiler, builds_a_shared_object_and_caches_it) {
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cpp", good);
  auto a = build::compile_host({.source = d / "k.cpp", .real = KF_F32});
  ASSERT_TRUE(a.ok) << a.diagnostics;
  EXPECT_FALSE(a.cached);
  EXPECT_TRUE(std::filesystem::exists(a.library));
  EXPECT_NE(a.command.find("-march=native"), std::string::npos);
  EXPECT_NE(a.command.find("-fopenmp"), std::string::npos);
  EXPECT_NE(a.command.find("-DKF_REAL=float"), std::string::npos);
  EXPECT_FALSE(a.compiler.empty());
  EXPECT_EQ(a.cache_key.size(), 64u);

  auto b = build::compile_host({.source = d / "k.cpp", .real = KF_F32});
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(b.library, a.library);
  EXPECT_EQ(b.cache_key, a.cache_key);
}

TEST(host_compiler, key_depends_on_source_and_flags) {
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "k.cpp", good);
  auto f = build::compile_host({.source = d / "k.cpp", .real = KF_F32});
  auto g = build::compile_host({.source = d / "k.cpp", .real = KF_F64});
  EXPECT_NE(f.cache_key, g.cache_key);
  EXPECT_NE(g.command.find("-DKF_REAL=double"), std::string::npos);
  test::write(d / "k.cpp", std::string(good) + "// changed\n");
  auto h = build::compile_host({.source = d / "k.cpp", .real = KF_F32});
  EXPECT_NE(h.cache_key, f.cache_key);
  EXPECT_FALSE(h.cached);
}

TEST(host_compiler, a_compile_error_is_a_value_with_diagnostics) {
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "bad.cpp", "#include <kforge/kernel.h>\nKF_EXPORT int kf_forward(const kf_args* a) { return undefined_name; }\n");
  auto a = build::compile_host({.source = d / "bad.cpp"});
  EXPECT_FALSE(a.ok);
  EXPECT_TRUE(a.library.empty());
  EXPECT_NE(a.diagnostics.find("undefined_name"), std::string::npos);
  auto b = build::compile_host({.source = d / "bad.cpp"});
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.cached); // failures are cached too
  EXPECT_EQ(b.diagnostics, a.diagnostics);
}

TEST(host_compiler, missing_source_throws_naming_it) {
  test::cache_env env;
  try {
    (void)build::compile_host({.source = "/nonexistent/k.cpp"});
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/k.cpp"), std::string::npos);
  }
}

TEST(host_compiler, a_header_beside_the_source_is_part_of_the_key) {
  test::cache_env env;
  test::temp_dir d;
  test::write(d / "value.h", "#define VALUE 1\n");
  test::write(d / "k.cpp", "#include <kforge/kernel.h>\n#include \"value.h\"\nKF_EXPORT int kf_forward(const kf_args*) { return VALUE; }\n");
  auto a = build::compile_host({.source = d / "k.cpp"});
  ASSERT_TRUE(a.ok) << a.diagnostics;
  test::write(d / "value.h", "#define VALUE 2\n");
  auto b = build::compile_host({.source = d / "k.cpp"});
  EXPECT_NE(a.cache_key, b.cache_key);
  EXPECT_FALSE(b.cached);
}
