#include "eval/compare.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
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

kf_scan scan_output(const problem::tensor_spec& spec, const problem::tolerance_spec& tol, const host_tensor& cand,
                    const host_tensor& oracle, const host_tensor& ref) {
  const auto n = static_cast<std::size_t>(spec.numel());
  KFORGE_ASSERT(cand.bytes.size() == n * dtype_size(cand.dtype));
  const kf_scan_params params = scan_params(spec, tol, cand.dtype, oracle.dtype, ref.dtype);
  // In chunks on every core (GPU outputs hold 10^8 elements); kf_scan_combine keeps "first"
  // and "worst" the elements a sequential pass would name.
  auto run = [&](std::size_t begin, std::size_t end) {
    kf_scan a = kf_scan_empty();
    for (std::size_t i = begin; i < end; ++i)
      kf_scan_element(a, params, i, params.real && is_poison(cand, i), load_as_double(cand.bytes.data(), cand.dtype, i),
                      load_as_double(oracle.bytes.data(), oracle.dtype, i), load_as_double(ref.bytes.data(), ref.dtype, i));
    return a;
  };
  const std::size_t chunks = n < (1u << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  std::vector<kf_scan> parts(chunks);
  {
    const std::size_t per = (n + chunks - 1) / chunks;
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < chunks; ++t)
      pool.emplace_back([&, t] { parts[t] = run(std::min(n, t * per), std::min(n, (t + 1) * per)); });
    parts[0] = run(0, std::min(n, per));
    for (auto& th : pool) th.join();
  }
  kf_scan all = parts[0];
  for (std::size_t t = 1; t < chunks; ++t) kf_scan_combine(all, parts[t]);
  return all;
}

kf_scan_params scan_params(const problem::tensor_spec& spec, const problem::tolerance_spec& tol, kf_dtype cand,
                           kf_dtype oracle, kf_dtype ref) {
  return {.cand_dtype = cand, .oracle_dtype = oracle, .ref_dtype = ref, .real = dtype_is_real(spec.dtype) ? 1 : 0,
          .rtol_policy = tol.policy == problem::tolerance_policy::rtol ? 1 : 0, .atol = tol.atol, .rtol = tol.rtol};
}

std::vector<std::size_t> scan_elements(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                       const kf_scan& s) {
  std::vector<std::size_t> at;
  if (s.poisoned) at.push_back(s.first_poison);
  if (s.bad_class) at.push_back(s.first_bad_class);
  if (!dtype_is_real(spec.dtype)) {
    if (s.int_mismatch) at.push_back(s.first_int_mismatch);
    return at;
  }
  if (s.have_worst) at.push_back(s.worst);
  if (tol.policy == problem::tolerance_policy::rtol && s.rtol_fail && s.have_worst_rtol) at.push_back(s.worst_rtol);
  return at;
}

std::vector<check_result> judge_scan(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                     const kf_scan& all, const std::map<std::size_t, element_values>& values) {
  const auto n = static_cast<std::size_t>(spec.numel());
  check_result unwritten{.name = "unwritten", .output = spec.name};
  check_result nonfinite{.name = "nonfinite", .output = spec.name};
  check_result tolerance{.name = "tolerance", .output = spec.name};
  const bool real = dtype_is_real(spec.dtype);
  const std::size_t poisoned = all.poisoned, first_poison = all.first_poison;
  const std::size_t bad_class = all.bad_class, first_bad_class = all.first_bad_class;
  const double max_ec = all.max_ec, max_er = all.max_er, max_o = all.max_o, ec2 = all.ec2, er2 = all.er2, o2 = all.o2;
  const std::size_t worst = all.have_worst ? all.worst : n, worst_rtol = all.have_worst_rtol ? all.worst_rtol : n;
  const double worst_rtol_ratio = all.worst_rtol_ratio;
  const std::size_t rtol_fail = all.rtol_fail, int_mismatch = all.int_mismatch, first_int_mismatch = all.first_int_mismatch;
  auto value = [&](std::size_t i) {
    auto it = values.find(i);
    KFORGE_ASSERT(it != values.end()); // scan_elements named it
    return it->second;
  };
  auto element = [&](std::size_t i) {
    const auto v = value(i);
    nlohmann::json j{{"index", i}, {"element", element_name(spec, i)}};
    j["got"] = num(v.got);
    j["expected"] = num(v.expected);
    j["reference"] = num(v.reference);
    return j;
  };

  if (poisoned) {
    unwritten.passed = false;
    unwritten.detail = {{"count", poisoned}, {"of", n}, {"first", element_name(spec, first_poison)},
                        {"expected", num(value(first_poison).expected)}};
    unwritten.message = fmt::format("{} of {} elements of output '{}' were never written (first: {}, expected {})",
                                    poisoned, n, spec.name, element_name(spec, first_poison),
                                    num(value(first_poison).expected));
  }
  if (bad_class) {
    const std::size_t i = first_bad_class;
    const double c = value(i).got, o = value(i).expected;
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

std::vector<check_result> compare_output(const problem::tensor_spec& spec, const problem::tolerance_spec& tol,
                                         const host_tensor& cand, const host_tensor& oracle, const host_tensor& ref) {
  const auto s = scan_output(spec, tol, cand, oracle, ref);
  std::map<std::size_t, element_values> values;
  for (auto i : scan_elements(spec, tol, s))
    values[i] = {load_as_double(cand.bytes.data(), cand.dtype, i), load_as_double(oracle.bytes.data(), oracle.dtype, i),
                 load_as_double(ref.bytes.data(), ref.dtype, i)};
  return judge_scan(spec, tol, s, values);
}

check_result repeat_verdict(const problem::tensor_spec& spec, std::size_t differ, std::size_t first, double x, double y) {
  check_result r{.name = "repeat", .output = spec.name};
  if (differ) {
    r.passed = false;
    r.detail = {{"count", differ}, {"first", element_name(spec, first)}, {"first_call", num(x)}, {"second_call", num(y)}};
    r.message = fmt::format("two calls on identical inputs disagree in {} elements of output '{}': first {} = {} then {} "
                            "(a race, uninitialised memory, or state kept between calls)",
                            differ, spec.name, element_name(spec, first), num(x), num(y));
  }
  return r;
}

check_result compare_repeat(const problem::tensor_spec& spec, const host_tensor& a, const host_tensor& b) {
  const std::size_t w = dtype_size(a.dtype);
  const std::size_t n = a.bytes.size() / w;
  std::size_t diff = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::memcmp(a.bytes.data() + i * w, b.bytes.data() + i * w, w) != 0 && diff++ == 0) first = i;
  if (!diff) return repeat_verdict(spec, 0, 0, 0, 0);
  return repeat_verdict(spec, diff, first, load_as_double(a.bytes.data(), a.dtype, first),
                        load_as_double(b.bytes.data(), b.dtype, first));
}

} // namespace kforge::eval
