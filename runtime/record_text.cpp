// write_record_json: a context record's JSON written straight from its fields, the bytes
// write_json(record_to_value(f)) gives, without building the Value in between. The store
// of a durable engine keeps every ended context's record as this text (stored_context.h,
// record_update), so this is the text users read back. The two are held to one text by
// RecordTextTest and, in the sanitizer build, by record_to_value itself (record_json.cpp).
#include <string>
#include <string_view>
#include <vector>

#include "plans/value_json.h"
#include "runtime/context.h"
#include "runtime/record_json.h"

namespace flowrt {
namespace {

// One JSON object written member by member, in order, as write_json writes an object:
// '{', then each "key":value with a ',' between, then '}' at close(). Keys given as
// std::string_view literals are the record's own: plain ASCII that needs no escaping.
class ObjectText {
 public:
  explicit ObjectText(std::string& out) : out_(out) { out_ += '{'; }
  // Starts the member `key`; the caller writes its value into the returned text.
  std::string& key(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_ += key;
    out_ += "\":";
    return out_;
  }
  // A member whose key is data (escaped as any JSON string).
  std::string& data_key(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    write_json_string(key, out_);
    out_ += ':';
    return out_;
  }
  void value(std::string_view k, const Value& v) { write_json(v, key(k)); }
  void text(std::string_view k, std::string_view s) { write_json_string(s, key(k)); }
  void time_or_null(std::string_view k, TimeMs t) {
    if (t < 0) {
      key(k) += "null";
    } else {
      text(k, format_time(t));
    }
  }
  void close() { out_ += '}'; }

 private:
  std::string& out_;
  bool first_ = true;
};

// {key: limit_value(value), ...} over the members of `object` (none when it is not one).
void write_limited_members(const Value& object, size_t limit, std::string& out) {
  ObjectText o(out);
  for (const auto& m : object.members()) write_json(limit_value(m.value, limit), o.data_key(m.key.as_string()));
  o.close();
}

void write_trigger(const TriggerData& t, size_t limit, std::string& out) {
  ObjectText o(out);
  o.text("type", trigger_type_name(t.type));
  switch (t.type) {
    case TriggerType::kRecord:
      o.value("table", t.table);
      o.text("operation", operation_name(t.operation));
      o.value("sys_id", t.sys_id);
      break;
    case TriggerType::kEvent:
      o.value("name", t.event_name);
      break;
    case TriggerType::kSchedule:
      o.text("time", format_time(t.time));
      break;
    case TriggerType::kApi:
      if (t.payload.is_object()) write_limited_members(t.payload, limit, o.key("inputs"));
      break;
  }
  if (!t.caller.is_null()) o.value("caller", t.caller);
  o.close();
}

void write_step(const StepEntry& e, size_t limit, std::string& out) {
  ObjectText o(out);
  o.value("path", e.path);
  if (!e.node->id.is_null()) o.value("id", e.node->id);
  o.value("action", e.node->action);
  o.text("status", status_name(e.status));
  o.time_or_null("started_at", e.started);
  o.time_or_null("ended_at", e.ended);
  write_limited_members(e.inputs, limit, o.key("inputs"));
  if (e.outputs.is_null()) {
    o.key("outputs") += "{}";
  } else {
    o.value("outputs", limit_value(e.outputs, limit));
  }
  if (e.status == StepStatus::kError && e.outputs.contains("error")) o.value("error", e.outputs["error"]);
  o.close();
}

void write_log(const LogEntry& l, size_t limit, std::string& out) {
  ObjectText o(out);
  o.text("time", format_time(l.time));
  o.text("level", level_name(l.level));
  o.value("step", l.step);
  o.value("message", limit_text(l.message, limit));
  o.close();
}

// [write(item), ...] over `items`.
template <class Items, class Write>
void write_array(const Items& items, std::string& out, Write&& write) {
  out += '[';
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += ',';
    first = false;
    write(item);
  }
  out += ']';
}

}  // namespace

void write_record_json(const RecordFields& f, std::string& out) {
  const size_t limit = f.value_limit;
  ObjectText o(out);
  o.value("id", f.id);
  o.value("seq", Value(static_cast<long long>(f.seq)));
  o.value("flow", f.flow);
  o.value("plan_version", f.plan_version);
  o.text("status", status_name(f.status));
  if (f.trigger) {
    write_trigger(*f.trigger, limit, o.key("trigger"));
  } else {
    o.key("trigger") += "null";
  }
  if (f.cause && !f.cause->context_id.is_null()) {
    ObjectText cause(o.key("cause"));
    cause.value("context", f.cause->context_id);
    cause.value("flow", f.cause->flow_id);
    cause.close();
  } else {
    o.key("cause") += "null";
  }
  static const Chain kNoChain;
  write_array(f.cause && f.cause->chain ? *f.cause->chain : kNoChain, o.key("chain"),
              [&](const Value& flow) { write_json(flow, out); });
  o.time_or_null("started_at", f.started);
  o.time_or_null("ended_at", f.ended);
  o.value("runtime_ms", Value(static_cast<double>(static_cast<long long>(f.run_ms * 1000)) / 1000));
  static const std::vector<StepEntry> kNoSteps;
  write_array(f.steps ? *f.steps : kNoSteps, o.key("steps"), [&](const StepEntry& e) { write_step(e, limit, out); });
  write_array(f.logs, o.key("logs"), [&](const LogEntry& l) { write_log(l, limit, out); });
  ObjectText vars(o.key("variables"));
  for (size_t i = 0; i < f.variable_names.size() && i < f.variables.size(); ++i) {
    write_json(limit_value(f.variables.at(i), limit), vars.data_key(f.variable_names.at(i).as_string()));
  }
  vars.close();
  o.value("error", f.error);
  o.close();
}

}  // namespace flowrt
