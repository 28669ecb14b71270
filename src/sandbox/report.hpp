#pragma once
// Which confinement layers were in force for one confined process, and why any is missing.
// kforge-confine writes one JSON line on its report fd just before it runs the program:
//   {"layers": [{"name": "landlock_filesystem", "active": true, "detail": "ABI 7: ..."}, ...],
//    "landlock_abi": 7}
// A layer the machine or the policy lacks is never left out: it is there, inactive, with
// the reason ("unshare(CLONE_NEWUSER): Operation not permitted").
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kforge::sandbox {

struct layer {
  std::string name;     // one of layer_names() (policy.hpp)
  bool active = false;
  std::string detail;   // what it does, or why it is missing
};
using layer_report = std::vector<layer>;

[[nodiscard]] nlohmann::json to_json(const layer_report& r);   // [{"name","active","detail"}]
/// Accepts the array, or the whole report line ({"layers": [...]}).
/// @throws kforge::error (worker) when it is not a report.
[[nodiscard]] layer_report report_from_json(const nlohmann::json& j);
/// @return the names of the layers not active, in report order.
[[nodiscard]] std::vector<std::string> missing(const layer_report& r);
/// @return the layer called `name`, or nullptr.
[[nodiscard]] const layer* find_layer(const layer_report& r, const std::string& name);
/// @return the layer called `name`, appended (inactive) when absent.
layer& layer_at(layer_report& r, const std::string& name);

/// What this machine supports, found by starting kforge-confine on a trivial program under a
/// worker-like policy with every limit set (for `kforge doctor`). When kforge-confine cannot
/// run, every layer is reported missing with that reason; it does not throw.
[[nodiscard]] layer_report probe();

/// The Landlock ABI version of the running kernel: 0 when Landlock is absent or disabled.
[[nodiscard]] int landlock_abi();

} // namespace kforge::sandbox
