// How the engine's record types print in GoogleTest failures (PrintTo, found by ADL): as
// indented JSON, never as bytes.
#include <ostream>

#include "plans/value_json.h"
#include "runtime/context_record_view.h"
#include "runtime/engine_stats.h"

namespace flowrt {

void PrintTo(const ContextRecord& record, std::ostream* os) { *os << to_pretty_json(record.value()); }

void PrintTo(const EngineStats& stats, std::ostream* os) { *os << to_pretty_json(stats.to_value()); }

}  // namespace flowrt
