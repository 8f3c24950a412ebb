// ExecState: where a context is in its plan, and its data: the stack of running units
// (the flow, and any subflow or action it called), each with its block frames, step
// outputs, variables, inputs and loop items. Plain data that refers into the context's
// immutable plan. to_value/from_value write the position and the data out as JSON
// (positions as indices, the wait with all its fields) and read them back against the
// same plan version: with the context's record, a checkpoint (runtime/checkpoint.h) from
// which the context resumes after a restart. A record wait's bound condition is not
// written: it is bound again from the restored data (Interpreter::rebind_wait).
// Owned by the thread running the context; not synchronized.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "actions/action.h"
#include "plans/plan.h"
#include "plans/result.h"
#include "plans/value.h"
#include "runtime/clock.h"

namespace flowrt {

// A step's rendered inputs; most steps have few, so they stay off the heap.
using StepInputs = boost::container::small_vector<Value, 6>;
inline std::span<const Value> as_span(const StepInputs& v) { return {v.data(), v.size()}; }

struct BlockFrame {
  enum class Kind : uint8_t { kBody, kBranch, kLoop, kTry, kCatch };
  Kind kind = Kind::kBody;
  const Block* block = nullptr;
  uint32_t pc = 0;          // index of the next node of `block` to run
  uint32_t branch = 0;      // kBranch: 0 = then, k = else_if k, kElse = else
  Value prefix;             // path of this block's nodes = prefix + index (+ "#iteration")
  bool dynamic = false;     // false: nodes' static paths apply
  Value items;              // kLoop: the items
  uint32_t iteration = 0;   // kLoop: index of the current item
  int64_t record = -1;      // step entry of the node that opened the block (loop, try)
  const Node* owner = nullptr;  // the logic node that opened the block (null for a body)
  Value owner_path;         // its run-time path
  Value error;              // kCatch: {"message", "step"}

  static constexpr uint32_t kElse = UINT32_MAX;
};

struct Activation {
  uint32_t unit = 0;                 // index in plan->units
  std::vector<Value> steps;          // outputs by step slot
  std::vector<Value> vars;           // by variable slot
  std::vector<Value> inputs;         // by declared input slot
  Value input_object;                // all inputs by name (flows without declarations)
  std::vector<Value> items;          // current for_each item by loop depth
  std::vector<Value> outputs;        // by declared output slot
  std::vector<BlockFrame> blocks;
  int64_t call_record = -1;          // the caller's step entry for this call (-1: the flow)
  const Node* call_node = nullptr;   // the caller's call step
  Value call_path;                   // its run-time path
  Value prefix;                      // path prefix of this unit's steps: "3.subflow." ("" for the flow)
};

using Chain = std::vector<Value>;  // flow ids, oldest first

struct ExecState {
  bool started = false;
  std::vector<Activation> stack;
  double run_ms = 0;                 // running time so far, waiting excluded
  std::shared_ptr<const Chain> child_chain;  // see Context::child_chain

  // The parked step, while parked.
  bool parked = false;
  const Node* parked_node = nullptr;
  int64_t parked_record = -1;
  Value parked_path;
  // The parked step's inputs: a plain vector (24 bytes, not StepInputs' 112 inline), since a
  // waiting context keeps its ExecState as long as it waits.
  std::vector<Value> parked_inputs;
  WaitRequest wait;
  TimerHandle timer;                 // the wait's timer (deadline or timeout), if any
  // What woke the parked step; written by the waker under the context's lock while the
  // context is parked or parking, read by the thread that resumes it.
  WakeUp wake;
  bool early_wake = false;           // a wake-up that came while parking
  // The lock whose queue the running step holds a place in (Dispatcher::try_lock), null
  // when none: the step's park asks for it there, or the interpreter gives it up once the
  // step returns without parking for it. Lives within one step; never checkpointed.
  Value lock_place;

  // JSON: {"plan_version", "stack": [...], "parked": {...}}, fields at their defaults left
  // out. A wait's seen version that is `trigger_record` (the same storage: the context's
  // trigger record) is written as {"seen_is_trigger": true}.
  Value to_value(const Plan& plan, const Value& trigger_record = Value()) const;
  // Rebuilds the state written by to_value against the same plan (and the same trigger
  // record); reads the older form with every field written, too.
  static Result<ExecState> from_value(const Value& v, const Plan& plan, const Value& trigger_record = Value());
};

}  // namespace flowrt
