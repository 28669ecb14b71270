#include "eval/compare.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

namespace kforge::eval {
namespace {

bool is_poison(const host_tensor& t, std::size_t i) {
  const std::size_t w = dtype_size(t.dtype);
  const std::uint8_t* p = t.bytes.data() + i * w;
  for (std::size_t k = 0; k < w; ++k)
    if (p[k] != output_poison) return false;
  return true;
}

// -1 NaN, 0 finite, 1 +Inf, 2 -Inf
int fp_class(double x) {
  if (std::isnan(x)) return -1;
  if (std::isinf(x)) return x > 0 ? 1 : 2;
  return 0;
}

const char* class_name(int c) {
  switch (c) {
  case -1: return "NaN";
  case 1: return "+Inf";
  case 2: return "-Inf";
  default: return "finite";
  }
}

std::string num(double x) { return fmt::format("{:.9g}", x); }

} // namespace

std::string element_name(const problem::tensor_spec& spec, std::size_t flat) {
  std::vector<int64_t> idx(spec.shape.size());
  for (std::size_t d = spec.shape.size(); d-- > 0;) {
    idx[d] = static_cast<int64_t>(flat % spec.shape[d]);
    flat /= spec.shape[d];
  }
  return fmt::format("{}[{}]", spec.name, fmt::join(idx, ", "));
}

reference_error measure_reference_error(const problem::tensor_spec& spec, const host_tensor& oracle,
                                        const host_tensor& reference) {
  reference_error e;
  double num2 = 0, den2 = 0;
  const auto n = static_cast<std::size_t>(spec.numel());
  for (std::size_t i = 0; i < n; ++i) {
    const double o = load_as_double(oracle.bytes.data(), oracle.dtype, i);
    const double r = load_as_double(reference.bytes.data(), reference.dtype, i);
    if (!std::isfinite(o) || !std::isfinite(r)) continue;
    e.max_abs = std::max(e.max_abs, std::fabs(r - o));
    e.max_abs_oracle = std::max(e.max_abs_oracle, std::fabs(o));
    num2 += (r - o) * (r - o);
    den2 += o * o;
  }
  e.rel_l2 = den2 > 0 ? std::sqrt(num2 / den2) : std::sqrt(num2);
  return e;
}

std::vector<check_result> compare_output(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                         const host_tensor& cand, const host_tensor& oracle,
                                         const host_tensor& ref) {
  const auto n = static_cast<std::size_t>(spec.numel());
  KFORGE_ASSERT(cand.bytes.size() == n * dtype_size(cand.dtype));
  check_result unwritten{.name = "unwritten", .output = spec.name};
  check_result nonfinite{.name = "nonfinite", .output = spec.name};
  check_result tolerance{.name = "tolerance", .output = spec.name};
  const bool real = dtype_is_real(spec.dtype);

  // One pass over the elements, in chunks on every core (GPU outputs hold 10^8 elements);
  // partial results merge in chunk order, so "first" and "worst" are the same elements a
  // sequential pass would name.
  struct scan {
    std::size_t n = 0;
    std::size_t poisoned = 0, first_poison = 0, bad_class = 0, first_bad_class = 0;
    double max_ec = 0, max_er = 0, max_o = 0, ec2 = 0, er2 = 0, o2 = 0;
    std::size_t worst = 0, worst_rtol = 0;
    bool have_worst = false, have_worst_rtol = false;
    double worst_rtol_ratio = 0;
    std::size_t rtol_fail = 0, int_mismatch = 0, first_int_mismatch = 0;
  };
  auto run = [&](std::size_t begin, std::size_t end) {
    scan a;
    for (std::size_t i = begin; i < end; ++i) {
      if (real && is_poison(cand, i)) {
        if (a.poisoned++ == 0) a.first_poison = i;
        continue;
      }
      const double c = load_as_double(cand.bytes.data(), cand.dtype, i);
      const double o = load_as_double(oracle.bytes.data(), oracle.dtype, i);
      const double r = load_as_double(ref.bytes.data(), ref.dtype, i);
      if (!real) {
        if (c != o && a.int_mismatch++ == 0) a.first_int_mismatch = i;
        continue;
      }
      const int cc = fp_class(c), oc = fp_class(o), rc = fp_class(r);
      if (cc != oc && !(rc != oc && cc == rc)) {
        if (a.bad_class++ == 0) a.first_bad_class = i;
        continue;
      }
      if (cc != 0 || oc != 0 || rc != 0) continue;
      const double ec = std::fabs(c - o), er = std::fabs(r - o);
      if (!a.have_worst || ec > a.max_ec) {
        a.max_ec = ec;
        a.worst = i;
        a.have_worst = true;
      }
      a.max_er = std::max(a.max_er, er);
      a.max_o = std::max(a.max_o, std::fabs(o));
      a.ec2 += ec * ec;
      a.er2 += er * er;
      a.o2 += o * o;
      if (tol.policy == problem::tolerance_policy::rtol) {
        const double allowed = tol.atol + tol.rtol * std::fabs(o);
        const double ratio = allowed > 0 ? ec / allowed : (ec > 0 ? std::numeric_limits<double>::infinity() : 0);
        if (ec > allowed) ++a.rtol_fail;
        if (!a.have_worst_rtol || ratio > a.worst_rtol_ratio) {
          a.worst_rtol_ratio = ratio;
          a.worst_rtol = i;
          a.have_worst_rtol = true;
        }
      }
    }
    return a;
  };
  auto merge = [](scan& a, const scan& b) { // b's elements all come after a's
    if (b.poisoned && !a.poisoned) a.first_poison = b.first_poison;
    a.poisoned += b.poisoned;
    if (b.bad_class && !a.bad_class) a.first_bad_class = b.first_bad_class;
    a.bad_class += b.bad_class;
    if (b.int_mismatch && !a.int_mismatch) a.first_int_mismatch = b.first_int_mismatch;
    a.int_mismatch += b.int_mismatch;
    if (b.have_worst && (!a.have_worst || b.max_ec > a.max_ec)) {
      a.max_ec = b.max_ec;
      a.worst = b.worst;
      a.have_worst = true;
    }
    if (b.have_worst_rtol && (!a.have_worst_rtol || b.worst_rtol_ratio > a.worst_rtol_ratio)) {
      a.worst_rtol_ratio = b.worst_rtol_ratio;
      a.worst_rtol = b.worst_rtol;
      a.have_worst_rtol = true;
    }
    a.max_er = std::max(a.max_er, b.max_er);
    a.max_o = std::max(a.max_o, b.max_o);
    a.ec2 += b.ec2;
    a.er2 += b.er2;
    a.o2 += b.o2;
    a.rtol_fail += b.rtol_fail;
  };
  const std::size_t chunks = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  std::vector<scan> parts(chunks);
  {
    const std::size_t per = (n + chunks - 1) / chunks;
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < chunks; ++t)
      pool.emplace_back([&, t] { parts[t] = run(std::min(n, t * per), std::min(n, (t + 1) * per)); });
    parts[0] = run(0, std::min(n, per));
    for (auto& th : pool) th.join();
  }
  scan all = parts[0];
  for (std::size_t t = 1; t < chunks; ++t) merge(all, parts[t]);
  const std::size_t poisoned = all.poisoned, first_poison = all.first_poison;
  const std::size_t bad_class = all.bad_class, first_bad_class = all.first_bad_class;
  const double max_ec = all.max_ec, max_er = all.max_er, max_o = all.max_o, ec2 = all.ec2, er2 = all.er2, o2 = all.o2;
  const std::size_t worst = all.have_worst ? all.worst : n, worst_rtol = all.have_worst_rtol ? all.worst_rtol : n;
  const double worst_rtol_ratio = all.worst_rtol_ratio;
  const std::size_t rtol_fail = all.rtol_fail, int_mismatch = all.int_mismatch, first_int_mismatch = all.first_int_mismatch;

  auto element = [&](std::size_t i) {
    nlohmann::json j{{"index", i}, {"element", element_name(spec, i)}};
    j["got"] = num(load_as_double(cand.bytes.data(), cand.dtype, i));
    j["expected"] = num(load_as_double(oracle.bytes.data(), oracle.dtype, i));
    j["reference"] = num(load_as_double(ref.bytes.data(), ref.dtype, i));
    return j;
  };

  if (poisoned) {
    unwritten.passed = false;
    unwritten.detail = {{"count", poisoned}, {"of", n}, {"first", element_name(spec, first_poison)},
                        {"expected", num(load_as_double(oracle.bytes.data(), oracle.dtype, first_poison))}};
    unwritten.message = fmt::format("{} of {} elements of output '{}' were never written (first: {}, expected {})",
                                    poisoned, n, spec.name, element_name(spec, first_poison),
                                    num(load_as_double(oracle.bytes.data(), oracle.dtype, first_poison)));
  }
  if (bad_class) {
    const std::size_t i = first_bad_class;
    const double c = load_as_double(cand.bytes.data(), cand.dtype, i);
    const double o = load_as_double(oracle.bytes.data(), oracle.dtype, i);
    nonfinite.passed = false;
    nonfinite.detail = element(i);
    nonfinite.detail["count"] = bad_class;
    nonfinite.message = fmt::format("{} elements of output '{}' disagree with the oracle on NaN/Inf: first {} = {} ({}), expected {} ({})",
                                    bad_class, spec.name, element_name(spec, i), num(c), class_name(fp_class(c)),
                                    num(o), class_name(fp_class(o)));
  }

  if (!real) {
    if (int_mismatch) {
      tolerance.passed = false;
      tolerance.detail = element(first_int_mismatch);
      tolerance.detail["count"] = int_mismatch;
      tolerance.message = fmt::format("{} elements of integer output '{}' differ from the oracle: first {} = {}, expected {}",
                                      int_mismatch, spec.name, element_name(spec, first_int_mismatch),
                                      tolerance.detail["got"].get<std::string>(),
                                      tolerance.detail["expected"].get<std::string>());
    }
    return {unwritten, nonfinite, tolerance};
  }

  // An opted-in lower precision widens the floor to ulps of that format (unit roundoff).
  const double precision_eps = tol.precision == "tf32" || tol.precision == "f16" ? 0x1p-11
                               : tol.precision == "bf16"                         ? 0x1p-8
                                                                                 : 0.0;
  const double eps = std::max(dtype_epsilon(spec.dtype), precision_eps);
  const double rel_c = o2 > 0 ? std::sqrt(ec2 / o2) : std::sqrt(ec2);
  const double rel_r = o2 > 0 ? std::sqrt(er2 / o2) : std::sqrt(er2);
  auto& d = tolerance.detail;
  d["policy"] = tol.policy == problem::tolerance_policy::ratio ? "ratio" : "rtol";
  d["precision"] = tol.precision;
  d["max_abs_error"] = max_ec;
  d["reference_max_abs_error"] = max_er;
  d["rel_l2_error"] = rel_c;
  d["reference_rel_l2_error"] = rel_r;
  d["error_ratio"] = max_er > 0 ? max_ec / max_er : (max_ec > 0 ? -1.0 : 0.0); // -1: reference exact, candidate not
  if (worst < n) d["worst"] = element(worst);

  if (tol.policy == problem::tolerance_policy::ratio) {
    const double floor_abs = tol.floor_ulps * eps * std::max(max_o, std::numeric_limits<double>::min());
    const double bound_abs = tol.alpha * max_er + floor_abs;
    const double bound_rel = tol.alpha * rel_r + tol.floor_ulps * eps;
    d["bound_abs"] = bound_abs;
    d["bound_rel_l2"] = bound_rel;
    d["alpha"] = tol.alpha;
    if (max_ec > bound_abs) {
      tolerance.passed = false;
      tolerance.message = fmt::format(
          "output '{}': worst element {} = {}, expected {} (reference {}); max error {:.3g} is {} the reference's "
          "{:.3g} (allowed {}x + floor {:.3g})",
          spec.name, element_name(spec, worst), d["worst"]["got"].get<std::string>(),
          d["worst"]["expected"].get<std::string>(), d["worst"]["reference"].get<std::string>(), max_ec,
          max_er > 0 ? fmt::format("{:.3g}x", max_ec / max_er) : std::string("far above"), max_er, tol.alpha,
          floor_abs);
    } else if (rel_c > bound_rel) {
      tolerance.passed = false;
      tolerance.message = fmt::format(
          "output '{}': relative L2 error {:.3g} exceeds {:.3g} ({}x the reference's {:.3g} + floor); worst element {} = {}, expected {}",
          spec.name, rel_c, bound_rel, tol.alpha, rel_r, element_name(spec, worst),
          d["worst"]["got"].get<std::string>(), d["worst"]["expected"].get<std::string>());
    }
  } else {
    d["rtol"] = tol.rtol;
    d["atol"] = tol.atol;
    d["failing_elements"] = rtol_fail;
    if (rtol_fail) {
      tolerance.passed = false;
      d["worst"] = element(worst_rtol);
      tolerance.message = fmt::format(
          "output '{}': {} elements exceed atol {:.3g} + rtol {:.3g} * |expected|; worst {} = {}, expected {} ({:.3g}x the allowed error)",
          spec.name, rtol_fail, tol.atol, tol.rtol, element_name(spec, worst_rtol),
          d["worst"]["got"].get<std::string>(), d["worst"]["expected"].get<std::string>(), worst_rtol_ratio);
    }
  }
  return {unwritten, nonfinite, tolerance};
}

check_result compare_repeat(const problem::tensor_spec& spec, const host_tensor& a, const host_tensor& b) {
  check_result r{.name = "repeat", .output = spec.name};
  const std::size_t w = dtype_size(a.dtype);
  const std::size_t n = a.bytes.size() / w;
  std::size_t diff = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(a.bytes.data() + i * w, b.bytes.data() + i * w, w) != 0 && diff++ == 0) first = i;
  if (diff) {
    r.passed = false;
    const double x = load_as_double(a.bytes.data(), a.dtype, first), y = load_as_double(b.bytes.data(), b.dtype, first);
    r.detail = {{"count", diff}, {"first", element_name(spec, first)}, {"first_call", num(x)}, {"second_call", num(y)}};
    r.message = fmt::format("two calls on identical inputs disagree in {} elements of output '{}': first {} = {} then {} "
                            "(a race, uninitialised memory, or state kept between calls)",
                            diff, spec.name, element_name(spec, first), num(x), num(y));
  }
  return r;
}

} // namespace kforge::eval
