#include "eval/inputs.hpp"

#include "core/dtype.hpp"

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
