#include "bridge/torch_device.hpp"

#include "bridge/torch_reference.hpp"
#include "core/dtype.hpp"

#include <fmt/format.h>

namespace kforge::bridge {

device_truth::device_truth(const problem::problem& p, int device_index, int fd, const nlohmann::json& exchange,
                           double timeout_s)
    : m_timeout_s(timeout_s) {
  // Every tensor's place in the exchange, as the helper views it ("in/x", "reference/y", "oracle/y").
  nlohmann::json views = nlohmann::json::array();
  auto add = [&](const std::string& key, const nlohmann::json& offset, kf_dtype dt, const std::vector<std::int64_t>& shape) {
    views.push_back({{"key", key}, {"offset", offset}, {"dtype", dtype_name(dt)}, {"shape", shape}});
  };
  const auto ins = p.inputs();
  const auto outs = p.outputs();
  for (std::size_t k = 0; k < ins.size(); ++k) add("in/" + ins[k]->name, exchange["inputs"][k], ins[k]->dtype, ins[k]->shape);
  for (std::size_t k = 0; k < outs.size(); ++k) {
    add("reference/" + outs[k]->name, exchange["reference"][k], outs[k]->dtype, outs[k]->shape);
    add("oracle/" + outs[k]->name, exchange["oracle"][k], outs[k]->oracle_dtype(), outs[k]->shape);
  }
  m_request = torch_request(p);
  m_request["device"] = torch_device(p, device_index);
  m_request["views"] = views;
  m_helper.send_fd("exchange", fd);
  const auto answer = m_helper.call("map", {{"bytes", exchange["bytes"]}, {"device", m_request["device"]}}, m_timeout_s);
  m_device_name = answer.value("device_name", "");
}

device_truth::~device_truth() {
  try {
    (void)m_helper.call("unmap", nlohmann::json::object(), m_timeout_s);
  } catch (...) {
    m_helper.retire(); // it may still hold the judge's memory: never reused
  }
}

void device_truth::run(int trial) {
  auto req = m_request;
  req["trial"] = trial;
  (void)m_helper.call("run_shared", req, m_timeout_s);
}

void device_truth::stage(int r) {
  auto req = m_request;
  req["rotation"] = r;
  (void)m_helper.call("stage", req, m_timeout_s);
}

nlohmann::json device_truth::time(nlohmann::json request, double timeout_s) {
  request["staged"] = true;
  return m_helper.call("time", request, timeout_s);
}

} // namespace kforge::bridge
