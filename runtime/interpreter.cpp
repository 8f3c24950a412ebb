// Interpreter: a context's plan walked step by step (runtime/interpreter.h). The budgets it
// runs within (running time, steps recorded, the size of a value put together) are checked
// by interpreter_budgets.cpp.
#include "runtime/interpreter.h"

#include <limits>

#include "compiler/input_checks.h"
#include "plans/value_json.h"
#include "runtime/checkpoint.h"
#include "runtime/engine_core.h"
#include "runtime/interpreter_internal.h"
#include "runtime/journal.h"
#include "runtime/flow_slot.h"
#include "runtime/record_json.h"
#include "runtime/context_store.h"
#include "runtime/step_host.h"

namespace flowrt {
namespace {

using interpreter_internal::coarse_monotonic_ms;
using interpreter_internal::error_value;

ExecState& ensure_state(Context& ctx) {
  if (!ctx.state) ctx.state = std::make_unique<ExecState>();
  return *ctx.state;
}

// The commits one built-in step makes with a durable store (Context::held_commits): held
// in the journal while the step runs, released when it is over, with the checkpoint past
// the step when the context goes on (so the write and the progress past it are durable
// together). Any other way out (an exception) releases them without one: nothing may stay
// held, or the journal would write nothing more.
class HeldCommits {
 public:
  HeldCommits(EngineCore& core, Context& ctx) : core_(core), ctx_(ctx) { ctx_.checkpoint_step = core_.journal != nullptr; }
  ~HeldCommits() { release(false); }
  HeldCommits(const HeldCommits&) = delete;
  HeldCommits& operator=(const HeldCommits&) = delete;

  // The step is over; `goes_on`: the context runs on from here (not parked, not ended).
  void release(bool goes_on) {
    ctx_.checkpoint_step = false;
    if (ctx_.held_commits.empty()) return;
    std::optional<StoreChange> checkpoint;
    if (goes_on) checkpoint = checkpoint_update(ctx_, core_.props().record_value_limit, false);
    core_.journal->release(ctx_.held_commits, std::move(checkpoint));
    ctx_.held_commits.clear();
  }

 private:
  EngineCore& core_;
  Context& ctx_;
};

std::string join_path(const Value& prefix, std::string_view segment) {
  std::string s(prefix.as_string());
  s += segment;
  return s;
}

// A step that calls an action registered in C++ (user code, under the watchdog).
bool runs_user_code(const Node& node) {
  const auto* step = std::get_if<ActionStep>(&node.op);
  return step && step->kind == ActionKind::kCustom;
}

}  // namespace

Interpreter::Interpreter(EngineCore& core, Context& ctx)
    : core_(core), ctx_(ctx), exec_(ensure_state(ctx)), props_(core.props()) {}

TimeMs Interpreter::now() const { return core_.clock.now(); }

Interpreter::Outcome Interpreter::run(uint32_t max_steps) {
  max_steps_ = max_steps;
  steps_taken_ = 0;
  slice_start_ = core_.run_clock_ms();
  coarse_start_ = coarse_monotonic_ms();
  budget_ms_ = static_cast<double>(props_.max_run_time) - ctx_.exec().run_ms;
  Flow flow = Flow::kContinue;
  if (!exec_.started) {
    if (!start()) return Outcome::kFinished;
  } else if (exec_.parked) {
    flow = resume();
  }
  if (flow == Flow::kContinue) flow = loop();
  if (flow == Flow::kAbandoned) return Outcome::kAbandoned;  // touch nothing
  if (flow == Flow::kParked || flow == Flow::kYielded) {
    ctx_.exec().run_ms += elapsed_ms();
    return flow == Flow::kParked ? Outcome::kParked : Outcome::kYielded;
  }
  return Outcome::kFinished;
}

Status Interpreter::rebind_wait() {
  if (!exec_.parked || exec_.wait.kind != WaitRequest::Kind::kRecord) return Status::ok();
  const auto* step = std::get_if<ActionStep>(&exec_.parked_node->op);
  if (!step) return Error{"its wait is not a step's"};
  Result<Condition> bound = bind_condition(step->condition, scope_for(exec_.stack.back()));
  if (!bound) return bound.error();
  exec_.wait.condition = std::make_shared<const Condition>(std::move(bound).value());
  return Status::ok();
}

bool Interpreter::start() {
  exec_.started = true;
  if (ctx_.cancel_requested()) {
    finish(ContextStatus::kCancelled, Value());
    return false;
  }
  if (ctx_.compile_error) {
    finish(ContextStatus::kError, error_value(*ctx_.compile_error, Value()));
    return false;
  }
  if (!ctx_.plan) {
    FlowRegistry::PlanResult p = core_.plan_of(*ctx_.flow);
    if (!p.plan) {
      finish(ContextStatus::kError, error_value("flow '" + ctx_.flow->id + "' does not compile: " + p.error, Value()));
      return false;
    }
    ctx_.plan = std::move(p.plan);
  }
  const PlanUnit& root = ctx_.plan->root();
  std::vector<Value> inputs;
  for (const Param& p : root.inputs) inputs.push_back(ctx_.inputs[p.name]);
  push_activation(0, std::move(inputs), ctx_.inputs, -1, Value());
  ctx_.record_start(*ctx_.plan, now());
  return true;
}

void Interpreter::push_activation(uint32_t unit_index, std::vector<Value> inputs, Value input_object,
                                  int64_t call_record, Value prefix) {
  const PlanUnit& unit = ctx_.plan->units[unit_index];
  Activation a;
  a.unit = unit_index;
  a.steps.resize(unit.step_ids.size());
  a.vars = unit.variable_initial;
  a.inputs = std::move(inputs);
  a.input_object = std::move(input_object);
  a.items.resize(unit.max_loop_depth);
  a.outputs.resize(unit.outputs.size());
  a.call_record = call_record;
  a.prefix = std::move(prefix);
  BlockFrame body;
  body.kind = BlockFrame::Kind::kBody;
  body.block = &unit.body;
  body.prefix = a.prefix;
  body.dynamic = !a.prefix.as_string().empty();
  a.blocks.push_back(std::move(body));
  exec_.stack.push_back(std::move(a));
}

void Interpreter::push_block(Activation& a, BlockFrame::Kind kind, const Block* block, const Value& owner_path,
                             std::string_view segment, int64_t record, const Node* owner) {
  const BlockFrame& parent = a.blocks.back();
  BlockFrame f;
  f.kind = kind;
  f.block = block;
  f.owner = owner;
  f.owner_path = owner_path;
  f.record = record;
  // Static paths hold unless a loop iteration or a call prefix is somewhere above.
  f.dynamic = parent.dynamic || parent.kind == BlockFrame::Kind::kLoop || kind == BlockFrame::Kind::kLoop;
  if (f.dynamic) f.prefix = Value(std::string_view(join_path(owner_path, segment)));
  a.blocks.push_back(std::move(f));
}

Scope Interpreter::scope_for(const Activation& a) const {
  Scope s;
  s.trigger = &ctx_.trigger;
  s.steps = a.steps;
  s.variables = a.vars;
  s.inputs = a.inputs;
  s.input_object = &a.input_object;
  s.items = a.items;
  for (auto it = a.blocks.rbegin(); it != a.blocks.rend(); ++it) {
    if (it->kind == BlockFrame::Kind::kCatch) {
      s.error = &it->error;
      break;
    }
  }
  s.context_id = &ctx_.id;
  s.max_value_bytes = props_.max_value_bytes;
  s.flow_id = &ctx_.flow->id_value;
  return s;
}

Value Interpreter::path_of(const Activation&, const BlockFrame& f, const Node& node, uint32_t index) const {
  if (!f.dynamic) return node.path;
  std::string s(f.prefix.as_string());
  s += std::to_string(index + 1);
  if (f.kind == BlockFrame::Kind::kLoop) {
    s += '#';
    s += std::to_string(f.iteration + 1);
  }
  return Value(std::string_view(s));
}

Interpreter::Flow Interpreter::loop() {
  while (true) {
    if (ctx_.cancel_requested()) return finish(ContextStatus::kCancelled, Value());
    if (over_quota()) return finish(ContextStatus::kError, error_value(quota_message(), Value()));
    Activation& a = exec_.stack.back();
    BlockFrame& f = a.blocks.back();
    if (f.pc >= f.block->size()) {
      Flow flow = end_block(a);
      if (flow != Flow::kContinue) return flow;
      continue;
    }
    if (max_steps_ > 0 && steps_taken_ == max_steps_) return Flow::kYielded;  // before the next step
    // The engine is stopping: no further step; the context stays queued as it is.
    if (core_.workers.stopping()) return Flow::kYielded;
    // A caller's thread that helps hands the context to the workers before user code.
    if (WorkerPool::helping_thread() && runs_user_code((*f.block)[f.pc])) return Flow::kYielded;
    // Steps bound the record as max_run_time bounds the time: nested loops can record
    // billions of them well within an hour.
    if (ctx_.steps_recorded() >= props_.max_context_steps) {
      return finish(ContextStatus::kError, error_value(steps_message(), Value()));
    }
    ++steps_taken_;
    core_.workers.before_step();
    const uint32_t index = f.pc++;
    Flow flow = step_node(a, f, (*f.block)[index], index);
    if (flow != Flow::kContinue) return flow;
  }
}

Interpreter::Flow Interpreter::step_node(Activation& a, BlockFrame& f, const Node& node, uint32_t index) {
  const Value path = path_of(a, f, node, index);
  switch (node.op.index()) {
    case 0: return run_action(a, node, std::get<ActionStep>(node.op), path);
    case 1: {  // if
      const IfNode& n = std::get<IfNode>(node.op);
      const Scope scope = scope_for(a);
      int chosen = -1;
      for (size_t i = 0; i < n.conditions.size(); ++i) {
        Result<bool> r = evaluate(n.conditions[i], scope);
        if (!r) {
          const int64_t rec = ctx_.begin_step(path, node, now(), Value::empty_object());
          ctx_.end_step(rec, StepStatus::kError, now(), Value(), Value(std::string_view(r.message())));
          return raise(r.message(), path);
        }
        if (*r) {
          chosen = static_cast<int>(i);
          break;
        }
      }
      Value branch;
      const Block* block = nullptr;
      std::string segment;
      if (chosen == 0) {
        branch = Value("then");
        block = &n.branches[0];
        segment = ".then.";
      } else if (chosen > 0) {
        branch = Value(std::string_view("else_if." + std::to_string(chosen)));
        block = &n.branches[static_cast<size_t>(chosen)];
        segment = ".else_if." + std::to_string(chosen) + ".then.";
      } else if (n.has_else) {
        branch = Value("else");
        block = &n.else_block;
        segment = ".else.";
      }
      const TimeMs t = now();
      const int64_t rec = ctx_.begin_step(path, node, t, Value::empty_object());
      ctx_.end_step(rec, StepStatus::kCompleted, t, Value::object({{"branch", branch}}), Value());
      if (block) {
        push_block(a, BlockFrame::Kind::kBranch, block, path, segment, -1, &node);
        a.blocks.back().branch = chosen >= 0 ? static_cast<uint32_t>(chosen) : BlockFrame::kElse;
      }
      return Flow::kContinue;
    }
    case 2: {  // for_each
      const ForEachNode& n = std::get<ForEachNode>(node.op);
      Result<Value> items = render(n.items, scope_for(a));
      const int64_t rec = ctx_.begin_step(path, node, now(), Value::object({{"items", items ? *items : Value()}}));
      if (!items) {
        ctx_.end_step(rec, StepStatus::kError, now(), Value(), Value(std::string_view(items.message())));
        return raise(items.message(), path);
      }
      Value list = items->is_null() ? Value::empty_array() : *items;
      std::string problem;
      if (!list.is_array()) {
        problem = "for_each needs an array, got " + std::string(type_name(list.type()));
      } else if (list.size() > props_.max_iterations) {
        problem = "for_each over " + std::to_string(list.size()) + " items is more than max_iterations (" +
                  std::to_string(props_.max_iterations) + ")";
      }
      if (!problem.empty()) {
        ctx_.end_step(rec, StepStatus::kError, now(), Value(), Value(std::string_view(problem)));
        return raise(problem, path);
      }
      if (list.size() == 0) {
        ctx_.end_step(rec, StepStatus::kCompleted, now(), Value::object({{"iterations", Value(0)}}), Value());
        return Flow::kContinue;
      }
      push_block(a, BlockFrame::Kind::kLoop, &n.body, path, ".do.", rec, &node);
      BlockFrame& loop = a.blocks.back();
      loop.items = list;
      loop.iteration = 0;
      a.items[n.depth] = list.at(0);
      return Flow::kContinue;
    }
    case 3: {  // try
      const TryNode& n = std::get<TryNode>(node.op);
      const int64_t rec = ctx_.begin_step(path, node, now(), Value::empty_object());
      push_block(a, BlockFrame::Kind::kTry, &n.body, path, ".try.", rec, &node);
      return Flow::kContinue;
    }
    default: {  // end
      const TimeMs t = now();
      const int64_t rec = ctx_.begin_step(path, node, t, Value::empty_object());
      ctx_.end_step(rec, StepStatus::kCompleted, t, Value(), Value());
      // Close the open logic of this unit as completed, with the outputs it has so far (a
      // loop its iterations begun, a try whether it caught), then end the unit.
      while (a.blocks.size() > 1) {
        const BlockFrame& open = a.blocks.back();
        if (open.record >= 0) ctx_.end_step(open.record, StepStatus::kCompleted, t, ended_block_outputs(open), Value());
        a.blocks.pop_back();
      }
      return finish_activation();
    }
  }
}

Value Interpreter::ended_block_outputs(const BlockFrame& f) {
  switch (f.kind) {
    case BlockFrame::Kind::kLoop: return Value::object({{"iterations", Value(static_cast<long long>(f.iteration) + 1)}});
    case BlockFrame::Kind::kTry:
    case BlockFrame::Kind::kCatch: return Value::object({{"caught", Value(f.kind == BlockFrame::Kind::kCatch)}});
    default: return Value();
  }
}

Interpreter::Flow Interpreter::end_block(Activation& a) {
  BlockFrame& f = a.blocks.back();
  switch (f.kind) {
    case BlockFrame::Kind::kBody: return finish_activation();
    case BlockFrame::Kind::kBranch: a.blocks.pop_back(); return Flow::kContinue;
    case BlockFrame::Kind::kLoop: {
      const ForEachNode& n = std::get<ForEachNode>(f.owner->op);
      if (++f.iteration < f.items.size()) {
        f.pc = 0;
        a.items[n.depth] = f.items.at(f.iteration);
        return Flow::kContinue;
      }
      ctx_.end_step(f.record, StepStatus::kCompleted, now(),
                    Value::object({{"iterations", Value(static_cast<long long>(f.items.size()))}}), Value());
      a.items[n.depth] = Value();
      a.blocks.pop_back();
      return Flow::kContinue;
    }
    case BlockFrame::Kind::kTry:
    case BlockFrame::Kind::kCatch:
      ctx_.end_step(f.record, StepStatus::kCompleted, now(),
                    Value::object({{"caught", Value(f.kind == BlockFrame::Kind::kCatch)}}), Value());
      a.blocks.pop_back();
      return Flow::kContinue;
  }
  return Flow::kContinue;
}

Interpreter::Flow Interpreter::run_action(Activation& a, const Node& node, const ActionStep& step, const Value& path) {
  if (step.kind == ActionKind::kSetVariables || step.kind == ActionKind::kAssignOutputs) {
    return run_assignments(a, node, step, path);
  }
  const Scope scope = scope_for(a);
  StepInputs inputs(step.inputs.size());
  std::string render_error;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i].absent()) continue;
    Result<Value> v = render(step.inputs[i], scope);
    if (!v) {
      render_error = v.message();
      break;
    }
    if (render_error = over_value_budget(step.inputs[i], *v, "input", step.input_names[i]); !render_error.empty()) break;
    inputs[i] = std::move(v).value();
  }
  const int64_t rec = ctx_.begin_step(path, node, now(), step_inputs_record(step, as_span(inputs)));
  if (!render_error.empty()) return step_failed(step, rec, path, render_error);

  const Action* action = nullptr;
  switch (step.kind) {
    case ActionKind::kCallSubflow:
    case ActionKind::kCallAction: return call_unit(a, node, step, path, inputs, rec);
    case ActionKind::kCustom: action = core_.actions.action(step.callee); break;
    default: action = builtin_action(step.kind); break;
  }
  if (!action) return step_failed(step, rec, path, "action '" + step.action + "' is not available in this engine");
  ContextHost host(core_, ctx_, [this] { return over_quota(); });
  host.set_step(path);
  StepCall call{step, as_span(inputs), scope, host};
  if (step.kind != ActionKind::kCustom) {
    HeldCommits held(core_, ctx_);
    StepOutcome outcome = action->start(call);
    ctx_.checkpoint_step = false;
    const Flow flow = handle(a, node, step, path, rec, std::move(outcome), &inputs);
    held.release(flow == Flow::kContinue || flow == Flow::kYielded);
    return flow;
  }
  // User code: the watchdog gives up on it if it does not return in time, and then its
  // thread is abandoned. Past max_abandoned_threads of those, no more user code runs.
  if (const uint64_t stuck = core_.workers.abandoned_threads(); stuck >= props_.max_abandoned_threads) {
    return step_failed(step, rec, path,
                       "custom action '" + step.action + "' refused: " + std::to_string(stuck) +
                           " worker threads are stuck in actions that did not return, the limit is " +
                           std::to_string(props_.max_abandoned_threads) + " (max_abandoned_threads)");
  }
  WorkerPool::UserCodeScope no_run_next(core_.workers);
  std::shared_ptr<Watchdog::Call> watch =
      core_.watchdog.begin(ctx_.shared_from_this(), rec, path, step.action, open_records(), slice_start_ + budget_ms_);
  host.set_call(watch.get());
  StepOutcome outcome = action->start(call);
  if (!watch->finish()) {
    // Too late: the context was ended for it and this thread replaced. Touch nothing.
    t_worker_abandoned = true;
    return Flow::kAbandoned;
  }
  core_.watchdog.end(watch);
  // The quota also holds during a long action: it is told to stop (cancel_requested), and
  // whatever it returns, the context ends here, in error, naming the quota.
  if (over_quota()) return quota_exceeded(rec, path);
  // What user code returns nests no deeper than any value a flow may hold: everything
  // after (the record, a store) walks it recursively.
  if (outcome.kind == StepOutcome::Kind::kDone &&
      bound_value(outcome.outputs, std::numeric_limits<size_t>::max(), props_.max_json_depth + 1) == ValueBound::kTooDeep) {
    outcome = StepOutcome::failed("action '" + step.action + "' returned outputs nesting deeper than the limit of " +
                                  std::to_string(props_.max_json_depth) + " (max_json_depth)");
  }
  return handle(a, node, step, path, rec, std::move(outcome), &inputs);
}

std::vector<int64_t> Interpreter::open_records() const {
  std::vector<int64_t> records;
  for (const Activation& a : exec_.stack) {
    for (const BlockFrame& f : a.blocks) {
      if (f.record >= 0) records.push_back(f.record);
    }
    if (a.call_record >= 0) records.push_back(a.call_record);
  }
  return records;
}

Interpreter::Flow Interpreter::run_assignments(Activation& a, const Node& node, const ActionStep& step,
                                               const Value& path) {
  const Scope scope = scope_for(a);
  std::vector<Member> rendered;
  rendered.reserve(step.assignments.size());
  std::string error;
  for (const Assignment& as : step.assignments) {
    Result<Value> v = render(as.value, scope);
    if (!v) {
      error = v.message();
      break;
    }
    if (error = over_value_budget(as.value, *v, "value", as.name); !error.empty()) break;
    rendered.push_back(Member{as.name, std::move(v).value()});
  }
  const int64_t rec = ctx_.begin_step(path, node, now(), Value::object({{"values", Value::object(rendered)}}));
  if (!error.empty()) return step_failed(step, rec, path, error);
  const bool outputs = step.kind == ActionKind::kAssignOutputs;
  for (size_t i = 0; i < step.assignments.size(); ++i) {
    const uint32_t slot = step.assignments[i].slot;
    if (outputs) {
      const Param& p = ctx_.plan->units[a.unit].outputs[slot];
      if (!value_fits(rendered[i].value, p.type)) {
        return step_failed(step, rec, path,
                           "output '" + p.name + "' is declared " + std::string(param_type_name(p.type)) + ", got " +
                               std::string(type_name(rendered[i].value.type())));
      }
      a.outputs[slot] = rendered[i].value;
    } else {
      a.vars[slot] = rendered[i].value;
    }
  }
  if (!outputs && exec_.stack.size() == 1) ctx_.set_variables(Value::array(std::span<const Value>(a.vars)));
  return complete_step(a, step, rec, Value::empty_object());
}

Interpreter::Flow Interpreter::call_unit(Activation& a, const Node& node, const ActionStep& step, const Value& path,
                                         const StepInputs& inputs, int64_t record) {
  const PlanUnit& callee = ctx_.plan->units[step.callee];
  const std::string label = std::string(unit_type_name(callee.type)) + " '" + callee.id + "'";
  for (size_t i = 0; i < callee.inputs.size() && i < inputs.size(); ++i) {
    const Param& p = callee.inputs[i];
    if (p.required && inputs[i].is_null()) return step_failed(step, record, path, label + " needs input '" + p.name + "'");
    if (!value_fits(inputs[i], p.type)) {
      return step_failed(step, record, path,
                         "input '" + p.name + "' of " + label + " must be " + std::string(wanted_type(p.type)) +
                             ", got " + shown_value(inputs[i]));
    }
  }
  // A subflow (or action) calling itself is ignored: direct recursion.
  if (step.callee == a.unit) {
    SkippedStart skipped;
    skipped.flow = Value(std::string_view(callee.id));
    skipped.reason = Value("direct_recursion");
    skipped.event = Value::object({{"type", Value("call")}, {std::string(unit_type_name(callee.type)), Value(std::string_view(callee.id))}});
    skipped.cause = Value::object({{"context", ctx_.id}, {"flow", ctx_.flow->id_value}});
    core_.contexts.add_skipped(std::move(skipped));
    ctx_.add_log(LogLevel::kInfo, path, now(), Value(std::string_view(label + " calls itself; the call is skipped (direct recursion)")));
    ctx_.end_step(record, StepStatus::kSkipped, now(), Value::empty_object(), Value());
    return Flow::kContinue;
  }
  // Through other units, at most indirect_recursion_limit runs of one unit in a chain.
  const int64_t limit = std::clamp<int64_t>(props_.indirect_recursion_limit, 1, kMaxIndirectRecursionLimit);
  int64_t runs = 0;
  for (const Activation& open : exec_.stack) runs += open.unit == step.callee;
  if (runs >= limit) {
    return step_failed(step, record, path,
                       "indirect_recursion_limit: " + label + " already runs " + std::to_string(runs) +
                           (runs == 1 ? " time" : " times") + " in this chain (indirect_recursion_limit " +
                           std::to_string(limit) + ")");
  }
  if (exec_.stack.size() >= kMaxCallDepth) {
    return step_failed(step, record, path,
                       "calls nested more than " + std::to_string(kMaxCallDepth) + " deep (" + label + ")");
  }
  const std::string segment = callee.type == UnitType::kSubflow ? ".subflow." : ".action.";
  push_activation(step.callee, std::vector<Value>(inputs.begin(), inputs.end()), Value(), record,
                  Value(std::string_view(join_path(path, segment))));
  Activation& called = exec_.stack.back();
  called.call_node = &node;
  called.call_path = path;
  return Flow::kContinue;
}

void Interpreter::settle_lock_place(const StepOutcome& outcome, bool parks) {
  if (exec_.lock_place.is_null()) return;
  const bool asks_there = parks && outcome.wait.kind == WaitRequest::Kind::kLock &&
                          outcome.wait.lock_name == exec_.lock_place;
  if (!asks_there) core_.dispatcher.drop_lock_place(ctx_, exec_.lock_place.as_string());
  exec_.lock_place = Value();
}

Interpreter::Flow Interpreter::handle(Activation& a, const Node& node, const ActionStep& step, const Value& path,
                                      int64_t record, StepOutcome outcome, StepInputs* inputs) {
  switch (outcome.kind) {
    case StepOutcome::Kind::kDone:
      settle_lock_place(outcome, false);
      return complete_step(a, step, record, std::move(outcome.outputs));
    case StepOutcome::Kind::kFailed:
      settle_lock_place(outcome, false);
      return step_failed(step, record, path, outcome.error, outcome.outputs);
    case StepOutcome::Kind::kPark:
      if (!core_.try_reserve_wait(props_.max_waiting_contexts)) {
        settle_lock_place(outcome, false);
        return step_failed(step, record, path,
                           "this step cannot wait: " + std::to_string(core_.waiting()) +
                               " contexts are waiting already, the limit is " +
                               std::to_string(props_.max_waiting_contexts) + " (max_waiting_contexts)");
      }
      settle_lock_place(outcome, true);  // a lock step's park asks in its place
      exec_.parked = true;
      exec_.parked_node = &node;
      exec_.parked_record = record;
      exec_.parked_path = path;
      exec_.parked_inputs.assign(std::make_move_iterator(inputs->begin()), std::make_move_iterator(inputs->end()));
      exec_.wait = std::move(outcome.wait);
      ctx_.set_step_status(record, StepStatus::kWaiting);
      return Flow::kParked;
  }
  return Flow::kContinue;
}

Interpreter::Flow Interpreter::complete_step(Activation& a, const ActionStep& step, int64_t record, Value outputs) {
  if (outputs.is_null()) outputs = Value::empty_object();
  if (step.slot >= 0) a.steps[static_cast<size_t>(step.slot)] = outputs;
  ctx_.end_step(record, StepStatus::kCompleted, now(), std::move(outputs), Value());
  return Flow::kContinue;
}

Interpreter::Flow Interpreter::step_failed(const ActionStep& step, int64_t record, const Value& path,
                                           const std::string& message, const Value& with_outputs) {
  Value msg(std::string_view{message});
  Value outputs = with_outputs.is_object() ? with_outputs.with("error", msg) : Value::object({{"error", msg}});
  ctx_.end_step(record, StepStatus::kError, now(), outputs, msg);
  if (step.on_error == OnError::kContinue) {
    if (step.slot >= 0) exec_.stack.back().steps[static_cast<size_t>(step.slot)] = outputs;
    return Flow::kContinue;
  }
  return raise(message, path);
}

Interpreter::Flow Interpreter::raise(const std::string& message, const Value& step_path) {
  while (true) {
    Activation& a = exec_.stack.back();
    while (!a.blocks.empty()) {
      BlockFrame& f = a.blocks.back();
      if (f.kind == BlockFrame::Kind::kTry) {
        // Switch to the catch block, which sees error.message and error.step.
        const TryNode& t = std::get<TryNode>(f.owner->op);
        const Value owner_path = f.owner_path;
        const int64_t record = f.record;
        const Node* owner = f.owner;
        a.blocks.pop_back();
        push_block(a, BlockFrame::Kind::kCatch, &t.handler, owner_path, ".catch.", record, owner);
        a.blocks.back().error = error_value(message, step_path);
        return Flow::kContinue;
      }
      if (f.record >= 0) ctx_.end_step(f.record, StepStatus::kError, now(), Value(), Value(std::string_view(message)));
      a.blocks.pop_back();
    }
    if (exec_.stack.size() == 1) return finish(ContextStatus::kError, error_value(message, step_path));
    // The called unit failed: so does its call step, in the caller.
    const int64_t call_record = a.call_record;
    const Node* call_node = a.call_node;
    const Value call_path = a.call_path;
    exec_.stack.pop_back();
    const ActionStep& call = std::get<ActionStep>(call_node->op);
    Value msg(std::string_view{message});
    Value outputs = Value::object({{"error", msg}});
    ctx_.end_step(call_record, StepStatus::kError, now(), outputs, msg);
    if (call.on_error == OnError::kContinue) {
      if (call.slot >= 0) exec_.stack.back().steps[static_cast<size_t>(call.slot)] = outputs;
      return Flow::kContinue;
    }
    (void)call_path;
  }
}

Interpreter::Flow Interpreter::finish_activation() {
  if (exec_.stack.size() == 1) return finish(ContextStatus::kCompleted, Value());
  Activation done = std::move(exec_.stack.back());
  exec_.stack.pop_back();
  const PlanUnit& unit = ctx_.plan->units[done.unit];
  std::vector<Member> outputs;
  outputs.reserve(unit.outputs.size());
  for (size_t i = 0; i < unit.outputs.size(); ++i) {
    outputs.push_back(Member{Value(std::string_view(unit.outputs[i].name)), done.outputs[i]});
  }
  const ActionStep& call = std::get<ActionStep>(done.call_node->op);
  return complete_step(exec_.stack.back(), call, done.call_record, Value::object(std::move(outputs)));
}

Interpreter::Flow Interpreter::finish(ContextStatus status, Value error) {
  const TimeMs t = now();
  // Steps still open (calls, loops, try blocks, a parked step) end with the context.
  if (status != ContextStatus::kCompleted) {
    const Value reason = status == ContextStatus::kCancelled ? Value("cancelled") : error["message"];
    if (exec_.parked && exec_.parked_record >= 0) {
      ctx_.end_step(exec_.parked_record, StepStatus::kError, t, Value(), reason);
    }
    for (const Activation& a : exec_.stack) {
      for (const BlockFrame& f : a.blocks) {
        if (f.record >= 0) ctx_.end_step(f.record, StepStatus::kError, t, Value(), reason);
      }
      if (a.call_record >= 0) ctx_.end_step(a.call_record, StepStatus::kError, t, Value(), reason);
    }
  }
  exec_.parked = false;
  ctx_.exec().run_ms += elapsed_ms();
  slice_start_ = core_.run_clock_ms();
  core_.finish_context(ctx_, status, std::move(error));
  return Flow::kFinished;
}

Interpreter::Flow Interpreter::resume() {
  WakeUp wake = ctx_.take_wake();
  core_.clear_wait(ctx_);
  if (ctx_.cancel_requested()) return finish(ContextStatus::kCancelled, Value());
  const Node& node = *exec_.parked_node;
  const ActionStep& step = std::get<ActionStep>(node.op);
  const Value path = exec_.parked_path;
  const int64_t record = exec_.parked_record;
  StepInputs inputs(std::make_move_iterator(exec_.parked_inputs.begin()), std::make_move_iterator(exec_.parked_inputs.end()));
  exec_.parked_inputs.clear();
  exec_.parked = false;
  exec_.parked_node = nullptr;
  exec_.parked_record = -1;
  ctx_.set_step_status(record, StepStatus::kInProgress);
  Activation& a = exec_.stack.back();
  const Action* action =
      step.kind == ActionKind::kCustom ? core_.actions.action(step.callee) : builtin_action(step.kind);
  const Scope scope = scope_for(a);
  ContextHost host(core_, ctx_, [this] { return over_quota(); });
  host.set_step(path);
  StepCall call{step, as_span(inputs), scope, host};
  StepOutcome outcome = action->resume(call, wake);
  return handle(a, node, step, path, record, std::move(outcome), &inputs);
}

}  // namespace flowrt
