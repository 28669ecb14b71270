#pragma once
// Prompt templates kept as files: a small Mustache subset rendered over nlohmann::json.
//   propose::template_set t("prompts");                       // prompts/NAME.md
//   std::string s = t.render("fix", {{"attempt", 2}, {"problem", {{"name", "softmax"}}}});
//
// The language (every tag is `{{...}}`; spaces inside the braces are ignored):
//   {{name}}  {{a.b.c}}   the value at that name. A name is looked up in the innermost
//                         context first, then outward (names of enclosing sections stay
//                         visible); the rest of a dotted name is looked up inside the first
//                         part only. {{.}} is the current context itself.
//                         Strings are inserted verbatim (no HTML escaping, never re-parsed);
//                         integers, and doubles with an integral value under 1e15, print as
//                         integers, other doubles with 6 significant digits ({:.6g});
//                         true/false print as such, null as nothing, arrays and objects as JSON.
//                         {{&name}} and {{{name}}} are accepted and mean the same.
//   {{#name}}...{{/name}} renders its body when the value is truthy: a non-empty array
//                         renders once per element with the element as the innermost context;
//                         a non-empty object renders once with it pushed; true renders once;
//                         a non-empty string or any number renders once with it pushed.
//                         Falsy: missing, null, false, "", [], {}. (0 is truthy: test a bool.)
//   {{^name}}...{{/name}} renders its body when the value is falsy.
//   {{> other}}           the template `other.md` from the same directory, rendered in the
//                         current context; nesting deeper than max_partial_depth is an error
//                         (a partial that includes itself).
//   {{! comment}}         nothing; may span lines.
// A section, inverted, close, partial or comment tag alone on its line (spaces around it
// allowed) is *standalone*: the whole line, newline included, disappears, so block tags
// leave no blank lines. A standalone partial is indented by the whitespace before its tag.
// Not supported: set-delimiter tags, lambdas; a literal "{{" cannot be written in a template.
//
// Errors throw kforge::error (usage) as "FILE:LINE: what is wrong", FILE being the template
// or partial that holds the tag: a tag never closed with }}, an unclosed section, a close
// tag that does not match, a missing partial, too-deep partials, and, when strict (the
// default), a variable that is not found (a missing name in a *section* is just falsy).
// Templates are read on every render, so an edited file takes effect at once.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace kforge::propose {

struct template_options {
  bool strict = true;         // {{name}} with no value anywhere is an error (else renders as "")
  int max_partial_depth = 16; // partials inside partials, counted from the template rendered
};

class template_set {
public:
  /// @throws kforge::error (usage) when `dir` is not a directory.
  explicit template_set(std::filesystem::path dir, template_options opts = {});

  /// Renders `dir/NAME.md` with `context` as the outermost context.
  /// @throws kforge::error (usage) "FILE:LINE: reason" (see the header comment); for an unknown
  /// NAME, the templates the directory has.
  [[nodiscard]] std::string render(const std::string& name, const nlohmann::json& context) const;

  /// @return the file NAME renders from: dir/NAME.md.
  [[nodiscard]] std::filesystem::path path_of(const std::string& name) const;
  [[nodiscard]] const std::filesystem::path& dir() const { return m_dir; }
  [[nodiscard]] const template_options& options() const { return m_opts; }

private:
  std::filesystem::path m_dir;
  template_options m_opts;
};

/// How the template language prints a scalar: "42", "0.125", "1.5e-07", "text", "true", "".
[[nodiscard]] std::string template_text(const nlohmann::json& value);

} // namespace kforge::propose
