#include "runtime/frozen_context.h"

#include <cstring>
#include <new>
#include <optional>
#include <vector>

#include "plans/value_pack.h"
#include "runtime/flow_slot.h"
#include "runtime/record_json.h"

namespace flowrt {

// The packed record, in order (every time but the start relative to the context's start):
//   commit_seq, started, ended, run_ms, error, variables,
//   trigger: type, operation, has_previous, time, table, sys_id, payload, event_name,
//   cause: 0, or 1 and context id, flow id, chain length, the chain's flow ids,
//   steps: count, then per step path, node ordinal, status, started, duration (-1: none),
//          inputs, outputs,
//   logs: count, then per line time, level, step, message.
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
    out.varint(ctx.commit_seq);
    out.signed_varint(started);
    out.signed_varint(ctx.ended_at_ - started);
    out.f64(ctx.run_ms_);
    out.value(ctx.error_);
    out.value(ctx.variables_);
    const TriggerData& t = ctx.trigger;
    out.byte(static_cast<uint8_t>(t.type));
    out.byte(static_cast<uint8_t>(t.operation));
    out.byte(t.has_previous ? 1 : 0);
    out.signed_varint(t.time - started);
    out.value(t.table);
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
      out.value(e.path);
      out.varint(e.node->ordinal);
      out.byte(static_cast<uint8_t>(e.status));
      out.signed_varint(e.started - started);
      out.signed_varint(e.ended < 0 ? -1 : e.ended - e.started);
      out.value(e.inputs);
      out.value(e.outputs);
    }
    out.varint(ctx.logs_.size());
    for (const LogEntry& l : ctx.logs_) {
      out.signed_varint(l.time - started);
      out.byte(static_cast<uint8_t>(l.level));
      out.value(l.step);
      out.value(l.message);
    }
  }
  const std::span<const unsigned char> bytes = out.bytes();
  void* mem = ::operator new(sizeof(FrozenContext) + bytes.size());
  auto* f = new (mem) FrozenContext();
  f->packed_size_ = static_cast<uint32_t>(bytes.size());
  f->status_ = ctx.status();
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
void read_record(PackedReader& in, const Plan* plan, FrozenContext::Decoded& d) {
  auto value = [&in] {
    if constexpr (kRelease) {
      in.release_value();
      return Value();
    } else {
      return in.value();
    }
  };
  d.commit_seq = in.varint();
  d.started = in.signed_varint();
  d.ended = d.started + in.signed_varint();
  d.run_ms = in.f64();
  d.error = value();
  d.variables = value();
  d.trigger.type = static_cast<TriggerType>(in.byte());
  d.trigger.operation = static_cast<RecordOperation>(in.byte());
  d.trigger.has_previous = in.byte() != 0;
  d.trigger.time = d.started + in.signed_varint();
  d.trigger.table = value();
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
    e.path = value();
    const uint64_t ordinal = in.varint();
    if constexpr (!kRelease) e.node = nodes.at(ordinal);
    e.status = static_cast<StepStatus>(in.byte());
    e.started = d.started + in.signed_varint();
    const int64_t took = in.signed_varint();
    e.ended = took < 0 ? -1 : e.started + took;
    e.inputs = value();
    e.outputs = value();
  }
  const uint64_t logs = in.varint();
  d.logs.reserve(logs);
  for (uint64_t i = 0; i < logs; ++i) {
    LogEntry& l = d.logs.emplace_back();
    l.time = d.started + in.signed_varint();
    l.level = static_cast<LogLevel>(in.byte());
    l.step = value();
    l.message = value();
  }
}

}  // namespace

void FrozenContext::destroy(const FrozenContext* f) {
  PackedReader in(f->packed(), f->packed() + f->packed_size_);
  Decoded ignored;
  read_record<true>(in, nullptr, ignored);
  auto* self = const_cast<FrozenContext*>(f);
  self->~FrozenContext();
  ::operator delete(self);
}

FrozenContext::Decoded FrozenContext::decode() const {
  Decoded d;
  PackedReader in(packed(), packed() + packed_size_);
  read_record<false>(in, plan_.get(), d);
  return d;
}

uint64_t FrozenContext::commit_seq() const {
  PackedReader in(packed(), packed() + packed_size_);
  return in.varint();
}

Value FrozenContext::to_value(size_t value_limit) const {
  const Decoded d = decode();
  RecordFields f;
  if (plan_) {
    f.plan_version = plan_->version_value;
    f.variable_names = plan_->root().variable_name_list;
  }
  f.status = status_;
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
  return Context::Summary{status_, d.run_ms, d.steps.size(), d.started, d.ended, d.error};
}

}  // namespace flowrt
