#include "eval/inputs.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <random>

namespace kforge::eval {

std::vector<host_tensor> make_inputs(const problem::problem& p, const problem::case_spec& c, std::uint64_t seed,
                                     precision prec) {
  std::vector<host_tensor> out;
  std::uint64_t stream = 0;
  for (auto* t : p.inputs()) {
    const auto n = static_cast<std::size_t>(t->numel());
    std::vector<double> v(n);
    problem::draw(c.inputs.at(t->name), seed, stream++, v.data(), n);
    const kf_dtype dt = prec == precision::oracle ? t->oracle_dtype() : t->dtype;
    host_tensor h{dt, std::vector<std::uint8_t>(n * dtype_size(dt))};
    for (std::size_t i = 0; i < n; ++i) {
      // Round through the nominal dtype first: the oracle must see the candidate's values.
      double x = v[i];
      if (t->dtype != KF_F64) {
        std::uint8_t tmp[8];
        store_from_double(tmp, t->dtype, 0, x);
        x = load_as_double(tmp, t->dtype, 0);
      }
      store_from_double(h.bytes.data(), dt, i, x);
    }
    out.push_back(std::move(h));
  }
  return out;
}

hidden_plan plan_hidden(const problem::problem& p, std::uint64_t seed) {
  hidden_plan h;
  std::mt19937_64 rng(seed ^ 0x6b666f7267652d68ull); // "kforge-h": positions independent of the values
  h.donor_case = 1 + rng() % (p.cases.size() - 1);
  h.donor_seed = rng();
  for (auto* t : p.inputs()) {
    auto& sl = h.inputs.emplace_back();
    // Only real tensors: integer inputs may be indices or sizes whose rows must stay consistent.
    const auto numel = static_cast<std::size_t>(t->numel());
    if (!dtype_is_real(t->dtype) || numel == 0) continue;
    const bool batched = t->shape.size() >= 2 && t->shape[0] >= 4;
    const std::size_t rows = batched ? static_cast<std::size_t>(t->shape[0]) : std::max<std::size_t>(1, numel / 256);
    sl.count = rows;
    const std::size_t count = std::max<std::size_t>(1, rows / 8);
    for (std::size_t i = 0; i < count; ++i) sl.rows.push_back(rng() % rows);
  }
  return h;
}

std::vector<host_tensor> make_trial_inputs(const problem::problem& p, const std::string& case_name, std::uint64_t seed,
                                          precision prec) {
  for (auto& c : p.cases)
    if (c.name == case_name) return make_inputs(p, c, seed, prec);
  if (case_name != hidden_case || p.cases.size() < 2) KFORGE_THROW(internal, "no input case named '{}'", case_name);
  const auto h = plan_hidden(p, seed);
  auto base = make_inputs(p, p.cases[0], seed, prec);
  const auto donor = make_inputs(p, p.cases[h.donor_case], h.donor_seed, prec);
  for (std::size_t k = 0; k < base.size(); ++k) {
    if (h.inputs[k].rows.empty()) continue;
    const std::size_t row_bytes = base[k].bytes.size() / h.inputs[k].count;
    for (auto r : h.inputs[k].rows)
      std::copy_n(donor[k].bytes.begin() + r * row_bytes, row_bytes, base[k].bytes.begin() + r * row_bytes);
  }
  return base;
}

std::vector<host_tensor> widen_to_oracle(const problem::problem& p, const std::vector<host_tensor>& nominal) {
  std::vector<host_tensor> out;
  const auto ins = p.inputs();
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const kf_dtype dt = ins[k]->oracle_dtype();
    if (dt == nominal[k].dtype) {
      out.push_back(nominal[k]);
      continue;
    }
    const auto n = static_cast<std::size_t>(ins[k]->numel());
    host_tensor h{dt, std::vector<std::uint8_t>(n * dtype_size(dt))};
    for (std::size_t i = 0; i < n; ++i)
      store_from_double(h.bytes.data(), dt, i, load_as_double(nominal[k].bytes.data(), nominal[k].dtype, i));
    out.push_back(std::move(h));
  }
  return out;
}

} // namespace kforge::eval
