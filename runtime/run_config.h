// RunConfig: config.json of `flowrt run` (SPEC section 12) read into EngineOptions:
// "properties" (each as set_property checks it), "locks" ({"NAME": {"limit": N}}, N >= 1)
// and "start_time" of the virtual clock. Shared by the command line and every tool that
// must read a config exactly as `flowrt run` does (the events fuzz target). Errors name
// the config (`name`) and the JSON pointer of what is wrong; nothing is half-applied.
#pragma once

#include <string>
#include <string_view>

#include "plans/result.h"
#include "plans/value.h"
#include "runtime/engine_core.h"

namespace flowrt {

// The engine options of a parsed config document (a virtual clock).
Result<EngineOptions> run_config_from_value(const Value& doc, const std::string& name);
// The same, from the config's text.
Result<EngineOptions> parse_run_config(std::string_view text, const std::string& name);

}  // namespace flowrt
