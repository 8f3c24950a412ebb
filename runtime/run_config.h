// RunConfig: config.json of `flowrt run` (SPEC section 12) read into EngineOptions:
// "properties" (each as set_property checks it), "locks" ({"NAME": {"limit": N}}, N >= 1),
// "start_time" of the virtual clock and "store" ("memory", {"type": "sqlite", "path":
// FILE} with FILE relative to the config's folder, or {"type": "postgresql", "url":
// "postgresql://..."}; docs/DURABILITY.md). Read by runtime/project.h (so by the command line
// and the library alike) and by every tool that must read a config exactly as `flowrt run`
// does (the events fuzz target). Every problem is reported at once, each naming the config
// (`name`) and the JSON pointer of what is wrong; on any, nothing is half-applied.
#pragma once

#include <string>
#include <string_view>

#include "compiler/diagnostics.h"
#include "plans/result.h"
#include "plans/value.h"
#include "runtime/engine_options.h"

namespace flowrt {

// Reads a parsed config document into *options (which starts as given: a virtual clock is
// set, the rest overwritten only by what the config says). Returns false, with every
// problem in *diags and *options unchanged, when anything is wrong.
bool read_run_config(const Value& doc, const std::string& name, EngineOptions* options, Diagnostics* diags);
// The same from the config's text; a syntax error is reported at pointer "/" with its line
// and column.
bool read_run_config_text(std::string_view text, const std::string& name, EngineOptions* options, Diagnostics* diags);

// Where a --data value keeps the state: a PostgreSQL database when it is a postgresql:// or
// postgres:// URL, else the SQLite file it names (store/store.h: is_postgres_url).
void use_data_store(const std::string& data, EngineOptions* options);

// The engine options of a parsed config document (a virtual clock); the error holds every
// problem, one per line.
Result<EngineOptions> run_config_from_value(const Value& doc, const std::string& name);
// The same, from the config's text.
Result<EngineOptions> parse_run_config(std::string_view text, const std::string& name);

}  // namespace flowrt
