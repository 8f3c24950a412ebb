// Interpreter: runs one context's plan on the calling thread until the context ends or
// must wait.
//
// It walks the plan with the context's ExecState (a stack of units, each a stack of block
// frames), renders inputs, runs actions, records every step, and applies on_error, try /
// catch, loops, calls and `end`. When a step parks, it returns kParked with the wait in
// exec.wait; the engine registers the wait and resumes the context later, perhaps on
// another thread. One Interpreter per run slice; it touches only its own context's
// execution state, which the caller owns for the duration.
#pragma once

#include <chrono>
#include <string>

#include "runtime/context.h"
#include "runtime/properties.h"

namespace flowrt {

class EngineCore;

class Interpreter {
 public:
  // kAbandoned: the watchdog gave up on a custom action that did not return in time and
  // ended the context itself; the caller must touch nothing (see Watchdog).
  enum class Outcome { kFinished, kParked, kYielded, kAbandoned };

  Interpreter(EngineCore& core, Context& ctx);
  // Runs until the context ends or parks, or, with `max_steps` > 0, yields once it has
  // taken that many steps (the simulation's interleaving; run again to go on).
  Outcome run(uint32_t max_steps = 0);
  // A context resumed parked from a checkpoint: binds its record wait's condition again, as
  // its step did when it parked (a checkpoint keeps the wait's data, not the bound
  // condition). Nothing to do for other waits.
  Status rebind_wait();

 private:
  enum class Flow { kContinue, kParked, kFinished, kYielded, kAbandoned };

  bool start();
  Flow resume();
  Flow loop();
  Flow step_node(Activation& a, BlockFrame& f, const Node& node, uint32_t index);
  Flow end_block(Activation& a);
  // The outputs of a loop or try still open when an `end` step completes it.
  static Value ended_block_outputs(const BlockFrame& f);
  Flow run_action(Activation& a, const Node& node, const ActionStep& step, const Value& path);
  // A step returned (`parks`: and will park): a place its lock try took in a queue is
  // kept only for a park that asks for that lock; otherwise it is given up now.
  void settle_lock_place(const StepOutcome& outcome, bool parks);
  Flow run_assignments(Activation& a, const Node& node, const ActionStep& step, const Value& path);
  Flow call_unit(Activation& a, const Node& node, const ActionStep& step, const Value& path,
                 const StepInputs& inputs, int64_t record);
  Flow handle(Activation& a, const Node& node, const ActionStep& step, const Value& path, int64_t record,
              StepOutcome outcome, StepInputs* inputs);
  Flow complete_step(Activation& a, const ActionStep& step, int64_t record, Value outputs);
  Flow step_failed(const ActionStep& step, int64_t record, const Value& path, const std::string& message,
                   const Value& outputs = Value());
  Flow raise(const std::string& message, const Value& step_path);
  Flow finish_activation();
  Flow finish(ContextStatus status, Value error);

  void push_activation(uint32_t unit, std::vector<Value> inputs, Value input_object, int64_t call_record, Value prefix);
  void push_block(Activation& a, BlockFrame::Kind kind, const Block* block, const Value& owner_path,
                  std::string_view segment, int64_t record, const Node* owner);
  Scope scope_for(const Activation& a) const;
  Value path_of(const Activation& a, const BlockFrame& f, const Node& node, uint32_t index) const;
  bool over_quota() const;
  std::string quota_message() const;
  // The error of a context that would record more than max_context_steps steps.
  std::string steps_message() const;
  // "" when `v`, rendered from `t`, is within max_value_bytes and max_json_depth;
  // else the error that fails the step, naming the `kind` ("input", "value") and `name`
  // of what passed which budget.
  std::string over_value_budget(const Template& t, const Value& v, const char* kind, const Value& name) const;
  // The entries of the steps that enclose the current one (calls, loops, blocks).
  std::vector<int64_t> open_records() const;
  Flow quota_exceeded(int64_t record, const Value& path);
  double elapsed_ms() const;
  TimeMs now() const;

  EngineCore& core_;
  Context& ctx_;
  ExecState& exec_;
  const EngineProperties& props_;  // as they were when this slice began (an immutable snapshot)
  double slice_start_ = 0;    // on the engine's running-time clock, ms
  double budget_ms_ = 0;      // running time this slice may use before the quota passes
  int64_t coarse_start_ = 0;  // ms, on the coarse monotonic clock (quota checks)
  uint32_t max_steps_ = 0;    // steps this slice may take before yielding; 0 = no limit
  uint32_t steps_taken_ = 0;
};

}  // namespace flowrt
