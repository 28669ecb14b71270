#pragma once
// What one pass over an output finds, the same record on the host (eval/compare.cpp) and
// from kforge's judge kernel (device_kernels.cu): the verdict (eval::judge_scan) is made
// from it alone, plus the values of the few elements it names, so the CPU and the GPU judge
// give the same verdicts by construction. Plain C++ so nvcc compiles it as it is.
// Partial scans combine in any order (kf_scan_combine): "first" and "worst" name the
// element a sequential pass would name (ties go to the lower index).
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define KF_SCAN_FN __host__ __device__ inline
#else
#define KF_SCAN_FN inline
#endif
#if defined(__CUDA_ARCH__)
#define KF_SCAN_INF __longlong_as_double(0x7ff0000000000000LL)
#else
#define KF_SCAN_INF __builtin_huge_val()
#endif

struct kf_scan {
  std::uint64_t poisoned, first_poison;   // elements still holding the output poison
  std::uint64_t bad_class, first_bad_class; // NaN/Inf disagreeing with the oracle
  double max_ec, max_er, max_o, ec2, er2, o2; // candidate / reference error vs the oracle, |oracle|
  std::uint64_t worst, worst_rtol;        // the element of max |c - o| / of the worst rtol ratio
  double worst_rtol_ratio;
  std::uint64_t rtol_fail, int_mismatch, first_int_mismatch;
  std::uint32_t have_worst, have_worst_rtol;
};

/// The scan of no elements.
KF_SCAN_FN kf_scan kf_scan_empty() {
  kf_scan s{};
  return s;
}

/// Combines b into a, in any order: counts and sums add, "first" is the lower index, and
/// "worst" the larger error with ties to the lower index, as a sequential pass would name.
KF_SCAN_FN void kf_scan_combine(kf_scan& a, const kf_scan& b) {
  if (b.poisoned && (!a.poisoned || b.first_poison < a.first_poison)) a.first_poison = b.first_poison;
  a.poisoned += b.poisoned;
  if (b.bad_class && (!a.bad_class || b.first_bad_class < a.first_bad_class)) a.first_bad_class = b.first_bad_class;
  a.bad_class += b.bad_class;
  if (b.int_mismatch && (!a.int_mismatch || b.first_int_mismatch < a.first_int_mismatch))
    a.first_int_mismatch = b.first_int_mismatch;
  a.int_mismatch += b.int_mismatch;
  if (b.have_worst && (!a.have_worst || b.max_ec > a.max_ec || (b.max_ec == a.max_ec && b.worst < a.worst))) {
    a.max_ec = b.max_ec;
    a.worst = b.worst;
    a.have_worst = 1;
  }
  if (b.have_worst_rtol &&
      (!a.have_worst_rtol || b.worst_rtol_ratio > a.worst_rtol_ratio ||
       (b.worst_rtol_ratio == a.worst_rtol_ratio && b.worst_rtol < a.worst_rtol))) {
    a.worst_rtol_ratio = b.worst_rtol_ratio;
    a.worst_rtol = b.worst_rtol;
    a.have_worst_rtol = 1;
  }
  a.max_er = a.max_er > b.max_er ? a.max_er : b.max_er;
  a.max_o = a.max_o > b.max_o ? a.max_o : b.max_o;
  a.ec2 += b.ec2;
  a.er2 += b.er2;
  a.o2 += b.o2;
  a.rtol_fail += b.rtol_fail;
}

/// The comparison's parameters, as the kernel takes them.
struct kf_scan_params {
  int cand_dtype, oracle_dtype, ref_dtype; // kf_dtype values
  int real;                                 // the output is floating point
  int rtol_policy;                          // 1: per-element atol + rtol * |o| (else ratio)
  double atol, rtol;
};

/// -1 NaN, 0 finite, 1 +Inf, 2 -Inf.
KF_SCAN_FN int kf_fp_class(double x) {
  if (x != x) return -1;
  if (x > 1.7976931348623157e308) return 1;
  if (x < -1.7976931348623157e308) return 2;
  return 0;
}

/// Adds element i to a scan: c the candidate's value (`poison`: its bytes all hold the
/// output poison), o the oracle's, r the reference's. Elements of one scan arrive in
/// ascending order.
KF_SCAN_FN void kf_scan_element(kf_scan& a, const kf_scan_params& p, std::uint64_t i, bool poison, double c, double o,
                                double r) {
  if (p.real && poison) {
    if (a.poisoned++ == 0) a.first_poison = i;
    return;
  }
  if (!p.real) {
    if (c != o && a.int_mismatch++ == 0) a.first_int_mismatch = i;
    return;
  }
  const int cc = kf_fp_class(c), oc = kf_fp_class(o), rc = kf_fp_class(r);
  if (cc != oc && !(rc != oc && cc == rc)) { // agreeing with an overflowing reference is accepted
    if (a.bad_class++ == 0) a.first_bad_class = i;
    return;
  }
  if (cc != 0 || oc != 0 || rc != 0) return;
  const double ec = fabs(c - o), er = fabs(r - o);
  if (!a.have_worst || ec > a.max_ec) {
    a.max_ec = ec;
    a.worst = i;
    a.have_worst = 1;
  }
  a.max_er = a.max_er > er ? a.max_er : er;
  a.max_o = a.max_o > fabs(o) ? a.max_o : fabs(o);
  a.ec2 += ec * ec;
  a.er2 += er * er;
  a.o2 += o * o;
  if (p.rtol_policy) {
    const double allowed = p.atol + p.rtol * fabs(o);
    const double ratio = allowed > 0 ? ec / allowed : (ec > 0 ? KF_SCAN_INF : 0.0);
    if (ec > allowed) ++a.rtol_fail;
    if (!a.have_worst_rtol || ratio > a.worst_rtol_ratio) {
      a.worst_rtol_ratio = ratio;
      a.worst_rtol = i;
      a.have_worst_rtol = 1;
    }
  }
}
