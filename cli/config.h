// config.json for `flowrt run` (SPEC section 12): properties, lock limits, clock start,
// read by runtime/run_config.h (what the events fuzz target reads its config with too).
#pragma once

#include <map>
#include <string>

#include "plans/result.h"
#include "runtime/engine_core.h"

namespace flowrt::cli {

struct RunConfig {
  EngineOptions engine;  // properties, lock limits ("locks": {"NAME": {"limit": N}}), clock start
};

// Reads config.json; a missing optional file gives the defaults.
Result<RunConfig> read_config(const std::string& path, bool must_exist);

}  // namespace flowrt::cli
