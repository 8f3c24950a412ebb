#include "runtime/checkpoint.h"

#include <string>

#include "runtime/context.h"

namespace flowrt {

ContextUpdate checkpoint_update(Context& ctx, size_t value_limit, bool with_record) {
  // What the plan was compiled from (type, id, fingerprint): a context resumes on this
  // version even when its flow has changed since (the store keeps every published version).
  std::vector<Value> uses;
  for (const PlanDependency& d : ctx.plan->dependencies) {
    uses.push_back(Value::array({Value(unit_type_name(d.type)), Value(std::string_view(d.id)),
                                 Value(std::string_view(d.fingerprint))}));
  }
  const Value checkpoint = Value::object({{"exec", ctx.exec().to_value(*ctx.plan, ctx.trigger.record)},
                                          {"record", ctx.record_state()},
                                          {"uses", Value::array(std::move(uses))}});
  const ContextStatus status = ctx.exec().parked ? ContextStatus::kWaiting : ContextStatus::kInProgress;
  return ContextUpdate{ctx.seq, std::string(status_name(status)), -1, -1,
                       with_record ? JsonDoc::from_text(ctx.record_json(value_limit)) : JsonDoc(), checkpoint};
}

std::string checkpoint_plan_version(const Value& checkpoint) {
  const Value& v = checkpoint["exec"]["plan_version"];
  return v.is_string() ? std::string(v.as_string()) : std::string();
}

Status restore_checkpoint(Context& ctx, const Value& checkpoint, std::shared_ptr<const Plan> plan, bool resting) {
  if (!checkpoint.is_object() || !checkpoint["exec"].is_object() || !checkpoint["record"].is_object()) {
    return Error{"its stored state is not a checkpoint"};
  }
  Result<ExecState> exec = ExecState::from_value(checkpoint["exec"], *plan, ctx.trigger.record);
  if (!exec) return exec.error();
  if (!exec->started || exec->stack.empty()) return Error{"its stored state has no position"};
  const ContextStatus status = exec->parked ? ContextStatus::kWaiting : ContextStatus::kInProgress;
  const WaitRequest::Kind kind = exec->wait.kind;
  const Value& record = checkpoint["record"];
  if (resting && exec->parked && (kind == WaitRequest::Kind::kTimer || kind == WaitRequest::Kind::kRecord) &&
      record["steps"].is_array()) {
    ctx.restore_resting(*plan, record["started"].as_int(), record["steps"].size(), status);
  } else {
    FLOWRT_RETURN_IF_ERROR(ctx.restore_record_state(record, *plan, nodes_of(*plan), status));
  }
  ctx.state = std::make_unique<ExecState>(std::move(exec).value());
  ctx.plan = std::move(plan);
  return Status::ok();
}

Status rehydrate_checkpoint(Context& ctx, const Value& checkpoint) {
  if (!checkpoint.is_object() || !checkpoint["exec"].is_object() || !checkpoint["record"].is_object()) {
    return Error{"its stored state is not a checkpoint"};
  }
  Result<ExecState> exec = ExecState::from_value(checkpoint["exec"], *ctx.plan, ctx.trigger.record);
  if (!exec) return exec.error();
  if (!exec->parked || exec->stack.empty()) return Error{"its stored state is not the wait it rests in"};
  FLOWRT_RETURN_IF_ERROR(ctx.restore_record_state(checkpoint["record"], *ctx.plan, nodes_of(*ctx.plan), ctx.status()));
  ctx.state->stack = std::move(exec->stack);
  ctx.state->parked_inputs = std::move(exec->parked_inputs);
  return Status::ok();
}

}  // namespace flowrt
