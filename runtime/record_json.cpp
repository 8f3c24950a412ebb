#include "runtime/record_json.h"

#include "plans/value_json.h"
#include "runtime/context.h"

namespace flowrt {
namespace {

Value time_or_null(TimeMs t) { return t < 0 ? Value() : Value(std::string_view(format_time(t))); }

// Size of v's JSON, stopping early once it passes `limit`.
size_t json_size_at_most(const Value& v, size_t limit) {
  switch (v.type()) {
    case ValueType::kNull: return 4;
    case ValueType::kBool: return 5;
    case ValueType::kInt:
    case ValueType::kDouble: return 20;
    case ValueType::kString: return v.as_string().size() + 2;
    case ValueType::kArray: {
      size_t n = 2;
      for (const Value& item : v.items()) {
        n += json_size_at_most(item, limit) + 1;
        if (n > limit) return n;
      }
      return n;
    }
    case ValueType::kObject: {
      size_t n = 2;
      for (const auto& m : v.members()) {
        n += m.key.as_string().size() + 4 + json_size_at_most(m.value, limit);
        if (n > limit) return n;
      }
      return n;
    }
  }
  return 0;
}

Value step_to_value(const StepEntry& e, size_t limit) {
  std::vector<Member> m;
  m.reserve(10);
  m.push_back(Member{Value("path"), e.path});
  if (!e.node->id.is_null()) m.push_back(Member{Value("id"), e.node->id});
  m.push_back(Member{Value("action"), e.node->action});
  m.push_back(Member{Value("status"), Value(status_name(e.status))});
  m.push_back(Member{Value("started_at"), time_or_null(e.started)});
  m.push_back(Member{Value("ended_at"), time_or_null(e.ended)});
  std::vector<Member> inputs;
  inputs.reserve(e.inputs.size());
  for (const auto& in : e.inputs.members()) inputs.push_back(Member{in.key, limit_value(in.value, limit)});
  m.push_back(Member{Value("inputs"), Value::object(std::move(inputs))});
  m.push_back(Member{Value("outputs"), e.outputs.is_null() ? Value::empty_object() : limit_value(e.outputs, limit)});
  if (e.status == StepStatus::kError && e.outputs.contains("error")) m.push_back(Member{Value("error"), e.outputs["error"]});
  return Value::object(std::move(m));
}

}  // namespace

Value step_inputs_record(const ActionStep& step, std::span<const Value> rendered) {
  const size_t n = std::min(step.input_names.size(), rendered.size());
  ObjectBuilder named(step.given_input_names);  // one value per input given, in order
  for (size_t i = 0; i < n; ++i) {
    if (!step.inputs[i].absent()) named.add_value(rendered[i]);
  }
  if (step.kind != ActionKind::kCallSubflow) return named.build();
  return Value::object({{"subflow", Value(std::string_view(step.callee_id))}, {"inputs", named.build()}});
}

Value limit_value(const Value& v, size_t limit) {
  if (limit == 0 || v.is_null() || v.is_bool() || v.is_number()) return v;
  if (v.is_string() && v.as_string().size() + 2 <= limit) return v;
  const size_t estimate = json_size_at_most(v, limit);
  if (estimate <= limit) return v;
  std::string text = v.to_json();
  if (text.size() <= limit) return v;
  const size_t total = text.size();
  text.resize(utf8_prefix(text, limit));
  text += "...[truncated: " + std::to_string(total) + " bytes]";
  return Value(std::string_view(text));
}

size_t utf8_prefix(std::string_view s, size_t limit) {
  if (s.size() <= limit) return s.size();
  size_t n = limit;
  // Back off over continuation bytes (10xxxxxx) to the start of the character cut.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

Value limit_text(const Value& message, size_t limit) {
  if (limit == 0 || !message.is_string() || message.as_string().size() <= limit) return message;
  const std::string_view s = message.as_string();
  std::string text(s.substr(0, utf8_prefix(s, limit)));
  text += "...[truncated: " + std::to_string(s.size()) + " bytes]";
  return Value(std::string_view(text));
}

Value trigger_to_value(const TriggerData& t, size_t value_limit) {
  std::vector<Member> m;
  m.push_back(Member{Value("type"), Value(trigger_type_name(t.type))});
  switch (t.type) {
    case TriggerType::kRecord:
      m.push_back(Member{Value("table"), t.table});
      m.push_back(Member{Value("operation"), Value(operation_name(t.operation))});
      m.push_back(Member{Value("sys_id"), t.sys_id});
      break;
    case TriggerType::kEvent:
      m.push_back(Member{Value("name"), t.event_name});
      break;
    case TriggerType::kSchedule:
      m.push_back(Member{Value("time"), Value(std::string_view(format_time(t.time)))});
      break;
    case TriggerType::kApi:
      if (t.payload.is_object()) {
        std::vector<Member> inputs;
        for (const auto& in : t.payload.members()) inputs.push_back(Member{in.key, limit_value(in.value, value_limit)});
        m.push_back(Member{Value("inputs"), Value::object(std::move(inputs))});
      }
      break;
  }
  if (!t.caller.is_null()) m.push_back(Member{Value("caller"), t.caller});
  return Value::object(std::move(m));
}

Value record_to_value(const RecordFields& f) {
  std::vector<Member> m;
  m.reserve(16);
  m.push_back(Member{Value("id"), f.id});
  m.push_back(Member{Value("seq"), Value(static_cast<long long>(f.seq))});
  m.push_back(Member{Value("flow"), f.flow});
  m.push_back(Member{Value("plan_version"), f.plan_version});
  m.push_back(Member{Value("status"), Value(status_name(f.status))});
  m.push_back(Member{Value("trigger"), f.trigger ? trigger_to_value(*f.trigger, f.value_limit) : Value()});
  Value cause;
  if (f.cause && !f.cause->context_id.is_null()) {
    cause = Value::object({{"context", f.cause->context_id}, {"flow", f.cause->flow_id}});
  }
  m.push_back(Member{Value("cause"), cause});
  std::vector<Value> chain;
  if (f.cause && f.cause->chain) chain = *f.cause->chain;
  m.push_back(Member{Value("chain"), Value::array(std::move(chain))});
  m.push_back(Member{Value("started_at"), time_or_null(f.started)});
  m.push_back(Member{Value("ended_at"), time_or_null(f.ended)});
  m.push_back(Member{Value("runtime_ms"), Value(static_cast<double>(static_cast<long long>(f.run_ms * 1000)) / 1000)});
  std::vector<Value> steps;
  if (f.steps) {
    steps.reserve(f.steps->size());
    for (const StepEntry& e : *f.steps) steps.push_back(step_to_value(e, f.value_limit));
  }
  m.push_back(Member{Value("steps"), Value::array(std::move(steps))});
  std::vector<Value> logs;
  {
    logs.reserve(f.logs.size());
    for (const LogEntry& l : f.logs) {
      logs.push_back(Value::object({{"time", Value(std::string_view(format_time(l.time)))},
                                    {"level", Value(level_name(l.level))},
                                    {"step", l.step},
                                    {"message", limit_text(l.message, f.value_limit)}}));
    }
  }
  m.push_back(Member{Value("logs"), Value::array(std::move(logs))});
  std::vector<Member> vars;
  for (size_t i = 0; i < f.variable_names.size() && i < f.variables.size(); ++i) {
    vars.push_back(Member{f.variable_names.at(i), limit_value(f.variables.at(i), f.value_limit)});
  }
  m.push_back(Member{Value("variables"), Value::object(std::move(vars))});
  m.push_back(Member{Value("error"), f.error});
  return Value::object(std::move(m));
}

}  // namespace flowrt
