// Checkpoint: what a durable store keeps of a live context so that it resumes after a
// restart (docs/DURABILITY.md, "Contexts resume"): {"exec": ExecState::to_value (plan
// version, position, variables, step outputs, the wait with all its fields), "record":
// Context::record_state() (the execution record so far, compact), "uses": [[type, id,
// fingerprint], ...] (every definition the plan was compiled from, to compile it again)}.
//
// The thread running a context writes one when the context parks, and one with the commits
// of every built-in step (they are held in the journal until it joins them, so a write and
// the context's progress past it are durable together). Recovery reads it back against the
// plan version it names. Free functions; the context is the caller's (its running thread,
// or recovery before the context is shared).
#pragma once

#include <memory>

#include "plans/plan.h"
#include "plans/result.h"
#include "plans/value.h"
#include "store/store.h"

namespace flowrt {

class Context;

// The ContextUpdate for `ctx` as it stands: its status, its checkpoint and, `with_record`,
// its record (SPEC section 10, values capped at `value_limit`) for readers of the file
// (flowrt inspect); without, the stored record stays as it was (a running context's
// record is written when it parks and when it ends). REQUIRES: it started, not ended.
ContextUpdate checkpoint_update(Context& ctx, size_t value_limit, bool with_record);

// The plan version a checkpoint was written for; "" when it names none.
std::string checkpoint_plan_version(const Value& checkpoint);

// Puts `checkpoint` back into `ctx` (not started yet, not shared): its plan, execution
// state and record, with status waiting (parked) or in progress. An error says what does
// not fit (a corrupt row, another plan).
// `resting`: a context parked on a timer or a record is restored resting
// (Context::restore_resting): its record is left in the row.
Status restore_checkpoint(Context& ctx, const Value& checkpoint, std::shared_ptr<const Plan> plan, bool resting = false);

// Puts back into a resting `ctx` (its running thread, woken, its plan set) what left
// memory when it came to rest: the execution stack and parked inputs, and the record's
// steps, logs and variables, from the checkpoint of the wait it rests in. Everything else
// (the wait, its timer, the wake-up) stayed. An error says what does not fit.
Status rehydrate_checkpoint(Context& ctx, const Value& checkpoint);

}  // namespace flowrt
