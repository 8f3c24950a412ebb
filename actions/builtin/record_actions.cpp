#include "actions/builtin/record_actions.h"

#include "actions/builtin/common.h"

namespace flowrt::builtin {
namespace {

Result<Value> values_input(const StepCall& call) {
  const Value& v = call.input("values");
  if (v.is_null()) return Value::empty_object();
  if (!v.is_object()) return Error{wrong_type("values", "an object", v)};
  return v;
}

// Output shapes: every step's outputs share their key array (see ObjectBuilder).
const Value kRecordSysId = intern_shape({"record", "sys_id"});
const Value kRecord = intern_shape({"record"});
const Value kDeleted = intern_shape({"deleted"});
const Value kRecordFound = intern_shape({"record", "found"});
const Value kRecordsCount = intern_shape({"records", "count"});
const Value kRecordTimedOut = intern_shape({"record", "timed_out"});

// `order_by` is null, or "field" / "-field" naming a field: "" and "-" name none.
std::string order_by_problem(const Value& order) {
  if (order.is_null()) return {};
  if (!order.is_string()) return wrong_type("order_by", "a field name", order);
  const std::string_view text = order.as_string();
  if (text.empty() || text == "-") {
    return "input 'order_by' must name a field (\"field\", or \"-field\" for descending), got \"" +
           std::string(text) + "\"";
  }
  return {};
}

}  // namespace

StepOutcome CreateRecordAction::start(const StepCall& call) const {
  Result<Value> values = values_input(call);
  if (!values) return StepOutcome::failed(values.message());
  Result<Value> record = call.host.create_record(call.input("table"), *values, call.input("while_holding"));
  if (!record) return StepOutcome::failed(record.message());
  Value sys_id = (*record)["sys_id"];
  return StepOutcome::done(Value::object(kRecordSysId, {std::move(record).value(), std::move(sys_id)}));
}

StepOutcome UpdateRecordAction::start(const StepCall& call) const {
  Result<Value> values = values_input(call);
  if (!values) return StepOutcome::failed(values.message());
  Result<Value> record =
      call.host.update_record(call.input("table"), call.input("sys_id"), *values, call.input("while_holding"));
  if (!record) return StepOutcome::failed(record.message());
  return StepOutcome::done(Value::object(kRecord, {std::move(record).value()}));
}

StepOutcome DeleteRecordAction::start(const StepCall& call) const {
  Result<bool> deleted = call.host.delete_record(call.input("table"), call.input("sys_id"), call.input("while_holding"));
  if (!deleted) return StepOutcome::failed(deleted.message());
  return StepOutcome::done(Value::object(kDeleted, {Value(*deleted)}));
}

StepOutcome LookUpRecordAction::start(const StepCall& call) const {
  Result<std::string_view> table = string_input(call, "table");
  if (!table) return StepOutcome::failed(table.message());
  const Value& order = call.input("order_by");
  if (std::string e = order_by_problem(order); !e.empty()) return StepOutcome::failed(e);
  RecordQuery q;
  q.table = *table;
  q.condition = call.step.input("condition") && !call.step.input("condition")->absent() ? &call.step.condition : nullptr;
  q.scope = &call.scope;
  q.order_by = order.as_string();
  q.limit = 1;
  Result<Value> found = call.host.find_records(q);
  if (!found) return StepOutcome::failed(found.message());
  const Value& first = found->at(0);
  return StepOutcome::done(Value::object(kRecordFound, {first, Value(!first.is_null())}));
}

StepOutcome LookUpRecordsAction::start(const StepCall& call) const {
  Result<std::string_view> table = string_input(call, "table");
  if (!table) return StepOutcome::failed(table.message());
  const Value& order = call.input("order_by");
  if (std::string e = order_by_problem(order); !e.empty()) return StepOutcome::failed(e);
  const Value& limit = call.input("limit");
  if (std::string e = checked(call, "limit"); !e.empty()) return StepOutcome::failed(e);
  // `limit` 0 asks for none (RecordQuery's own 0 means no limit).
  if (limit.is_number() && limit.as_double() == 0) {
    return StepOutcome::done(Value::object(kRecordsCount, {Value::empty_array(), Value(0)}));
  }
  RecordQuery q;
  q.table = *table;
  q.condition = call.step.input("condition") && !call.step.input("condition")->absent() ? &call.step.condition : nullptr;
  q.scope = &call.scope;
  q.order_by = order.as_string();
  q.limit = limit.is_null() ? 0 : static_cast<size_t>(limit.as_int());
  Result<Value> found = call.host.find_records(q);
  if (!found) return StepOutcome::failed(found.message());
  const auto count = static_cast<long long>(found->size());
  return StepOutcome::done(Value::object(kRecordsCount, {std::move(found).value(), Value(count)}));
}

StepOutcome WaitForConditionAction::start(const StepCall& call) const {
  Result<std::string_view> table = string_input(call, "table");
  if (!table) return StepOutcome::failed(table.message());
  Result<std::string_view> sys_id = string_input(call, "sys_id");
  if (!sys_id) return StepOutcome::failed(sys_id.message());
  TimeMs deadline = -1;
  const Value& timeout = call.input("timeout");
  if (!timeout.is_null()) {
    Result<DurationMs> d = parse_duration(timeout);
    if (!d) return StepOutcome::failed("input 'timeout': " + d.message());
    deadline = add_duration(call.host.now(), *d);
  }
  Value record = call.host.read_record(*table, *sys_id);
  if (record.is_null()) {
    return StepOutcome::failed("no record " + std::string(*table) + "/" + std::string(*sys_id) + " to wait for");
  }
  Scope scope = call.scope;
  scope.record = &record;
  // Already true: no wait. Nothing has changed yet, so the record is its own previous
  // version and the changes ops never hold here (a null previous would make `changes` of
  // any set field hold); only a later write, with its own previous version, meets them.
  scope.previous = &record;
  Result<bool> now = evaluate(call.step.condition, scope);
  if (!now) return StepOutcome::failed(now.message());
  if (*now) return StepOutcome::done(Value::object(kRecordTimedOut, {record, Value(false)}));
  if (deadline >= 0 && deadline <= call.host.now()) {
    return StepOutcome::done(Value::object(kRecordTimedOut, {record, Value(true)}));
  }
  Result<Condition> bound = bind_condition(call.step.condition, call.scope);
  if (!bound) return StepOutcome::failed(bound.message());
  WaitRequest wait;
  wait.kind = WaitRequest::Kind::kRecord;
  wait.deadline = deadline;
  wait.table = call.input("table");
  wait.sys_id = call.input("sys_id");
  wait.condition = std::make_shared<const Condition>(std::move(bound).value());
  wait.seen = std::move(record);
  return StepOutcome::park(std::move(wait));
}

StepOutcome WaitForConditionAction::resume(const StepCall& call, const WakeUp& wake) const {
  switch (wake.kind) {
    case WakeUp::Kind::kRecord:
      return StepOutcome::done(Value::object(kRecordTimedOut, {wake.record, Value(false)}));
    case WakeUp::Kind::kTimeout: {
      Value record = call.host.read_record(call.input("table").as_string(), call.input("sys_id").as_string());
      return StepOutcome::done(Value::object(kRecordTimedOut, {std::move(record), Value(true)}));
    }
    case WakeUp::Kind::kRecordDeleted:
      return StepOutcome::failed("record " + text_of(call.input("table")) + "/" + text_of(call.input("sys_id")) +
                                 " was deleted while waiting for its condition");
    default: return StepOutcome::failed("unexpected wake-up of wait_for_condition");
  }
}

}  // namespace flowrt::builtin
