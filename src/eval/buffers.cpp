#include "eval/buffers.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"

#include <random>

namespace kforge::eval {

guarded_buffer::guarded_buffer(device::backend& dev, std::size_t bytes, std::uint64_t canary_seed, std::size_t guard)
    : m_dev(dev), m_bytes(bytes), m_guard(guard), m_canary(2 * guard) {
  // Random canaries: a candidate cannot restore a guard it overwrote by writing a known pattern back.
  std::mt19937_64 rng(canary_seed);
  for (auto& b : m_canary) b = static_cast<std::uint8_t>(rng());
  m_base = m_dev.allocate(bytes + 2 * m_guard);
  if (m_guard == 0) return;
  m_dev.upload(m_base, m_canary.data(), m_guard);
  m_dev.upload(static_cast<char*>(m_base) + m_guard + bytes, m_canary.data() + m_guard, m_guard);
}

guarded_buffer::guarded_buffer(device::backend& dev, void* data, std::size_t bytes)
    : m_dev(dev), m_base(data), m_bytes(bytes), m_guard(0), m_owned(false) {}

guarded_buffer::~guarded_buffer() {
  if (m_owned) m_dev.release(m_base);
}

std::optional<std::string> guarded_buffer::check_guards() const {
  if (m_guard == 0) return std::nullopt;
  std::vector<std::uint8_t> got(m_guard);
  m_dev.download(got.data(), m_base, m_guard);
  for (std::size_t i = m_guard; i-- > 0;) // nearest the data first
    if (got[i] != m_canary[i]) return fmt::format("{} bytes before the start", m_guard - i);
  m_dev.download(got.data(), static_cast<const char*>(m_base) + m_guard + m_bytes, m_guard);
  for (std::size_t i = 0; i < m_guard; ++i)
    if (got[i] != m_canary[m_guard + i]) return fmt::format("{} bytes after the end", i + 1);
  return std::nullopt;
}

kf_tensor make_tensor_view(const problem::tensor_spec& t, precision prec, void* data) {
  kf_tensor v{};
  v.data = data;
  v.dtype = prec == precision::oracle ? t.oracle_dtype() : t.dtype;
  v.ndim = static_cast<int32_t>(t.shape.size());
  int64_t stride = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    v.shape[d] = t.shape[d];
    v.strides[d] = stride;
    stride *= t.shape[d];
  }
  return v;
}

namespace {
std::size_t tensor_bytes(const problem::tensor_spec& t, precision prec) {
  return static_cast<std::size_t>(t.numel()) * dtype_size(prec == precision::oracle ? t.oracle_dtype() : t.dtype);
}
} // namespace

set_layout shared_set_layout(const problem::problem& p) {
  set_layout l;
  constexpr std::size_t g = guarded_buffer::guard_bytes;
  auto place = [&](std::size_t bytes) {
    const std::size_t at = l.bytes + g;
    l.bytes = (at + bytes + g + 255) / 256 * 256;
    return at;
  };
  for (auto* t : p.inputs()) {
    l.input_bytes.push_back(tensor_bytes(*t, precision::nominal));
    l.inputs.push_back(place(l.input_bytes.back()));
  }
  for (auto* t : p.outputs()) {
    l.output_bytes.push_back(tensor_bytes(*t, precision::nominal));
    l.outputs.push_back(place(l.output_bytes.back()));
  }
  for (auto b : l.output_bytes) l.answers.push_back(place(b));
  return l;
}

tensor_set::tensor_set(device::backend& dev, const problem::problem& p, void* base)
    : m_dev(dev), m_problem(p), m_guard(guarded_buffer::guard_bytes) {
  const auto l = shared_set_layout(p);
  auto* b = static_cast<char*>(base);
  place(precision::nominal, [&](const problem::tensor_spec&, bool input, std::size_t k) {
    return std::make_unique<guarded_buffer>(dev, b + (input ? l.inputs[k] : l.outputs[k]),
                                            input ? l.input_bytes[k] : l.output_bytes[k]);
  });
  for (auto a : l.answers) m_answers.push_back(b + a);
}

tensor_set::tensor_set(device::backend& dev, const problem::problem& p, precision prec, std::uint64_t canary_seed,
                       bool guards)
    : m_dev(dev), m_problem(p), m_guard(guards ? guarded_buffer::guard_bytes : 0) {
  std::uint64_t s = canary_seed;
  place(prec, [&](const problem::tensor_spec& t, bool, std::size_t) {
    return std::make_unique<guarded_buffer>(dev, tensor_bytes(t, prec), ++s, m_guard);
  });
}

void tensor_set::place(precision prec, const buffer_maker& make) {
  std::size_t k = 0;
  for (auto* t : m_problem.inputs()) {
    m_in.push_back(make(*t, true, k++));
    m_in_t.push_back(make_tensor_view(*t, prec, m_in.back()->data()));
    m_in_names.push_back(t->name);
  }
  k = 0;
  for (auto* t : m_problem.outputs()) {
    m_out.push_back(make(*t, false, k++));
    m_out_t.push_back(make_tensor_view(*t, prec, m_out.back()->data()));
    m_out_names.push_back(t->name);
  }
  m_args.inputs = m_in_t.data();
  m_args.num_inputs = static_cast<int32_t>(m_in_t.size());
  m_args.outputs = m_out_t.data();
  m_args.num_outputs = static_cast<int32_t>(m_out_t.size());
  m_args.stream = m_dev.stream();
}

void tensor_set::upload_inputs(const std::vector<host_tensor>& inputs) {
  KFORGE_ASSERT(inputs.size() == m_in.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    KFORGE_ASSERT(inputs[i].bytes.size() == m_in[i]->bytes());
    m_dev.upload(m_in[i]->data(), inputs[i].bytes.data(), inputs[i].bytes.size());
  }
}

void tensor_set::set_workspace(std::size_t bytes, std::uint64_t canary_seed) {
  m_ws = std::make_unique<guarded_buffer>(m_dev, bytes, canary_seed, m_guard);
  m_args.workspace = bytes ? m_ws->data() : nullptr;
  m_args.workspace_bytes = bytes;
}

void tensor_set::poison(std::uint8_t workspace_byte) {
  for (auto& b : m_out) m_dev.fill(b->data(), output_poison, b->bytes());
  if (m_ws && m_ws->bytes()) m_dev.fill(m_ws->data(), workspace_byte, m_ws->bytes());
}

void tensor_set::copy_answers() {
  for (std::size_t k = 0; k < m_answers.size(); ++k) m_dev.copy(m_answers[k], m_out[k]->data(), m_out[k]->bytes());
}

void tensor_set::poison_workspace(std::uint8_t workspace_byte) {
  if (m_ws && m_ws->bytes()) m_dev.fill(m_ws->data(), workspace_byte, m_ws->bytes());
}

namespace {
std::vector<host_tensor> download_all(device::backend& dev, const std::vector<std::unique_ptr<guarded_buffer>>& bufs,
                                      const std::vector<kf_tensor>& views) {
  std::vector<host_tensor> out;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    host_tensor h{views[i].dtype, std::vector<std::uint8_t>(bufs[i]->bytes())};
    dev.download(h.bytes.data(), bufs[i]->data(), h.bytes.size());
    out.push_back(std::move(h));
  }
  return out;
}
} // namespace

std::vector<host_tensor> tensor_set::download_outputs() const { return download_all(m_dev, m_out, m_out_t); }
std::vector<host_tensor> tensor_set::download_inputs() const { return download_all(m_dev, m_in, m_in_t); }

std::vector<device::memory_region> tensor_set::regions() const {
  std::vector<device::memory_region> r;
  for (auto* v : {&m_in, &m_out})
    for (auto& b : *v) r.push_back({b->data(), b->bytes()});
  if (m_ws) r.push_back({m_ws->data(), m_ws->bytes()});
  return r;
}

std::vector<std::string> tensor_set::check_guards() const {
  std::vector<std::string> bad;
  for (std::size_t i = 0; i < m_in.size(); ++i)
    if (auto g = m_in[i]->check_guards()) bad.push_back(fmt::format("input '{}': write {}", m_in_names[i], *g));
  for (std::size_t i = 0; i < m_out.size(); ++i)
    if (auto g = m_out[i]->check_guards()) bad.push_back(fmt::format("output '{}': write {}", m_out_names[i], *g));
  if (m_ws)
    if (auto g = m_ws->check_guards()) bad.push_back(fmt::format("workspace: write {}", *g));
  return bad;
}

} // namespace kforge::eval
