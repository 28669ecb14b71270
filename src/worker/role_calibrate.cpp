// Role "calibrate" (kforge calibrate): the calibration kernels' measured ceilings.
#include "worker/roles.hpp"

#include <dlfcn.h>

#include <string>
#include <vector>

namespace kforge::worker {

int run_calibrate(channel_writer& ch, const nlohmann::json& job) {
  const std::string path = job["libraries"]["calibrate"];
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", std::string("dlopen: ") + ::dlerror()}});
    return 0;
  }
  using calibrate_fn = int (*)(double*, int);
  auto fn = reinterpret_cast<calibrate_fn>(::dlsym(h, "kf_calibrate"));
  if (!fn) {
    ch.send({{"type", "error"}, {"reason", "load_failed"}, {"message", "no kf_calibrate"}});
    return 0;
  }
  std::vector<double> v(5, 0.0);
  const int rc = fn(v.data(), static_cast<int>(v.size()));
  ch.send({{"type", "calibration"}, {"rc", rc}, {"values", v}});
  return 0;
}

} // namespace kforge::worker
