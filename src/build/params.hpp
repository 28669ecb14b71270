#pragma once
// Tunable parameters a candidate declares in its own source, in the `// kforge:` directive
// family of launch plans (src/build/launch_plan.hpp), and the concrete sources kforge builds
// from them. A parametrised candidate is a family of candidates; the tuner picks members.
//
//   // kforge: param BLOCK = 256 in {64, 128, 256, 512}
//   // kforge: param ITEMS = 4 in [1, 8]               inclusive range, step 1
//   // kforge: param TILE = 32 in [16, 128] step 16
//   // kforge: param VEC = 4 in pow2[1, 8]             1, 2, 4, 8
//   // kforge: constraint BLOCK * ITEMS <= 2048
//   // kforge: constraint BLOCK % (32 * VEC) == 0
//
// A Python candidate writes the same directives as `# kforge: param ...` (and `# kforge:
// constraint ...`) at module level; it gets `NAME = VALUE` assignments where C gets #defines.
//
// Values are 64-bit integers, kept ascending and distinct; the default (after `=`) must be
// one of them. Constraints are C integer expressions (+ - * / % ( ), < <= > >= == !=, && ||
// !, min(a, b), max(a, b)) over parameter names and literals; && and || short-circuit; a
// constraint that divides by zero or overflows is false. The defaults must satisfy every
// constraint.
//
//   auto space = build::parse_params(text, "cand.cu");        // throws build error "FILE:LINE: ..."
//   for (auto& a : build::grid(space, 64))                    // admissible points, in order
//     compile(build::instantiate(text, space, a));              // #defines instead of directives
//
// instantiate() keeps the line count, so compiler diagnostics keep their line numbers, and
// its result declares no parameters: instantiating it again changes nothing.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::build {

/// One value per parameter name. std::map: iteration (and so to_string/key) is by name.
using assignment = std::map<std::string, std::int64_t>;

struct param_decl {
  std::string name;
  std::int64_t default_value = 0;
  std::vector<std::int64_t> values; // ascending, distinct, never empty
  std::string domain;               // as declared, normalised: "{64, 128}", "[16, 128] step 16", "pow2[1, 8]"
  int line = 0;                     // source line of the directive
};

/// A condition over parameters ("BLOCK * ITEMS <= 2048"), compiled to an expression tree.
class constraint {
public:
  /// @param names the declared parameters: any other name is an error.
  /// @throws kforge::error (build) naming the column of the mistake, or an unknown name
  /// with a "did you mean" hint.
  static constraint parse(std::string_view text, const std::vector<std::string>& names, int line = 0);
  /// @pre `a` sets every name in names(). @return false when the value is 0, or when the
  /// evaluation divides by zero or overflows.
  [[nodiscard]] bool holds(const assignment& a) const;
  [[nodiscard]] const std::string& text() const { return m_text; }
  [[nodiscard]] int line() const { return m_line; }
  /// The parameters it reads, sorted, each once.
  [[nodiscard]] const std::vector<std::string>& names() const { return m_names; }

  enum class op : std::uint8_t {
    constant, param, neg, lnot, add, sub, mul, div, mod, lt, le, gt, ge, eq, ne, land, lor, min, max
  };
  struct node {
    op code = op::constant;
    std::int64_t value = 0; // op::constant
    std::string name;       // op::param
    int lhs = -1, rhs = -1; // operand nodes
  };

private:
  [[nodiscard]] std::optional<std::int64_t> eval(int at, const assignment& a) const;

  std::string m_text;
  int m_line = 0;
  std::vector<node> m_nodes;
  int m_root = -1;
  std::vector<std::string> m_names;
};

struct param_space {
  std::vector<param_decl> params;      // in declaration order
  std::vector<constraint> constraints; // in declaration order

  [[nodiscard]] bool empty() const { return params.empty(); }
  /// Points of the cartesian product, before constraints; 1 for an empty space (the one
  /// empty assignment); saturates at UINT64_MAX.
  [[nodiscard]] std::uint64_t size() const;
  /// Whether `a` sets exactly the declared parameters, each to one of its values, and
  /// satisfies every constraint.
  [[nodiscard]] bool admits(const assignment& a) const;
  /// Why admits(a) is false, one line ("BLOCK=100 is not one of {64, 128}", "violates
  /// constraint 'BLOCK * ITEMS <= 2048' (line 5)"); empty when it is true.
  [[nodiscard]] std::string rejection(const assignment& a) const;
  /// Several lines: each parameter with its values and default, each constraint, the size.
  [[nodiscard]] std::string describe() const;
  /// @return the declaration of `name`, or nullptr.
  [[nodiscard]] const param_decl* find(std::string_view name) const;
};

/// @return whether `source` has a `// kforge: param` directive.
[[nodiscard]] bool declares_params(std::string_view source);

/// Reads every `// kforge: param` and `// kforge: constraint` directive of `source` (other
/// directives are left to their own parsers). @throws kforge::error (build) with
/// "FILE:LINE: kforge: param: reason" for a malformed declaration, a default outside its
/// values, an empty range, a duplicate or reserved name, a constraint that reads an unknown
/// name or does not parse, or defaults that a constraint rejects.
[[nodiscard]] param_space parse_params(std::string_view source, const std::string& file);

/// Every parameter at its default. parse_params guarantees space.admits(defaults(space)).
[[nodiscard]] assignment defaults(const param_space& space);

/// The concrete source for `a`: each `// kforge: param NAME ...` line becomes
/// `#define NAME VALUE  // kforge: tuned NAME in DOMAIN` (a `# kforge: param` line of a Python
/// candidate becomes `NAME = VALUE  # kforge: tuned NAME in DOMAIN`), each `// kforge: constraint EXPR`
/// line becomes the plain comment `// kforge-constraint: EXPR`, and in `// kforge: launch`
/// and `// kforge: workspace` lines every whole-word parameter name (not one after a '.')
/// is replaced by its value. Every other line, and the line count, stay as they are.
/// @pre space.admits(a), and `space` was parsed from `source`.
/// @throws kforge::error (build) otherwise, saying why.
[[nodiscard]] std::string instantiate(std::string_view source, const param_space& space, const assignment& a);

/// Admissible assignments in lexicographic order of declaration (the first parameter varies
/// slowest, each through its values in ascending order), at most `limit` of them. An empty
/// space gives one empty assignment. Constraints prune as soon as the parameters they read
/// are set, so a space whose constraints reject whole prefixes is cheap to walk.
[[nodiscard]] std::vector<assignment> grid(const param_space& space, std::size_t limit);

/// `n` distinct admissible assignments, uniformly at random, in draw order. A space of at
/// most 65536 points is enumerated and sampled exactly (fewer than n when fewer are
/// admissible); a larger one by rejection with a bounded number of draws, so it may return
/// fewer than n when the constraints reject almost everything. Deterministic for a seed.
[[nodiscard]] std::vector<assignment> sample(const param_space& space, std::size_t n, std::mt19937_64& rng);

/// The admissible assignments one step from `a`: each parameter in turn moved to the value
/// below, then above, its current one in its value list.
/// @pre every parameter of `space` is set in `a` to one of its values.
/// @throws kforge::error (build) otherwise.
[[nodiscard]] std::vector<assignment> neighbours(const param_space& space, const assignment& a);

/// "BLOCK=128 ITEMS=4" (names in alphabetical order), for messages; "" when empty.
[[nodiscard]] std::string to_string(const assignment& a);
/// Canonical form for caches and deduplication: "BLOCK=128,ITEMS=4"; "" when empty.
[[nodiscard]] std::string key(const assignment& a);

} // namespace kforge::build
