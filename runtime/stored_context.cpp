#include "runtime/stored_context.h"

#include "runtime/context.h"
#include "runtime/flow_slot.h"

namespace flowrt {

namespace {

bool trigger_type_of(std::string_view name, TriggerType* out) {
  for (TriggerType t : {TriggerType::kRecord, TriggerType::kSchedule, TriggerType::kEvent, TriggerType::kApi}) {
    if (trigger_type_name(t) == name) {
      *out = t;
      return true;
    }
  }
  return false;
}

bool operation_of(std::string_view name, RecordOperation* out) {
  for (RecordOperation o : {RecordOperation::kInsert, RecordOperation::kUpdate, RecordOperation::kDelete}) {
    if (operation_name(o) == name) {
      *out = o;
      return true;
    }
  }
  return false;
}

}  // namespace

Value trigger_to_stored(const TriggerData& t) {
  std::vector<Member> m;
  m.push_back(Member{Value("type"), Value(trigger_type_name(t.type))});
  m.push_back(Member{Value("time"), Value(static_cast<long long>(t.time))});
  switch (t.type) {
    case TriggerType::kRecord:
      m.push_back(Member{Value("table"), t.table});
      m.push_back(Member{Value("operation"), Value(operation_name(t.operation))});
      m.push_back(Member{Value("sys_id"), t.sys_id});
      m.push_back(Member{Value("record"), t.record});
      if (t.has_previous) m.push_back(Member{Value("previous"), t.previous});
      break;
    case TriggerType::kEvent:
      m.push_back(Member{Value("name"), t.event_name});
      m.push_back(Member{Value("payload"), t.payload});
      break;
    case TriggerType::kSchedule: break;
    case TriggerType::kApi: m.push_back(Member{Value("payload"), t.payload}); break;
  }
  if (!t.caller.is_null()) m.push_back(Member{Value("caller"), t.caller});
  return Value::object(std::move(m));
}

Result<TriggerData> trigger_from_stored(const Value& v) {
  TriggerData t;
  if (!v.is_object() || !v["type"].is_string() || !trigger_type_of(v["type"].as_string(), &t.type)) {
    return Error{"its trigger event is not readable"};
  }
  if (!v["time"].is_int()) return Error{"its trigger event has no time"};
  t.time = v["time"].as_int();
  switch (t.type) {
    case TriggerType::kRecord:
      if (!v["operation"].is_string() || !operation_of(v["operation"].as_string(), &t.operation) ||
          !v["table"].is_string() || !v["sys_id"].is_string()) {
        return Error{"its record trigger event is not readable"};
      }
      t.table = v["table"];
      t.sys_id = v["sys_id"];
      t.record = v["record"];
      if (const Value* previous = v.find("previous")) {
        t.previous = *previous;
        t.has_previous = true;
      }
      break;
    case TriggerType::kEvent:
      t.event_name = v["name"];
      t.payload = v["payload"];
      break;
    case TriggerType::kSchedule: break;
    case TriggerType::kApi: t.payload = v["payload"]; break;
  }
  if (const Value* caller = v.find("caller"); caller && caller->is_string()) t.caller = *caller;
  return t;
}

Value cause_to_stored(const Cause* cause) {
  if (!cause) return Value();
  std::vector<Value> chain;
  if (cause->chain) chain = *cause->chain;
  return Value::object({{"context", cause->context_id}, {"flow", cause->flow_id}, {"chain", Value::array(std::move(chain))}});
}

std::unique_ptr<const Cause> cause_from_stored(const Value& v) {
  if (!v.is_object()) return nullptr;
  auto chain = std::make_shared<Chain>();
  for (const Value& f : v["chain"].items()) chain->push_back(f);
  return std::make_unique<const Cause>(Cause{v["context"], v["flow"], chain->empty() ? nullptr : std::move(chain)});
}

StoredContext stored_row(const Context& ctx) {
  StoredContext row;
  row.seq = ctx.seq;
  row.id = std::string(ctx.id.as_string());
  row.flow = ctx.flow->id;
  row.status = std::string(kQueuedStatus);
  row.commit_seq = ctx.commit_seq;
  row.trigger = trigger_to_stored(ctx.trigger);
  if (!ctx.test_definition.is_null()) {
    std::vector<Member> m;
    for (const auto& f : row.trigger.members()) m.push_back(Member{f.key, f.value});
    m.push_back(Member{Value("test"), ctx.test_definition});
    row.trigger = Value::object(std::move(m));
  }
  row.inputs = ctx.inputs;
  row.cause = cause_to_stored(ctx.cause.get());
  row.run_key = ctx.run_key;
  return row;
}

const Value& stored_test_definition(const Value& stored_trigger) {
  return stored_trigger.is_object() ? stored_trigger["test"] : null_value();
}

ContextUpdate record_update(const Context& ctx, size_t value_limit) {
  const Context::Summary s = ctx.summary();
  return ContextUpdate{ctx.seq, std::string(status_name(s.status)), s.started, s.ended,
                       JsonDoc::from_text(ctx.record_json(value_limit)), Value()};
}

}  // namespace flowrt
