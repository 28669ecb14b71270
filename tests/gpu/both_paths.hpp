#pragma once
// The GPU-resident path and the host path judged the same candidate on the same inputs (a
// fixed --seed): the same status, failing case, worst element and reference error.
#include "worker/evaluate.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace kforge::test {

inline void expect_same_verdicts(const worker::evaluation& dev, const worker::evaluation& host, const std::string& name) {
  EXPECT_EQ(dev.engine.value("path", ""), "device") << name << ": " << dev.engine.dump();
  EXPECT_EQ(host.engine.value("path", ""), "host");
  EXPECT_EQ(dev.status, host.status) << name << "\n device: " << dev.message << "\n host: " << host.message;
  if (dev.failure && host.failure) {
    EXPECT_EQ(dev.failure->case_name, host.failure->case_name) << name;
    auto worst = [](const eval::check_result& f) {
      return f.detail.contains("worst") ? f.detail["worst"].value("element", "") : std::string();
    };
    EXPECT_EQ(worst(*dev.failure), worst(*host.failure)) << name;
  }
  ASSERT_EQ(dev.reference_errors.size(), host.reference_errors.size()) << name;
  for (std::size_t i = 0; i < dev.reference_errors.size(); ++i)
    EXPECT_NEAR(dev.reference_errors[i].error.max_abs, host.reference_errors[i].error.max_abs, 1e-12)
        << name << ": the same truth on both paths";
  std::printf("%-28s device %-16s (oracle %.2f, verify %.2f s)  host %-16s (oracle %.2f, verify %.2f s)\n", name.c_str(),
              dev.status.c_str(), dev.phases.value("oracle_s", 0.0), dev.phases.value("verify_s", 0.0),
              host.status.c_str(), host.phases.value("oracle_s", 0.0), host.phases.value("verify_s", 0.0));
}

} // namespace kforge::test
