#include "sandbox/report.hpp"

#include "core/error.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace kforge::sandbox {

nlohmann::json to_json(const layer_report& r) {
  auto a = nlohmann::json::array();
  for (auto& l : r) a.push_back({{"name", l.name}, {"active", l.active}, {"detail", l.detail}});
  return a;
}

layer_report report_from_json(const nlohmann::json& j) {
  const auto& a = j.is_object() && j.contains("layers") ? j["layers"] : j;
  if (!a.is_array()) KFORGE_THROW(worker, "confinement report: expected an array of layers, got {}", j.dump());
  layer_report r;
  for (auto& e : a) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("active") ||
        !e["active"].is_boolean())
      KFORGE_THROW(worker, "confinement report: malformed layer {}", e.dump());
    r.push_back({e["name"].get<std::string>(), e["active"].get<bool>(),
                 e.contains("detail") && e["detail"].is_string() ? e["detail"].get<std::string>() : ""});
  }
  return r;
}

std::vector<std::string> missing(const layer_report& r) {
  std::vector<std::string> out;
  for (auto& l : r)
    if (!l.active) out.push_back(l.name);
  return out;
}

const layer* find_layer(const layer_report& r, const std::string& name) {
  for (auto& l : r)
    if (l.name == name) return &l;
  return nullptr;
}

layer& layer_at(layer_report& r, const std::string& name) {
  for (auto& l : r)
    if (l.name == name) return l;
  r.push_back({name, false, ""});
  return r.back();
}

int landlock_abi() {
  // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
  const long v = ::syscall(444, nullptr, 0, 1UL);
  return v < 0 ? 0 : static_cast<int>(v);
}

} // namespace kforge::sandbox
