#include "runtime/harness.h"

#include "runtime/engine_log.h"

#include <initializer_list>

#include "compiler/loader.h"
#include "plans/value_json.h"
#include "runtime/engine_core.h"

namespace flowrt {
namespace {

Status check_fields(const Value& op, std::initializer_list<std::string_view> allowed) {
  for (const auto& m : op.members()) {
    const std::string_view k = m.key.as_string();
    bool ok = k == "op";
    for (std::string_view a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return Error{"op " + shown_value(op["op"]) + " has no field '" + std::string(k) + "' (fields: " +
                   (list.empty() ? std::string("none") : list) + ")"};
    }
  }
  return Status::ok();
}

Result<std::string_view> text_field(const Value& op, std::string_view name) {
  const Value& v = op[name];
  if (!v.is_string() || v.as_string().empty()) {
    return Error{"field '" + std::string(name) + "' must be a non-empty string" +
                 (v.is_null() ? std::string(" (missing)") : ", not " + shown_value(v))};
  }
  return v.as_string();
}

Result<Value> object_field(const Value& op, std::string_view name, bool required) {
  const Value* v = op.find(name);
  if (!v || v->is_null()) {
    if (required) return Error{"field '" + std::string(name) + "' is required"};
    return Value::empty_object();
  }
  if (!v->is_object()) return Error{"field '" + std::string(name) + "' must be an object, not " + shown_value(*v)};
  return *v;
}

Result<DurationMs> duration_field(const Value& op, std::string_view name, DurationMs fallback) {
  const Value* v = op.find(name);
  if (!v) return fallback;
  Result<DurationMs> d = parse_duration(*v);
  if (!d) return Error{"field '" + std::string(name) + "': " + d.message()};
  return d;
}

}  // namespace

Status Harness::apply(const Value& op) {
  if (!op.is_object()) return Error{"each line must be a JSON object with \"op\""};
  const Value& name = op["op"];
  if (!name.is_string()) return Error{"each line needs \"op\""};
  const std::string_view o = name.as_string();

  if (o == "insert") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"table", "values"}));
    Result<std::string_view> table = text_field(op, "table");
    if (!table) return table.error();
    Result<Value> values = object_field(op, "values", false);
    if (!values) return values.error();
    return engine_.insert(*table, *values).status();
  }
  if (o == "update" || o == "delete") {
    const bool update = o == "update";
    if (update) FLOWRT_RETURN_IF_ERROR(check_fields(op, {"table", "sys_id", "where", "values"}));
    else FLOWRT_RETURN_IF_ERROR(check_fields(op, {"table", "sys_id", "where"}));
    Result<std::string_view> table = text_field(op, "table");
    if (!table) return table.error();
    Result<Value> values = update ? object_field(op, "values", true) : Result<Value>(Value());
    if (!values) return values.error();
    const bool by_id = op.contains("sys_id");
    if (by_id == op.contains("where")) return Error{"op " + std::string(o) + " needs either \"sys_id\" or \"where\""};
    if (by_id) {
      Result<std::string_view> sys_id = text_field(op, "sys_id");
      if (!sys_id) return sys_id.error();
      return update ? engine_.update(*table, *sys_id, *values).status() : engine_.remove(*table, *sys_id).status();
    }
    return update ? engine_.update_where(*table, op["where"], *values).status()
                  : engine_.remove_where(*table, op["where"]).status();
  }
  if (o == "fire_event") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"name", "payload"}));
    Result<std::string_view> ev = text_field(op, "name");
    if (!ev) return ev.error();
    return engine_.fire_event(*ev, op["payload"]);
  }
  if (o == "call_flow") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"flow", "inputs"}));
    Result<std::string_view> flow = text_field(op, "flow");
    if (!flow) return flow.error();
    Result<Value> inputs = object_field(op, "inputs", false);
    if (!inputs) return inputs.error();
    return engine_.call_flow(*flow, *inputs).status();
  }
  if (o == "test_flow") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"flow", "record", "inputs"}));
    Result<std::string_view> flow = text_field(op, "flow");
    if (!flow) return flow.error();
    const Value& record = op["record"];
    if (!record.is_null() && !record.is_object()) return Error{"field 'record' must be {\"table\", \"sys_id\"}"};
    Result<Value> inputs = object_field(op, "inputs", false);
    if (!inputs) return inputs.error();
    const Value* given = op.find("inputs");
    return engine_.test_flow(*flow, record, given && !given->is_null() ? *inputs : Value()).status();
  }
  if (o == "save") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"definition"}));
    Result<Value> def = object_field(op, "definition", true);
    if (!def) return def.error();
    return engine_.save(*def);
  }
  if (o == "activate" || o == "deactivate") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"id"}));
    Result<std::string_view> id = text_field(op, "id");
    if (!id) return id.error();
    return o == "activate" ? engine_.activate(*id) : engine_.deactivate(*id);
  }
  if (o == "publish") {
    // "type" names which definition of the id, when a flow and a subflow (or action) share
    // it; without it, the first of flow, subflow, action with a draft.
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"id", "type"}));
    Result<std::string_view> id = text_field(op, "id");
    if (!id) return id.error();
    std::optional<UnitType> type;
    if (op.contains("type")) {
      const Value& t = op["type"];
      for (UnitType u : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
        if (t.is_string() && t.as_string() == unit_type_name(u)) type = u;
      }
      if (!type) return Error{"field 'type' must be \"flow\", \"subflow\" or \"action\", not " + shown_value(t)};
    }
    return engine_.publish(*id, type);
  }
  if (o == "set_property") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"name", "value"}));
    Result<std::string_view> prop = text_field(op, "name");
    if (!prop) return prop.error();
    if (!op.contains("value")) return Error{"field 'value' is required"};
    return engine_.set_property(*prop, op["value"]);
  }
  if (o == "cancel") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"context"}));
    Result<std::string_view> ctx = text_field(op, "context");
    if (!ctx) return ctx.error();
    return engine_.cancel(*ctx);
  }
  if (o == "advance") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"duration"}));
    if (!op.contains("duration")) return Error{"field 'duration' is required"};
    Result<DurationMs> d = duration_field(op, "duration", 0);
    if (!d) return d.error();
    return engine_.advance(*d);
  }
  if (o == "settle") {
    FLOWRT_RETURN_IF_ERROR(check_fields(op, {"until"}));
    Result<DurationMs> d = duration_field(op, "until", 24 * 3600 * 1000);
    if (!d) return d.error();
    engine_.settle(*d);
    return Status::ok();
  }
  return Error{"unknown op '" + std::string(o) +
               "' (ops: insert, update, delete, fire_event, call_flow, test_flow, save, activate, deactivate, "
               "publish, set_property, cancel, advance, settle)"};
}

Status Harness::run_text(std::string_view text, const std::string& name) {
  size_t line_no = 0;
  size_t pos = 0;
  bool applied_any = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (engine_.stop_requested()) return Error{name + ":" + std::to_string(line_no) + ": not applied: the engine is stopping"};
    const EngineProperties& props = engine_.core().props();
    // One worker: the line waits for what earlier lines started (see harness.h).
    if (props.worker_threads == 1 && applied_any) engine_.core().quiesce();
    JsonLimits limits;
    limits.max_bytes = props.max_events_file_bytes;
    limits.max_depth = props.max_json_depth;
    limits.max_string_bytes = props.max_string_bytes;
    Value op;
    JsonParseError error;
    Status s;
    if (line.size() > limits.max_bytes) {
      s = Error{"line of " + std::to_string(line.size()) + " bytes is larger than the limit of " +
                std::to_string(limits.max_bytes) + " bytes (max_events_file_bytes)"};
    } else if (!parse_json(line, &op, &error, limits)) {
      s = Error{"column " + std::to_string(error.column) + ": " + error.message};
    } else if (!filter_) {
      s = apply(op);
    } else {
      Result<Value> filtered = filter_(op);
      s = filtered ? apply(*filtered) : filtered.status();
    }
    applied_any = true;
    if (s) engine_log().debug("{}:{}: applied", name, line_no);
    if (!s) {
      engine_.settle();
      if (engine_.stop_requested()) return Error{name + ":" + std::to_string(line_no) + ": not applied: the engine is stopping"};
      return Error{name + ":" + std::to_string(line_no) + ": " + s.message()};
    }
  }
  engine_.settle();
  return Status::ok();
}

Status Harness::run_file(const std::string& path) {
  Result<std::string> text = read_file(path, engine_.core().props().max_events_file_bytes, "max_events_file_bytes");
  if (!text) return Error{path + ": " + text.message()};
  return run_text(*text, path);
}

}  // namespace flowrt
