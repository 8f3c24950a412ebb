#include "compiler/compiler.h"

#include <algorithm>

#include "compiler/expr_compiler.h"
#include "compiler/plan_builder.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

// Conditions on a record alone (triggers, `where`) compare fields with literal values.
class LiteralOnlyResolver : public PillResolver {
 public:
  std::string resolve(const std::vector<std::string>&, Pill*) const override {
    return "this condition compares the record's fields with literal values; data pills are not available here";
  }
  bool has_previous(PillRoot) const override { return false; }
};

}  // namespace

Compiler::Compiler(const DefinitionLookup& definitions, const ActionTypeLookup* actions, CompileOptions options)
    : definitions_(definitions), actions_(actions), options_(options) {}

std::shared_ptr<const Plan> Compiler::compile_flow(const Definition& flow, Diagnostics* diags) const {
  if (flow.type != UnitType::kFlow) {
    diags->add(flow.file, flow.pointer, flow.label() + " is not a flow");
    return nullptr;
  }
  return compile_unit(flow, diags);
}

std::shared_ptr<const Plan> Compiler::compile_unit(const Definition& def, Diagnostics* diags) const {
  PlanBuilder builder(definitions_, actions_, options_, diags);
  return builder.build(def);
}

bool Compiler::check_unit(const Definition& def, Diagnostics* diags, CheckMemo* memo) const {
  PlanBuilder builder(definitions_, actions_, options_, diags, memo);
  return builder.check(def);
}

bool read_params(const Value& list, const std::string& file, const std::string& pointer, std::vector<Param>* out,
                 Diagnostics* diags) {
  auto error = [&](const std::string& p, const std::string& message) {
    if (diags) diags->add(file, p, message);
    return false;
  };
  if (list.is_null()) return true;
  if (!list.is_array()) return error(pointer, "must be an array of {\"name\", \"type\", \"required\"}");
  bool ok = true;
  size_t i = 0;
  for (const Value& item : list.items()) {
    const std::string p = pointer_append(pointer, i++);
    if (!item.is_object()) {
      ok = error(p, "must be an object with \"name\" and \"type\"");
      continue;
    }
    for (const auto& m : item.members()) {
      const std::string_view k = m.key.as_string();
      if (k != "name" && k != "type" && k != "required" && k != "description") {
        ok = error(pointer_append(p, k), "unknown property '" + std::string(k) + "' (expected name, type, required)");
      }
    }
    Param param;
    const Value& name = item["name"];
    if (!name.is_string() || !valid_id(name.as_string())) {
      ok = error(pointer_append(p, "name"), "name must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '.', '-'");
      continue;
    }
    param.name = std::string(name.as_string());
    const Value& type = item["type"];
    if (!type.is_null() && (!type.is_string() || !parse_param_type(type.as_string(), &param.type))) {
      ok = error(pointer_append(p, "type"),
                 "type must be string, integer, number, boolean, object, array, record or any, not " + shown_value(type));
    }
    const Value& required = item["required"];
    if (required.is_bool()) param.required = required.as_bool();
    else if (!required.is_null()) ok = error(pointer_append(p, "required"), "required must be true or false");
    for (const Param& existing : *out) {
      if (existing.name == param.name) ok = error(pointer_append(p, "name"), "'" + param.name + "' is declared twice");
    }
    out->push_back(std::move(param));
  }
  return ok;
}

bool compile_record_condition(const Value& condition, const std::string& file, const std::string& pointer,
                              Condition* out, Diagnostics* diags) {
  const size_t before = diags->reported();
  LiteralOnlyResolver resolver;
  ExprCompiler expr(resolver, file, diags);
  *out = expr.compile_condition(condition, pointer, FieldMode::kRecordUnderTest, false);
  return diags->reported() == before;
}

bool compile_trigger(const Value& trigger, const std::string& file, const std::string& pointer, TriggerSpec* out,
                     Diagnostics* diags, const CompileOptions& options) {
  const size_t before = diags->reported();
  auto error = [&](const std::string& p, const std::string& message) { diags->add(file, p, message); };
  auto keys = [&](std::initializer_list<std::string_view> allowed) {
    for (const auto& m : trigger.members()) {
      const std::string_view k = m.key.as_string();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        error(pointer_append(pointer, k), "unknown trigger property '" + std::string(k) + "' (expected " + list + ")");
      }
    }
  };
  if (!trigger.is_object()) {
    error(pointer, "trigger must be an object with a \"type\"");
    return false;
  }
  const Value& type = trigger["type"];
  if (type == Value("record")) {
    out->type = TriggerType::kRecord;
    keys({"type", "table", "when", "condition", "run"});
    const Value& table = trigger["table"];
    if (!table.is_string() || table.as_string().empty()) {
      error(table.is_null() ? pointer : pointer_append(pointer, "table"), "a record trigger needs \"table\" (a string)");
    } else {
      out->table = std::string(table.as_string());
    }
    const Value& when = trigger["when"];
    if (when == Value("created")) out->when = RecordWhen::kCreated;
    else if (when == Value("updated")) out->when = RecordWhen::kUpdated;
    else if (when == Value("created_or_updated")) out->when = RecordWhen::kCreatedOrUpdated;
    else if (when == Value("deleted")) out->when = RecordWhen::kDeleted;
    else error(when.is_null() ? pointer : pointer_append(pointer, "when"),
               "when must be created, updated, created_or_updated or deleted" +
                   (when.is_null() ? std::string() : ", not " + shown_value(when)));
    const bool update = out->when == RecordWhen::kUpdated || out->when == RecordWhen::kCreatedOrUpdated;
    if (const Value* run = trigger.find("run")) {
      if (!update) {
        error(pointer_append(pointer, "run"), "run applies only to updated and created_or_updated triggers");
      } else if (*run == Value("always") || *run == Value("only_if_not_running")) {
        out->run = RunOption::kAlways;
      } else if (*run == Value("once")) {
        out->run = RunOption::kOnce;
      } else if (*run == Value("for_each_unique_change")) {
        out->run = RunOption::kForEachUniqueChange;
      } else if (*run == Value("for_every_update")) {
        out->run = RunOption::kForEveryUpdate;
      } else {
        error(pointer_append(pointer, "run"),
              "run must be once, always (only_if_not_running), for_each_unique_change or for_every_update, not " +
                  shown_value(*run));
      }
    }
    if (const Value* cond = trigger.find("condition")) {
      LiteralOnlyResolver resolver;
      ExprCompiler expr(resolver, file, diags);
      out->condition = expr.compile_condition(*cond, pointer_append(pointer, "condition"), FieldMode::kRecordUnderTest,
                                              update);
      out->has_condition = true;
    }
  } else if (type == Value("schedule")) {
    out->type = TriggerType::kSchedule;
    keys({"type", "every", "start", "at"});
    const Value* every = trigger.find("every");
    const Value* at = trigger.find("at");
    const Value* start = trigger.find("start");
    if (every && at) {
      error(pointer, "a schedule trigger takes either \"every\" (repeating) or \"at\" (once), not both");
    } else if (!every && !at) {
      error(pointer, "a schedule trigger needs either \"every\" or \"at\"");
    }
    if (every) {
      Result<DurationMs> d = parse_duration(*every);
      if (!d) error(pointer_append(pointer, "every"), d.message());
      else if (*d <= 0) error(pointer_append(pointer, "every"), "every must be longer than 0ms, got " + shown_value(*every));
      else if (*d < options.min_schedule_interval) {
        error(pointer_append(pointer, "every"), "every " + shown_value(*every) +
                                                    " is shorter than the minimum schedule interval of " +
                                                    format_duration(options.min_schedule_interval) +
                                                    " (min_schedule_interval)");
      } else {
        out->every = *d;
      }
      out->repeating = true;
      if (start) {
        Result<TimeMs> t = start->is_string() ? parse_time(start->as_string()) : Result<TimeMs>(Error{"start must be a time string, got " + shown_value(*start)});
        if (!t) error(pointer_append(pointer, "start"), t.message());
        else {
          out->start = *t;
          out->has_start = true;
        }
      }
    }
    if (at) {
      if (start && !every) error(pointer_append(pointer, "start"), "start goes with every, not with at");
      Result<TimeMs> t = at->is_string() ? parse_time(at->as_string()) : Result<TimeMs>(Error{"at must be a time string, got " + shown_value(*at)});
      if (!t) error(pointer_append(pointer, "at"), t.message());
      else {
        out->start = *t;
        out->has_start = true;
      }
    }
  } else if (type == Value("event")) {
    out->type = TriggerType::kEvent;
    keys({"type", "name"});
    const Value& name = trigger["name"];
    if (!name.is_string() || name.as_string().empty()) {
      error(name.is_null() ? pointer : pointer_append(pointer, "name"), "an event trigger needs \"name\" (a string)");
    } else {
      out->event_name = std::string(name.as_string());
    }
  } else if (type == Value("api")) {
    out->type = TriggerType::kApi;
    keys({"type"});
  } else {
    error(type.is_null() ? pointer : pointer_append(pointer, "type"),
          "trigger type must be record, schedule, event or api" + (type.is_null() ? std::string() : ", not " + shown_value(type)));
  }
  return diags->reported() == before;
}

}  // namespace flowrt
