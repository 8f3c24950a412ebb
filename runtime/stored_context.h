// The rows a context leaves in a Store (store/store.h, StoredContext), and reading them
// back: its trigger event in full (what a queued context needs to start after a restart),
// its cause and causal chain. Free functions over immutable data; thread-safe.
#pragma once

#include <memory>

#include "plans/eval.h"
#include "plans/result.h"
#include "plans/value.h"
#include "store/store.h"

namespace flowrt {

class Context;
struct Cause;

// The trigger event with everything a flow reads of it: {"type", "operation", "time",
// "table", "sys_id", "record", "previous", "payload", "name"} (what applies).
Value trigger_to_stored(const TriggerData& t);
Result<TriggerData> trigger_from_stored(const Value& v);
// {"context", "flow", "chain": [flow ids]}, or null for no cause.
Value cause_to_stored(const Cause* cause);
std::unique_ptr<const Cause> cause_from_stored(const Value& v);
// The row of a context just queued (status "queued"). REQUIRES: it is published. A test
// run's row keeps the definition it runs (Context::test_definition) as its trigger's
// "test" member: trigger_from_stored reads past it, stored_test_definition reads it.
StoredContext stored_row(const Context& ctx);
// The definition a stored trigger's test run runs; null when the row is not a test run's.
const Value& stored_test_definition(const Value& stored_trigger);
// The change that brings a started context's row up to date: its status, times and
// record as they stand (steps' inputs and outputs capped at `value_limit`; 0 = no cap),
// the record as its JSON text. Built on the thread that runs or ended the context, not on
// the journal's writer.
ContextUpdate record_update(const Context& ctx, size_t value_limit);

}  // namespace flowrt
