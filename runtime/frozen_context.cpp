#include "runtime/frozen_context.h"

#include <cassert>
#include <cstring>
#include <new>
#include <optional>
#include <vector>

#include "plans/value_pack.h"
#include "runtime/flow_slot.h"
#include "runtime/record_json.h"

namespace flowrt {

// The packed record, in order (every time but the start relative to the context's start):
//   status (one byte, read by status()), commit_seq (as the difference from seq), started,
//   ended, run_ms, error, variables,
//   trigger: type, operation, flags (has_previous, kTableOfPlan), time, table unless the
//            plan's trigger's, sys_id, payload, event_name, caller,
//   cause: 0, or 1 and context id, flow id, chain length, the chain's flow ids,
//   steps: count, then per step node ordinal, status and flags (kPathOfNode), the path
//          unless the node's, started, duration (-1: none), inputs, outputs,
//   logs: count, then per line time, level and flags (kStepOfEntry, kMessageOfInput), the
//         step (as the distance from the last line's step entry, or the path), the message
//         unless the step's "message" input.
// Most of a step's inputs are what its node's templates say (the constants, the text
// around the pills): an action's inputs are written against its templates
// (ValuePacker::value_as), so only what the pills gave takes bytes. A log line is nearly
// always a log step's: it names that step's entry, and takes its message from there.
struct FrozenContext::Decoded {
  uint64_t commit_seq = 0;
  TimeMs started = -1;
  TimeMs ended = -1;
  double run_ms = 0;
  Value error;
  Value variables;
  TriggerData trigger;
  std::optional<Cause> cause;
  std::vector<StepEntry> steps;
  std::vector<LogEntry> logs;
};

namespace {

// Flags beside a step's status, and beside a log line's level.
constexpr uint8_t kPathOfNode = 0x10;     // the step's path is its node's (not in a loop)
constexpr uint8_t kStepOfEntry = 0x10;    // the line's step is a step entry's path
constexpr uint8_t kMessageOfInput = 0x20; // the line's message is that step's "message" input
constexpr uint8_t kLowBits = 0x0F;
// Beside the trigger's has_previous (bit 0): its table is the plan's trigger's.
constexpr uint8_t kTableOfPlan = 0x02;
static_assert(static_cast<uint8_t>(StepStatus::kSkipped) <= kLowBits);
static_assert(sizeof(FrozenContext) == 40, "the header: count, size, seq, flow, plan");
static_assert(static_cast<uint8_t>(LogLevel::kError) <= kLowBits);
// How far past the last line's step a log line's step is looked for.
constexpr size_t kStepSearch = 16;

// The inputs given to the action step `node` runs, by name, as step_inputs_record made
// them from its templates (for call_subflow, the subflow's inputs inside the record): null
// when `inputs` is not that, and is written plain.
const Value* named_inputs(const Node& node, const Value& inputs) {
  const ActionStep* step = std::get_if<ActionStep>(&node.op);
  if (!step) return nullptr;
  const Value* named = &inputs;
  if (step->kind == ActionKind::kCallSubflow) {
    static const Value kSubflowCallKeys = Value::array({Value("subflow"), Value("inputs")});
    if (!inputs.has_keys(kSubflowCallKeys) || !inputs["subflow"].is_string() ||
        inputs["subflow"].as_string() != step->callee_id) {
      return nullptr;
    }
    named = inputs.find("inputs");
  }
  return named->has_keys(step->given_input_names) ? named : nullptr;
}

void pack_inputs(ValuePacker& out, const StepEntry& e) {
  const Value* named = named_inputs(*e.node, e.inputs);
  if (!named) return out.value(e.inputs);
  const ActionStep& step = std::get<ActionStep>(e.node->op);
  out.parts(named->size());
  size_t i = 0;
  for (const auto& m : named->members()) {
    while (step.inputs[i].absent()) ++i;
    out.value_as(m.value, step.inputs[i++]);
  }
}

Value read_inputs(PackedReader& in, const Node& node) {
  size_t n = 0;
  const ActionStep* step = std::get_if<ActionStep>(&node.op);
  if (!step || !in.parts(&n)) return in.value();
  assert(n == step->given_input_names.size());
  ObjectBuilder named(step->given_input_names);
  for (const Template& t : step->inputs) {
    if (!t.absent()) named.add_value(in.value_as(t));
  }
  if (step->kind == ActionKind::kCallSubflow) return subflow_call_record(*step, named.build());
  return named.build();
}

// The entry in `steps`, at or past `from` and not far, whose path `step` is: -1 if none.
int64_t entry_of(const std::vector<StepEntry>& steps, size_t from, const Value& step) {
  if (step.is_null()) return -1;
  for (size_t j = from; j < steps.size() && j < from + kStepSearch; ++j) {
    if (steps[j].path.same_storage(step)) return static_cast<int64_t>(j);
  }
  return -1;
}

}  // namespace

boost::intrusive_ptr<const FrozenContext> FrozenContext::freeze(const Context& ctx) {
  // One buffer per thread, reused: packing allocates nothing but the frozen block.
  thread_local ValuePacker out;
  out.clear();
  bool recorded = false;
  {
    SpinLockGuard lock(ctx.record_mu_);
    // Steps name their nodes in the plan kept: the recorded plan must be that one (it is,
    // but for a context restored from a checkpoint, which a memory store never has).
    if (ctx.recorded_plan_ && ctx.recorded_plan_ != ctx.plan.get()) return nullptr;
    recorded = ctx.recorded_plan_ != nullptr;
    const TimeMs started = ctx.started_at_;
    out.byte(static_cast<uint8_t>(ctx.status()));
    out.signed_varint(static_cast<int64_t>(ctx.commit_seq - ctx.seq));
    out.signed_varint(started);
    out.signed_varint(ctx.ended_at_ - started);
    out.f64(ctx.run_ms_);
    out.value(ctx.error_);
    out.value(ctx.variables_);
    const TriggerData& t = ctx.trigger;
    out.byte(static_cast<uint8_t>(t.type));
    out.byte(static_cast<uint8_t>(t.operation));
    const bool table_of_plan = recorded && t.table.is_string() && t.table.as_string() == ctx.plan->trigger.table;
    out.byte(static_cast<uint8_t>((t.has_previous ? 1 : 0) | (table_of_plan ? kTableOfPlan : 0)));
    out.signed_varint(t.time - started);
    if (!table_of_plan) out.value(t.table);
    out.value(t.sys_id);
    out.value(t.payload);
    out.value(t.event_name);
    out.value(t.caller);
    if (const Cause* c = ctx.cause.get()) {
      out.byte(1);
      out.value(c->context_id);
      out.value(c->flow_id);
      out.varint(c->chain ? c->chain->size() : 0);
      if (c->chain) {
        for (const Value& flow : *c->chain) out.value(flow);
      }
    } else {
      out.byte(0);
    }
    out.varint(ctx.steps_.size());
    for (const StepEntry& e : ctx.steps_) {
      out.varint(e.node->ordinal);
      const bool path_of_node = e.path.same_storage(e.node->path);
      out.byte(static_cast<uint8_t>(static_cast<uint8_t>(e.status) | (path_of_node ? kPathOfNode : 0)));
      if (!path_of_node) out.value(e.path);
      out.signed_varint(e.started - started);
      out.signed_varint(e.ended < 0 ? -1 : e.ended - e.started);
      pack_inputs(out, e);
      out.value(e.outputs);
    }
    out.varint(ctx.logs_.size());
    size_t entry = 0;  // the last line's step entry
    for (const LogEntry& l : ctx.logs_) {
      out.signed_varint(l.time - started);
      const int64_t found = entry_of(ctx.steps_, entry, l.step);
      uint8_t flags = static_cast<uint8_t>(l.level);
      if (found >= 0) {
        flags |= kStepOfEntry;
        const Value* message = ctx.steps_[static_cast<size_t>(found)].inputs.find("message");
        if (message && *message == l.message && message->type() == l.message.type()) flags |= kMessageOfInput;
      }
      out.byte(flags);
      if (found >= 0) {
        out.varint(static_cast<size_t>(found) - entry);
        entry = static_cast<size_t>(found);
      } else {
        out.value(l.step);
      }
      if (!(flags & kMessageOfInput)) out.value(l.message);
    }
  }
  const std::span<const unsigned char> bytes = out.bytes();
  void* mem = ::operator new(sizeof(FrozenContext) + bytes.size());
  auto* f = new (mem) FrozenContext();
  f->packed_size_ = static_cast<uint32_t>(bytes.size());
  f->seq_ = ctx.seq;
  f->flow_ = ctx.flow;
  // A context that never started shows no plan: it keeps none.
  if (recorded) f->plan_ = ctx.plan;
  std::memcpy(static_cast<unsigned char*>(mem) + sizeof(FrozenContext), bytes.data(), bytes.size());
  return boost::intrusive_ptr<const FrozenContext>(f, false);
}

namespace {

// Reads the packed record in its one order (see Decoded): decoding it (kRelease false), or
// dropping each reference it holds, once, before its bytes are freed (kRelease true; the
// values read are then null). One walk for both, so the two can never disagree on the
// layout.
template <bool kRelease>
void read_record(PackedReader& in, const Plan* plan, uint64_t seq, FrozenContext::Decoded& d) {
  auto value = [&in] {
    if constexpr (kRelease) {
      in.release_value();
      return Value();
    } else {
      return in.value();
    }
  };
  (void)in.byte();  // the status, which the header reads
  d.commit_seq = seq + static_cast<uint64_t>(in.signed_varint());
  d.started = in.signed_varint();
  d.ended = d.started + in.signed_varint();
  d.run_ms = in.f64();
  d.error = value();
  d.variables = value();
  d.trigger.type = static_cast<TriggerType>(in.byte());
  d.trigger.operation = static_cast<RecordOperation>(in.byte());
  const uint8_t trigger_flags = in.byte();
  d.trigger.has_previous = (trigger_flags & 1) != 0;
  d.trigger.time = d.started + in.signed_varint();
  if (!(trigger_flags & kTableOfPlan)) {
    d.trigger.table = value();
  } else if constexpr (!kRelease) {
    d.trigger.table = Value(std::string_view(plan->trigger.table));
  }
  d.trigger.sys_id = value();
  d.trigger.payload = value();
  d.trigger.event_name = value();
  d.trigger.caller = value();
  if (in.byte() == 1) {
    Cause& c = d.cause.emplace();
    c.context_id = value();
    c.flow_id = value();
    if (const uint64_t n = in.varint(); n > 0) {
      auto chain = std::make_shared<Chain>();
      chain->reserve(n);
      for (uint64_t i = 0; i < n; ++i) chain->push_back(value());
      c.chain = std::move(chain);
    }
  }
  const uint64_t steps = in.varint();
  d.steps.reserve(steps);
  std::vector<const Node*> nodes;
  if (!kRelease && steps > 0 && plan) nodes = nodes_of(*plan);
  for (uint64_t i = 0; i < steps; ++i) {
    StepEntry& e = d.steps.emplace_back();
    const uint64_t ordinal = in.varint();
    if constexpr (!kRelease) e.node = nodes.at(ordinal);
    const uint8_t status = in.byte();
    e.status = static_cast<StepStatus>(status & kLowBits);
    if (!(status & kPathOfNode)) {
      e.path = value();
    } else if constexpr (!kRelease) {
      e.path = e.node->path;
    }
    e.started = d.started + in.signed_varint();
    const int64_t took = in.signed_varint();
    e.ended = took < 0 ? -1 : e.started + took;
    if constexpr (kRelease) {
      in.release_value();
    } else {
      e.inputs = read_inputs(in, *e.node);
    }
    e.outputs = value();
  }
  const uint64_t logs = in.varint();
  d.logs.reserve(logs);
  size_t entry = 0;
  for (uint64_t i = 0; i < logs; ++i) {
    LogEntry& l = d.logs.emplace_back();
    l.time = d.started + in.signed_varint();
    const uint8_t flags = in.byte();
    l.level = static_cast<LogLevel>(flags & kLowBits);
    if (flags & kStepOfEntry) {
      entry += in.varint();
      l.step = d.steps[entry].path;
    } else {
      l.step = value();
    }
    if (!(flags & kMessageOfInput)) {
      l.message = value();
    } else if constexpr (!kRelease) {
      l.message = *d.steps[entry].inputs.find("message");
    }
  }
}

}  // namespace

void FrozenContext::destroy(const FrozenContext* f) {
  PackedReader in(f->packed(), f->packed() + f->packed_size_);
  Decoded ignored;
  read_record<true>(in, nullptr, f->seq_, ignored);
  auto* self = const_cast<FrozenContext*>(f);
  self->~FrozenContext();
  ::operator delete(self);
}

FrozenContext::Decoded FrozenContext::decode() const {
  Decoded d;
  PackedReader in(packed(), packed() + packed_size_);
  read_record<false>(in, plan_.get(), seq_, d);
  return d;
}

uint64_t FrozenContext::commit_seq() const {
  PackedReader in(packed(), packed() + packed_size_);
  (void)in.byte();  // the status
  return seq_ + static_cast<uint64_t>(in.signed_varint());
}

Value FrozenContext::to_value(size_t value_limit) const {
  const Decoded d = decode();
  RecordFields f;
  if (plan_) {
    f.plan_version = plan_->version_value;
    f.variable_names = plan_->root().variable_name_list;
  }
  f.status = status();
  f.started = d.started;
  f.ended = d.ended;
  f.run_ms = d.run_ms;
  f.variables = d.variables;
  f.error = d.error;
  f.seq = seq_;
  f.id = Value(std::string_view("ctx-" + std::to_string(seq_)));
  f.flow = flow_->id_value;
  f.trigger = &d.trigger;
  f.cause = d.cause ? &*d.cause : nullptr;
  f.steps = &d.steps;
  f.logs = std::span<const LogEntry>(d.logs.data(), d.logs.size());
  f.value_limit = value_limit;
  return record_to_value(f);
}

Context::Summary FrozenContext::summary() const {
  const Decoded d = decode();
  return Context::Summary{status(), d.run_ms, d.steps.size(), d.started, d.ended, d.error};
}

}  // namespace flowrt
