#include "problem/distribution.hpp"

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

// --- counter-based generator ---------------------------------------------------------
// Every value is a pure function of (seed, stream, element, draw): no state, so any
// element can be generated on its own, in any order, in any process.

constexpr std::uint64_t k_golden = 0x9E3779B97F4A7C15ull;

// High 64 bits of the 128-bit product a * b.
constexpr std::uint64_t mul_hi(std::uint64_t a, std::uint64_t b) {
  const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
  const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const std::uint64_t mid = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (mid >> 32);
}
static_assert(mul_hi(~0ull, ~0ull) == ~0ull - 1);
static_assert(mul_hi(1ull << 63, 4) == 2);

constexpr std::uint64_t mix64(std::uint64_t z) { // splitmix64's finaliser
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

struct stream_key {
  std::uint64_t k0, k1;
  stream_key(std::uint64_t seed, std::uint64_t stream) {
    const std::uint64_t s = mix64(seed ^ 0x243F6A8885A308D3ull);
    k0 = mix64(s ^ mix64(stream * k_golden + 0x13198A2E03707344ull));
    k1 = mix64(k0 ^ 0xA4093822299F31D0ull);
  }
  // Up to four independent draws per element (j = 0..3).
  [[nodiscard]] std::uint64_t bits(std::uint64_t i, unsigned j) const {
    const std::uint64_t counter = i * 4 + j + 1;
    return mix64(mix64(k0 + counter * k_golden) ^ k1);
  }
  // Uniform in the open interval (0, 1), 53 random bits.
  [[nodiscard]] double unit(std::uint64_t i, unsigned j) const {
    return (static_cast<double>(bits(i, j) >> 11) + 0.5) * 0x1p-53;
  }
  // Standard normal by Box-Muller from draws j and j + 1 (the cosine branch only).
  [[nodiscard]] double normal(std::uint64_t i, unsigned j) const {
    const double u1 = unit(i, j), u2 = unit(i, j + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
  }
};

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

namespace {
// Element i depends only on (seed, stream, i), so any split of [0, n) gives the same values.
void draw_range(const distribution& d, const stream_key& key, double* out, std::size_t begin, std::size_t end) {
  switch (d.kind) {
  case distribution_kind::normal:
  case distribution_kind::offset:
  case distribution_kind::logits: {
    const double mean = d.kind == distribution_kind::logits ? 0.0 : d.a;
    const double sd = d.kind == distribution_kind::logits ? d.a : d.b;
    for (std::size_t i = begin; i < end; ++i) out[i] = mean + sd * key.normal(i, 0);
    break;
  }
  case distribution_kind::uniform:
    for (std::size_t i = begin; i < end; ++i) {
      const double v = d.a + (d.b - d.a) * key.unit(i, 0);
      out[i] = std::fmin(std::fmax(v, d.a), d.b);
    }
    break;
  case distribution_kind::log_uniform: {
    const double llo = std::log(d.a), lhi = std::log(d.b);
    for (std::size_t i = begin; i < end; ++i) {
      const double mag = std::fmin(std::fmax(std::exp(llo + (lhi - llo) * key.unit(i, 0)), d.a), d.b);
      out[i] = (key.bits(i, 1) >> 63) ? -mag : mag;
    }
    break;
  }
  case distribution_kind::sparse:
    for (std::size_t i = begin; i < end; ++i) out[i] = key.unit(i, 0) < d.a ? d.b * key.normal(i, 1) : 0.0;
    break;
  case distribution_kind::int_range: {
    // Bounds are exact integers within +/-2^53, so the count fits comfortably in 64 bits.
    const auto lo = static_cast<std::int64_t>(d.a);
    const auto count = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.b) - lo) + 1;
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint64_t pick = mul_hi(key.bits(i, 0), count); // uniform in [0, count)
      out[i] = static_cast<double>(lo + static_cast<std::int64_t>(pick));
    }
    break;
  }
  }
}
} // namespace

void draw(const distribution& d, std::uint64_t seed, std::uint64_t stream, double* out, std::size_t n) {
  const stream_key key(seed, stream);
  // GPU-sized tensors hold 10^8 elements: draw them on every core.
  const std::size_t threads = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  if (threads == 1) return draw_range(d, key, out, 0, n);
  std::vector<std::thread> pool;
  const std::size_t chunk = (n + threads - 1) / threads;
  for (std::size_t t = 0; t < threads; ++t) {
    const std::size_t b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) pool.emplace_back([&, b, e] { draw_range(d, key, out, b, e); });
  }
  for (auto& th : pool) th.join();
}

} // namespace kforge::problem
