// The template language of src/propose/template.hpp: values, sections, partials,
// standalone lines, and errors that name the file and line.
// To add a case: write the template with put(), render it with render(), assert the text.
#include "core/error.hpp"
#include "propose/template.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

using namespace kforge;
using nlohmann::json;
using propose::template_set;

namespace {

struct templates {
  test::temp_dir dir;
  void put(const std::string& name, const std::string& text) { test::write(dir / (name + ".md"), text); }
  std::string render(const std::string& text, const json& ctx, propose::template_options o = {}) {
    put("t", text);
    return template_set(dir.path, o).render("t", ctx);
  }
  /// The message of the kforge::error that rendering `text` throws ("" when none).
  std::string error_of(const std::string& text, const json& ctx = json::object(), propose::template_options o = {}) {
    try {
      (void)render(text, ctx, o);
    } catch (const kforge::error& e) {
      EXPECT_EQ(e.kind(), error_kind::usage);
      return e.what();
    }
    return "";
  }
  std::string file(const std::string& name) const { return (dir / (name + ".md")).string(); }
};

} // namespace

TEST(template_values, names_dotted_names_and_dot) {
  templates t;
  json ctx{{"name", "softmax"}, {"a", {{"b", {{"c", "deep"}}}}}, {"list", {"x", "y"}}};
  EXPECT_EQ(t.render("{{name}} {{ a.b.c }} {{#list}}[{{.}}]{{/list}}", ctx), "softmax deep [x][y]");
}

TEST(template_values, numbers_print_compactly_and_strings_verbatim) {
  templates t;
  json ctx{{"i", 42}, {"half", 0.5}, {"tiny", 1.5e-7}, {"big", 2147483648.0}, {"neg", -3},
           {"html", "<a & \"b\">"}, {"yes", true}, {"none", nullptr}, {"arr", {1, 2}}};
  EXPECT_EQ(t.render("{{i}} {{half}} {{tiny}} {{big}} {{neg}}", ctx), "42 0.5 1.5e-07 2147483648 -3");
  EXPECT_EQ(t.render("{{html}} {{&html}} {{{html}}}", ctx), "<a & \"b\"> <a & \"b\"> <a & \"b\">");
  EXPECT_EQ(t.render("[{{yes}}][{{none}}][{{arr}}]", ctx), "[true][][[1,2]]");
}

TEST(template_values, inserted_text_is_never_parsed_again) {
  templates t;
  EXPECT_EQ(t.render("{{code}}", {{"code", "int a[2][2] = {{1, 2}, {3, 4}}; // {{#x}}"}}),
            "int a[2][2] = {{1, 2}, {3, 4}}; // {{#x}}");
}

TEST(template_sections, arrays_iterate_with_outer_names_visible) {
  templates t;
  json ctx{{"problem", "p"}, {"tensors", {{{"name", "x"}, {"shape", "[4]"}}, {{"name", "y"}, {"shape", "[2]"}}}}};
  EXPECT_EQ(t.render("{{#tensors}}{{problem}}.{{name}}{{shape}};{{/tensors}}", ctx), "p.x[4];p.y[2];");
}

TEST(template_sections, objects_push_true_renders_once_falsy_values_skip) {
  templates t;
  json ctx{{"dev", {{"name", "H200"}}}, {"on", true}, {"off", false}, {"empty", json::array()},
           {"blank", ""}, {"zero", 0}, {"nothing", nullptr}, {"obj", json::object()}, {"word", "hi"}};
  EXPECT_EQ(t.render("{{#dev}}{{name}}{{/dev}}", ctx), "H200");
  EXPECT_EQ(t.render("{{#on}}A{{/on}}{{#off}}B{{/off}}{{#empty}}C{{/empty}}{{#blank}}D{{/blank}}"
                     "{{#nothing}}E{{/nothing}}{{#obj}}F{{/obj}}{{#missing}}G{{/missing}}{{#zero}}H{{/zero}}",
                     ctx),
            "AH");
  EXPECT_EQ(t.render("{{#word}}<{{.}}>{{/word}}", ctx), "<hi>");
  EXPECT_EQ(t.render("{{^on}}A{{/on}}{{^off}}B{{/off}}{{^empty}}C{{/empty}}{{^missing}}D{{/missing}}"
                     "{{^zero}}E{{/zero}}{{^dev}}F{{/dev}}",
                     ctx),
            "BCD");
}

TEST(template_sections, dotted_section_names_and_nesting) {
  templates t;
  json ctx{{"device", {{"calibrated", true}, {"roofline", {{"floor", "534 us"}, {"bound", "memory"}}}}}};
  EXPECT_EQ(t.render("{{#device.calibrated}}{{#device.roofline}}{{floor}} {{bound}}{{/device.roofline}}"
                     "{{/device.calibrated}}",
                     ctx),
            "534 us memory");
}

TEST(template_standalone, block_tags_on_their_own_line_leave_no_blank_lines) {
  templates t;
  json ctx{{"items", {"a", "b"}}, {"off", false}};
  EXPECT_EQ(t.render("head\n{{#items}}\n- {{.}}\n{{/items}}\n{{! a comment }}\n  {{^off}}  \nshown\n  {{/off}}\ntail\n",
                     ctx),
            "head\n- a\n- b\nshown\ntail\n");
  // A tag sharing its line with text is not standalone: the line keeps its newline.
  EXPECT_EQ(t.render("x {{#off}}y{{/off}}\nz", ctx), "x \nz");
  // A variable alone on a line is not standalone either.
  EXPECT_EQ(t.render("{{#items}}\n{{.}}\n{{/items}}\n", ctx), "a\nb\n");
  // A comment may span lines.
  EXPECT_EQ(t.render("a\n{{! one\n two }}\nb", ctx), "a\nb");
}

TEST(template_partials, render_in_the_current_context_with_indentation) {
  templates t;
  t.put("item", "* {{name}}\n");
  t.put("list", "{{#xs}}\n{{> item}}\n{{/xs}}\n");
  EXPECT_EQ(t.render("Items:\n{{> list}}\nend", {{"xs", {{{"name", "a"}}, {{"name", "b"}}}}}),
            "Items:\n* a\n* b\nend");
  t.put("two", "one\ntwo\n");
  EXPECT_EQ(t.render("<\n  {{> two}}\n>", json::object()), "<\n  one\n  two\n>");
  EXPECT_EQ(t.render("[{{> two}}]", json::object()), "[one\ntwo\n]");
}

TEST(template_errors, unclosed_section_names_file_and_line) {
  templates t;
  const auto m = t.error_of("a\nb\n{{#items}}\nc\n");
  EXPECT_NE(m.find(t.file("t") + ":3:"), std::string::npos) << m;
  EXPECT_NE(m.find("never closed"), std::string::npos) << m;
}

TEST(template_errors, mismatched_and_stray_close_tags) {
  templates t;
  auto m = t.error_of("{{#a}}\n{{#b}}\n{{/a}}\n");
  EXPECT_NE(m.find(t.file("t") + ":3:"), std::string::npos) << m;
  EXPECT_NE(m.find("does not match the open section '{{#b}}' from line 2"), std::string::npos) << m;
  m = t.error_of("x\n{{/a}}");
  EXPECT_NE(m.find(t.file("t") + ":2:"), std::string::npos) << m;
  EXPECT_NE(m.find("not open"), std::string::npos) << m;
}

TEST(template_errors, unclosed_tag_and_bad_names) {
  templates t;
  auto m = t.error_of("ok\n{{name\n");
  EXPECT_NE(m.find(t.file("t") + ":2:"), std::string::npos) << m;
  m = t.error_of("{{a b}}");
  EXPECT_NE(m.find(":1: bad name 'a b'"), std::string::npos) << m;
  m = t.error_of("{{}}");
  EXPECT_NE(m.find("empty tag"), std::string::npos) << m;
  m = t.error_of("\n{{! see {{#x}} }}");
  EXPECT_NE(m.find(":2: a comment cannot hold '{{'"), std::string::npos) << m;
}

TEST(template_errors, unknown_variable_when_strict_names_what_is_there) {
  templates t;
  auto m = t.error_of("line 1\n{{problem.nmae}}", {{"problem", {{"name", "x"}}}});
  EXPECT_NE(m.find(t.file("t") + ":2: unknown variable 'problem.nmae'"), std::string::npos) << m;
  EXPECT_NE(m.find("it has: name"), std::string::npos) << m;
  m = t.error_of("{{missing}}", {{"present", 1}});
  EXPECT_NE(m.find("no 'missing' in scope"), std::string::npos) << m;
  // Not strict: empty. A missing name in a section is falsy either way.
  EXPECT_EQ(t.render("[{{missing}}]", json::object(), {.strict = false}), "[]");
  EXPECT_EQ(t.render("[{{#missing}}x{{/missing}}]", json::object()), "[]");
}

TEST(template_errors, partial_errors_name_the_partial_file_and_the_chain) {
  templates t;
  auto m = t.error_of("a\n\n{{> nowhere}}");
  EXPECT_NE(m.find(t.file("t") + ":3: partial 'nowhere' not found"), std::string::npos) << m;

  t.put("inner", "ok\n{{oops}}\n");
  m = t.error_of("{{> inner}}");
  EXPECT_NE(m.find(t.file("inner") + ":2: unknown variable 'oops'"), std::string::npos) << m;
  EXPECT_NE(m.find("rendering t > inner"), std::string::npos) << m;

  t.put("broken", "{{#x}}");
  m = t.error_of("{{> broken}}");
  EXPECT_NE(m.find(t.file("broken") + ":1:"), std::string::npos) << m;

  t.put("loop", "{{> loop}}");
  m = t.error_of("{{> loop}}");
  EXPECT_NE(m.find("deeper than 16"), std::string::npos) << m;
  EXPECT_NE(m.find(t.file("loop") + ":1:"), std::string::npos) << m;
}

TEST(template_errors, unknown_template_and_missing_directory) {
  templates t;
  t.put("system", "s");
  t.put("fix", "f");
  try {
    (void)template_set(t.dir.path).render("implemnt", json::object());
    FAIL() << "no error";
  } catch (const kforge::error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("no template 'implemnt'"), std::string::npos) << m;
    EXPECT_NE(m.find("fix, system"), std::string::npos) << m;
  }
  EXPECT_THROW(template_set(t.dir / "absent"), kforge::error);
  EXPECT_THROW((void)template_set(t.dir.path).render("../x", json::object()), kforge::error);
}
