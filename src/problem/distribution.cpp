#include "problem/distribution.hpp"
#include "eval/gpu/counter_rng.h"

#include "core/error.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

namespace kforge::problem {
namespace {

struct kind_info {
  distribution_kind kind;
  std::string_view name;
  int arity;
  std::string_view params; // for messages: "(mean, std)"
};

constexpr std::array<kind_info, 7> k_kinds{{
    {distribution_kind::normal, "normal", 2, "(mean, std)"},
    {distribution_kind::uniform, "uniform", 2, "(lo, hi)"},
    {distribution_kind::offset, "offset", 2, "(mean, std)"},
    {distribution_kind::log_uniform, "log_uniform", 2, "(lo, hi)"},
    {distribution_kind::logits, "logits", 1, "(scale)"},
    {distribution_kind::sparse, "sparse", 2, "(density, std)"},
    {distribution_kind::int_range, "int_range", 2, "(lo, hi)"},
}};

constexpr std::string_view k_known = "normal, uniform, offset, log_uniform, logits, sparse, int_range";

// Integers beyond 2^53 are not exact in a double; int_range keeps its bounds inside.
constexpr double k_max_exact_int = 9007199254740992.0;



bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

[[noreturn]] void bad_syntax(std::string_view spec, std::string_view why) {
  KFORGE_THROW(problem, "cannot parse distribution '{}': {} (expected a call such as \"normal(0, 1)\")",
               spec, why);
}

double parse_number(std::string_view spec, std::string_view kind, std::size_t index, std::string_view arg) {
  arg = trim(arg);
  if (arg.empty()) KFORGE_THROW(problem, "{}: argument {} is empty in '{}'", kind, index + 1, spec);
  const std::string s(arg);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size())
    KFORGE_THROW(problem, "{}: argument {} '{}' is not a number", kind, index + 1, s);
  if (!std::isfinite(v) || errno == ERANGE)
    KFORGE_THROW(problem, "{}: argument {} '{}' must be a finite number", kind, index + 1, s);
  return v;
}

void check_params(const kind_info& k, double a, double b) {
  switch (k.kind) {
  case distribution_kind::normal:
  case distribution_kind::offset:
    if (!(b > 0)) KFORGE_THROW(problem, "{} needs std > 0, got {}", k.name, b);
    break;
  case distribution_kind::uniform:
    if (!(a < b)) KFORGE_THROW(problem, "uniform needs lo < hi, got lo = {}, hi = {}", a, b);
    break;
  case distribution_kind::log_uniform:
    if (!(a > 0 && a < b))
      KFORGE_THROW(problem, "log_uniform needs 0 < lo < hi, got lo = {}, hi = {}", a, b);
    break;
  case distribution_kind::logits:
    if (!(a > 0)) KFORGE_THROW(problem, "logits needs scale > 0, got {}", a);
    break;
  case distribution_kind::sparse:
    if (!(a > 0 && a <= 1)) KFORGE_THROW(problem, "sparse needs 0 < density <= 1, got {}", a);
    if (!(b > 0)) KFORGE_THROW(problem, "sparse needs std > 0, got {}", b);
    break;
  case distribution_kind::int_range:
    if (a != std::floor(a) || b != std::floor(b))
      KFORGE_THROW(problem, "int_range needs integer bounds, got lo = {}, hi = {}", a, b);
    if (std::fabs(a) > k_max_exact_int || std::fabs(b) > k_max_exact_int)
      KFORGE_THROW(problem, "int_range bounds must lie within +/-2^53, got lo = {}, hi = {}", a, b);
    if (!(a <= b)) KFORGE_THROW(problem, "int_range needs lo <= hi, got lo = {}, hi = {}", a, b);
    break;
  }
}

// --- counter-based generator (eval/gpu/counter_rng.h, shared with kforge's GPU kernels) ------
static_assert(rng::mix64(0) == 0);
static_assert(rng::mul_hi(~0ull, ~0ull) == ~0ull - 1);
static_assert(rng::mul_hi(1ull << 63, 4) == 2);
static_assert(static_cast<int>(distribution_kind::normal) == rng::normal_kind &&
              static_cast<int>(distribution_kind::uniform) == rng::uniform_kind &&
              static_cast<int>(distribution_kind::offset) == rng::offset_kind &&
              static_cast<int>(distribution_kind::log_uniform) == rng::log_uniform_kind &&
              static_cast<int>(distribution_kind::logits) == rng::logits_kind &&
              static_cast<int>(distribution_kind::sparse) == rng::sparse_kind &&
              static_cast<int>(distribution_kind::int_range) == rng::int_range_kind);

} // namespace

std::string_view distribution_name(distribution_kind k) {
  for (auto& info : k_kinds)
    if (info.kind == k) return info.name;
  KFORGE_THROW(internal, "unknown distribution kind {}", static_cast<int>(k));
}

distribution parse_distribution(const std::string& spec_in) {
  const std::string_view spec = trim(spec_in);
  if (spec.empty()) KFORGE_THROW(problem, "empty distribution (expected a call such as \"normal(0, 1)\")");

  std::size_t p = 0;
  while (p < spec.size() && is_ident_char(spec[p])) ++p;
  const std::string_view name = spec.substr(0, p);
  if (name.empty()) bad_syntax(spec, "no distribution name");
  std::string_view rest = trim(spec.substr(p));
  if (rest.empty() || rest.front() != '(') bad_syntax(spec, "missing '(' after the name");
  if (rest.back() != ')') bad_syntax(spec, "missing ')' at the end");
  const std::string_view inner = rest.substr(1, rest.size() - 2);
  if (inner.find_first_of("()") != std::string_view::npos) bad_syntax(spec, "unbalanced parentheses");

  const kind_info* info = nullptr;
  for (const auto& k : k_kinds)
    if (k.name == name) info = &k;
  if (!info) {
    std::string_view best;
    std::size_t best_d = 3;
    for (const auto& k : k_kinds)
      if (const auto d = edit_distance(name, k.name); d < best_d) best_d = d, best = k.name;
    if (!best.empty())
      KFORGE_THROW(problem, "unknown distribution '{}' (known: {}); did you mean '{}'?", name, k_known, best);
    KFORGE_THROW(problem, "unknown distribution '{}' (known: {})", name, k_known);
  }

  std::vector<std::string_view> args;
  if (!trim(inner).empty()) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = inner.find(',', start);
      args.push_back(inner.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  if (static_cast<int>(args.size()) != info->arity)
    KFORGE_THROW(problem, "{} takes {} argument{} {}, got {}", info->name, info->arity,
                 info->arity == 1 ? "" : "s", info->params, args.size());

  distribution d;
  d.kind = info->kind;
  d.a = parse_number(spec, info->name, 0, args[0]);
  d.b = info->arity > 1 ? parse_number(spec, info->name, 1, args[1]) : 0.0;
  check_params(*info, d.a, d.b);
  d.text = std::string(spec);
  return d;
}

void draw(const distribution& d, std::uint64_t seed, std::uint64_t stream, double* out, std::size_t n) {
  const auto key = rng::make_key(seed, stream);
  const auto plan = rng::make_plan(static_cast<int>(d.kind), d.a, d.b);
  // Element i depends only on (seed, stream, i): any split of [0, n) gives the same values.
  auto range = [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) out[i] = rng::draw_one(plan, key, i);
  };
  // GPU-sized tensors hold 10^8 elements: draw them on every core.
  const std::size_t threads = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  if (threads == 1) return range(0, n);
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t t = 0; t < threads; ++t) {
    const std::size_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back(range, b, e);
  }
  for (auto& th : pool) th.join();
}

} // namespace kforge::problem
