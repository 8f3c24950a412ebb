#include "runtime/record_json.h"

#include <cstdio>
#include <cstdlib>
#include <string>

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

// The record's objects are built on interned shapes (plans/value.h): one key array each,
// shared by every record, so building one allocates its values only.
Value step_shape(bool with_id, bool with_error) {
  static const Value kShapes[4] = {
      intern_shape({"path", "action", "status", "started_at", "ended_at", "inputs", "outputs"}),
      intern_shape({"path", "action", "status", "started_at", "ended_at", "inputs", "outputs", "error"}),
      intern_shape({"path", "id", "action", "status", "started_at", "ended_at", "inputs", "outputs"}),
      intern_shape({"path", "id", "action", "status", "started_at", "ended_at", "inputs", "outputs", "error"}),
  };
  return kShapes[(with_id ? 2 : 0) + (with_error ? 1 : 0)];
}

Value step_to_value(const StepEntry& e, size_t limit) {
  const bool with_id = !e.node->id.is_null();
  const bool with_error = e.status == StepStatus::kError && e.outputs.contains("error");
  ObjectBuilder m(step_shape(with_id, with_error));
  m.add_value(e.path);
  if (with_id) m.add_value(e.node->id);
  m.add_value(e.node->action);
  m.add_value(Value(status_name(e.status)));
  m.add_value(time_or_null(e.started));
  m.add_value(time_or_null(e.ended));
  std::vector<Member> inputs;
  inputs.reserve(e.inputs.size());
  for (const auto& in : e.inputs.members()) inputs.push_back(Member{in.key, limit_value(in.value, limit)});
  m.add_value(Value::object(std::move(inputs)));
  m.add_value(e.outputs.is_null() ? Value::empty_object() : limit_value(e.outputs, limit));
  if (with_error) m.add_value(e.outputs["error"]);
  return m.build();
}

}  // namespace

Value step_inputs_record(const ActionStep& step, std::span<const Value> rendered) {
  const size_t n = std::min(step.input_names.size(), rendered.size());
  ObjectBuilder named(step.given_input_names);  // one value per input given, in order
  for (size_t i = 0; i < n; ++i) {
    if (!step.inputs[i].absent()) named.add_value(rendered[i]);
  }
  if (step.kind != ActionKind::kCallSubflow) return named.build();
  return subflow_call_record(step, named.build());
}

Value subflow_call_record(const ActionStep& step, Value named) {
  return Value::object({{"subflow", Value(std::string_view(step.callee_id))}, {"inputs", std::move(named)}});
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
  static const Value kRecordShape =
      intern_shape({"id", "seq", "flow", "plan_version", "status", "trigger", "cause", "chain", "started_at", "ended_at",
                    "runtime_ms", "steps", "logs", "variables", "error"});
  static const Value kCauseShape = intern_shape({"context", "flow"});
  static const Value kLogShape = intern_shape({"time", "level", "step", "message"});
  ObjectBuilder m(kRecordShape);
  m.add_value(f.id);
  m.add_value(Value(static_cast<long long>(f.seq)));
  m.add_value(f.flow);
  m.add_value(f.plan_version);
  m.add_value(Value(status_name(f.status)));
  m.add_value(f.trigger ? trigger_to_value(*f.trigger, f.value_limit) : Value());
  if (f.cause && !f.cause->context_id.is_null()) {
    ObjectBuilder cause(kCauseShape);
    cause.add_value(f.cause->context_id);
    cause.add_value(f.cause->flow_id);
    m.add_value(cause.build());
  } else {
    m.add_value(Value());
  }
  std::vector<Value> chain;
  if (f.cause && f.cause->chain) chain = *f.cause->chain;
  m.add_value(Value::array(std::move(chain)));
  m.add_value(time_or_null(f.started));
  m.add_value(time_or_null(f.ended));
  m.add_value(Value(static_cast<double>(static_cast<long long>(f.run_ms * 1000)) / 1000));
  std::vector<Value> steps;
  if (f.steps) {
    steps.reserve(f.steps->size());
    for (const StepEntry& e : *f.steps) steps.push_back(step_to_value(e, f.value_limit));
  }
  m.add_value(Value::array(std::move(steps)));
  std::vector<Value> logs;
  logs.reserve(f.logs.size());
  for (const LogEntry& l : f.logs) {
    ObjectBuilder log(kLogShape);
    log.add_value(Value(std::string_view(format_time(l.time))));
    log.add_value(Value(level_name(l.level)));
    log.add_value(l.step);
    log.add_value(limit_text(l.message, f.value_limit));
    logs.push_back(log.build());
  }
  m.add_value(Value::array(std::move(logs)));
  std::vector<Member> vars;
  for (size_t i = 0; i < f.variable_names.size() && i < f.variables.size(); ++i) {
    vars.push_back(Member{f.variable_names.at(i), limit_value(f.variables.at(i), f.value_limit)});
  }
  m.add_value(Value::object(std::move(vars)));
  m.add_value(f.error);
  Value record = m.build();
#ifdef FLOWRT_CHECK_RECORD_TEXT
  // The durable stores keep write_record_json's text of a record; it must be this one's.
  std::string text;
  write_record_json(f, text);
  if (const std::string expected = record.to_json(); text != expected) {
    std::fprintf(stderr, "write_record_json differs from record_to_value:\n  written: %s\n  built:   %s\n",
                 text.c_str(), expected.c_str());
    std::abort();
  }
#endif
  return record;
}

}  // namespace flowrt
