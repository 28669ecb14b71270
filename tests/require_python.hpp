#pragma once
// Skips a test that runs Python (ModelNew) candidates where they cannot run: no torch for the
// bridge, or a Python without a shared libpython for the worker to embed.
#include "bridge/torch_helper.hpp"

#include <gtest/gtest.h>

#define REQUIRE_PYTHON_CANDIDATES()                                                                      \
  do {                                                                                                   \
    const auto& t = kforge::bridge::torch_probe();                                                       \
    if (!t.available) GTEST_SKIP() << "Python candidates need the bridge's torch: " << t.why;            \
    if (t.interpreter.value("libpython", "").empty()) GTEST_SKIP() << t.interpreter.value("why_no_libpython", ""); \
  } while (0)
