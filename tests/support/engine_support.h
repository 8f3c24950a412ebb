// Helpers for tests that open engines again and again on one data file (the store tests).
// Header-only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/engine.h"

namespace flowrt::test_support {

// Closes `*engine` (if open), opens one with `options`, loads `defs` (each must load
// cleanly) and recovers. Returns the recovery report; a failed open fails the test and
// leaves `*engine` empty.
inline Value reopen_engine(std::unique_ptr<Engine>* engine, EngineOptions options, const std::vector<const char*>& defs) {
  engine->reset();
  Result<std::unique_ptr<Engine>> opened = Engine::open(std::move(options));
  EXPECT_TRUE(opened.is_ok()) << (opened ? "" : opened.message());
  if (!opened) return Value();
  *engine = std::move(opened).value();
  for (const char* d : defs) {
    Diagnostics diags = (*engine)->load_text(d);
    EXPECT_TRUE(diags.empty()) << diags.describe();
  }
  return (*engine)->recover();
}

}  // namespace flowrt::test_support
