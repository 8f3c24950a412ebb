// write_record_json: a context record's JSON written straight from its fields, the bytes
// write_json(record_to_value(f)) gives, without building the Value in between. The store
// of a durable engine keeps every ended context's record as this text (stored_context.h,
// record_update), so this is the text users read back. The two are held to one text by
// RecordTextTest and, in the sanitizer build, by record_to_value itself (record_json.cpp).
#include <string>
#include <string_view>

#include "plans/value_json.h"
#include "runtime/context.h"
#include "runtime/record_json.h"

namespace flowrt {
namespace {

// `"key":`, for the record's own keys: plain ASCII that needs no escaping.
void write_key(std::string_view key, std::string& out) {
  out += '"';
  out += key;
  out += "\":";
}

void write_time_or_null(TimeMs t, std::string& out) {
  if (t < 0) {
    out += "null";
  } else {
    write_json_string(format_time(t), out);
  }
}

// {key: limit_value(value), ...} over the members of `object` (none when it is not one).
void write_limited_members(const Value& object, size_t limit, std::string& out) {
  out += '{';
  bool first = true;
  for (const auto& m : object.members()) {
    if (!first) out += ',';
    first = false;
    write_json_string(m.key.as_string(), out);
    out += ':';
    write_json(limit_value(m.value, limit), out);
  }
  out += '}';
}

void write_trigger(const TriggerData& t, size_t limit, std::string& out) {
  out += '{';
  write_key("type", out);
  write_json_string(trigger_type_name(t.type), out);
  switch (t.type) {
    case TriggerType::kRecord:
      out += ',';
      write_key("table", out);
      write_json(t.table, out);
      out += ',';
      write_key("operation", out);
      write_json_string(operation_name(t.operation), out);
      out += ',';
      write_key("sys_id", out);
      write_json(t.sys_id, out);
      break;
    case TriggerType::kEvent:
      out += ',';
      write_key("name", out);
      write_json(t.event_name, out);
      break;
    case TriggerType::kSchedule:
      out += ',';
      write_key("time", out);
      write_json_string(format_time(t.time), out);
      break;
    case TriggerType::kApi:
      if (t.payload.is_object()) {
        out += ',';
        write_key("inputs", out);
        write_limited_members(t.payload, limit, out);
      }
      break;
  }
  if (!t.caller.is_null()) {
    out += ',';
    write_key("caller", out);
    write_json(t.caller, out);
  }
  out += '}';
}

void write_step(const StepEntry& e, size_t limit, std::string& out) {
  out += '{';
  write_key("path", out);
  write_json(e.path, out);
  if (!e.node->id.is_null()) {
    out += ',';
    write_key("id", out);
    write_json(e.node->id, out);
  }
  out += ',';
  write_key("action", out);
  write_json(e.node->action, out);
  out += ',';
  write_key("status", out);
  write_json_string(status_name(e.status), out);
  out += ',';
  write_key("started_at", out);
  write_time_or_null(e.started, out);
  out += ',';
  write_key("ended_at", out);
  write_time_or_null(e.ended, out);
  out += ',';
  write_key("inputs", out);
  write_limited_members(e.inputs, limit, out);
  out += ',';
  write_key("outputs", out);
  if (e.outputs.is_null()) {
    out += "{}";
  } else {
    write_json(limit_value(e.outputs, limit), out);
  }
  if (e.status == StepStatus::kError && e.outputs.contains("error")) {
    out += ',';
    write_key("error", out);
    write_json(e.outputs["error"], out);
  }
  out += '}';
}

void write_log(const LogEntry& l, size_t limit, std::string& out) {
  out += '{';
  write_key("time", out);
  write_json_string(format_time(l.time), out);
  out += ',';
  write_key("level", out);
  write_json_string(level_name(l.level), out);
  out += ',';
  write_key("step", out);
  write_json(l.step, out);
  out += ',';
  write_key("message", out);
  write_json(limit_text(l.message, limit), out);
  out += '}';
}

}  // namespace

void write_record_json(const RecordFields& f, std::string& out) {
  out += '{';
  write_key("id", out);
  write_json(f.id, out);
  out += ',';
  write_key("seq", out);
  write_json(Value(static_cast<long long>(f.seq)), out);
  out += ',';
  write_key("flow", out);
  write_json(f.flow, out);
  out += ',';
  write_key("plan_version", out);
  write_json(f.plan_version, out);
  out += ',';
  write_key("status", out);
  write_json_string(status_name(f.status), out);
  out += ',';
  write_key("trigger", out);
  if (f.trigger) {
    write_trigger(*f.trigger, f.value_limit, out);
  } else {
    out += "null";
  }
  out += ',';
  write_key("cause", out);
  if (f.cause && !f.cause->context_id.is_null()) {
    out += '{';
    write_key("context", out);
    write_json(f.cause->context_id, out);
    out += ',';
    write_key("flow", out);
    write_json(f.cause->flow_id, out);
    out += '}';
  } else {
    out += "null";
  }
  out += ',';
  write_key("chain", out);
  out += '[';
  if (f.cause && f.cause->chain) {
    bool first = true;
    for (const Value& flow : *f.cause->chain) {
      if (!first) out += ',';
      first = false;
      write_json(flow, out);
    }
  }
  out += ']';
  out += ',';
  write_key("started_at", out);
  write_time_or_null(f.started, out);
  out += ',';
  write_key("ended_at", out);
  write_time_or_null(f.ended, out);
  out += ',';
  write_key("runtime_ms", out);
  write_json(Value(static_cast<double>(static_cast<long long>(f.run_ms * 1000)) / 1000), out);
  out += ',';
  write_key("steps", out);
  out += '[';
  if (f.steps) {
    bool first = true;
    for (const StepEntry& e : *f.steps) {
      if (!first) out += ',';
      first = false;
      write_step(e, f.value_limit, out);
    }
  }
  out += ']';
  out += ',';
  write_key("logs", out);
  out += '[';
  for (size_t i = 0; i < f.logs.size(); ++i) {
    if (i > 0) out += ',';
    write_log(f.logs[i], f.value_limit, out);
  }
  out += ']';
  out += ',';
  write_key("variables", out);
  out += '{';
  for (size_t i = 0; i < f.variable_names.size() && i < f.variables.size(); ++i) {
    if (i > 0) out += ',';
    write_json_string(f.variable_names.at(i).as_string(), out);
    out += ':';
    write_json(limit_value(f.variables.at(i), f.value_limit), out);
  }
  out += '}';
  out += ',';
  write_key("error", out);
  write_json(f.error, out);
  out += '}';
}

}  // namespace flowrt
