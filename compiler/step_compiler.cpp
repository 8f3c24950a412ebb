// UnitCompiler: action steps and their inputs.
#include <algorithm>

#include "compiler/unit_compiler.h"
#include "plans/time.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

std::string param_list(const std::vector<Param>& params) {
  std::string out;
  for (const Param& p : params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "none" : out;
}

std::string join_names(const std::vector<Value>& names) {
  std::string out;
  for (const Value& n : names) out += (out.empty() ? "" : ", ") + std::string(n.as_string());
  return out.empty() ? "none" : out;
}

std::vector<Param> params_of(const ActionSignature& sig) {
  std::vector<Param> out;
  for (const InputParam& p : sig.inputs) out.push_back(p.param);
  return out;
}

}  // namespace

ActionStep UnitCompiler::compile_action(const Value& step, const std::string& pointer) {
  check_keys(step, {"id", "action", "inputs", "on_error", "name", "description"}, pointer);
  ActionStep out;
  const size_t order = order_++;
  current_order_ = order;
  ++action_count_;

  const Value& id = step["id"];
  if (!id.is_null()) {
    if (!id.is_string() || !valid_id(id.as_string())) {
      add_error(pointer_append(pointer, "id"), "step id must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '.', '-'");
    } else {
      out.id = std::string(id.as_string());
      auto it = steps_.find(out.id);
      if (it != steps_.end() && it->second.order == order) out.slot = static_cast<int32_t>(it->second.slot);
    }
  }
  const Value& on_error = step["on_error"];
  if (on_error == Value("continue")) {
    out.on_error = OnError::kContinue;
  } else if (!on_error.is_null() && on_error != Value("stop")) {
    add_error(pointer_append(pointer, "on_error"), "on_error must be \"stop\" or \"continue\", not " + shown_value(on_error));
  }

  const Value& action = step["action"];
  const std::string action_ptr = pointer_append(pointer, "action");
  if (!action.is_string() || action.as_string().empty()) {
    add_error(action_ptr, "action must be the name of an action type");
    return out;
  }
  out.action = std::string(action.as_string());
  const Value& inputs = step.contains("inputs") ? step["inputs"] : Value::empty_object();
  const std::string inputs_ptr = pointer_append(pointer, "inputs");
  if (!inputs.is_object()) {
    add_error(inputs_ptr, "inputs must be an object");
    return out;
  }

  if (const ActionSignature* sig = find_builtin(out.action, &out.kind)) {
    if (out.kind == ActionKind::kAssignOutputs && def_.type == UnitType::kFlow) {
      add_error(action_ptr, "assign_outputs is only for subflows and actions; a flow has no outputs");
      return out;
    }
    if (out.kind == ActionKind::kCallSubflow) {
      for (const auto& m : inputs.members()) {
        if (m.key.as_string() != "subflow" && m.key.as_string() != "inputs") {
          add_error(pointer_append(inputs_ptr, m.key.as_string()),
                    "call_subflow has no input '" + std::string(m.key.as_string()) + "' (inputs: subflow, inputs)");
        }
      }
      const Value& sub = inputs["subflow"];
      if (!sub.is_string()) {
        add_error(sub.is_null() ? inputs_ptr : pointer_append(inputs_ptr, "subflow"),
                  "call_subflow needs \"subflow\": the literal id of a subflow");
        return out;
      }
      out.callee_id = std::string(sub.as_string());
      if (!resolve_callee(UnitType::kSubflow, out.callee_id, pointer_append(inputs_ptr, "subflow"), &out)) return out;
      const Definition* def = builder_->definitions().find(UnitType::kSubflow, out.callee_id);
      std::vector<Param> params, outputs;
      read_params(def->source["inputs"], "", "", &params, nullptr);
      read_params(def->source["outputs"], "", "", &outputs, nullptr);
      compile_call_inputs(params, inputs.contains("inputs") ? inputs["inputs"] : Value::empty_object(),
                          pointer_append(inputs_ptr, "inputs"), def->label(), &out);
      for (const Param& p : outputs) out.output_names.push_back(Value(std::string_view(p.name)));
      return out;
    }
    compile_builtin_inputs(*sig, inputs, inputs_ptr, &out);
    for (const Param& p : sig->outputs) out.output_names.push_back(Value(std::string_view(p.name)));
    return out;
  }
  if (const Definition* def = builder_->definitions().find(UnitType::kAction, out.action)) {
    out.kind = ActionKind::kCallAction;
    out.callee_id = out.action;
    if (!resolve_callee(UnitType::kAction, out.action, action_ptr, &out)) return out;
    std::vector<Param> params, outputs;
    read_params(def->source["inputs"], "", "", &params, nullptr);
    read_params(def->source["outputs"], "", "", &outputs, nullptr);
    compile_call_inputs(params, inputs, inputs_ptr, def->label(), &out);
    for (const Param& p : outputs) out.output_names.push_back(Value(std::string_view(p.name)));
    return out;
  }
  uint32_t index = 0;
  if (const ActionSignature* sig = builder_->actions() ? builder_->actions()->find(out.action, &index) : nullptr) {
    out.kind = ActionKind::kCustom;
    out.callee = index;
    compile_builtin_inputs(*sig, inputs, inputs_ptr, &out);
    for (const Param& p : sig->outputs) out.output_names.push_back(Value(std::string_view(p.name)));
    return out;
  }
  add_error(action_ptr, "unknown action '" + out.action +
                            "' (not a built-in action, an action definition or a registered action type)");
  return out;
}

bool UnitCompiler::resolve_callee(UnitType type, const std::string& id, const std::string& pointer,
                                  ActionStep* out) {
  std::string problem;
  if (!builder_->unit_for(type, id, pointer, &out->callee, &problem)) {
    add_error(pointer, problem);
    return false;
  }
  return true;
}

void UnitCompiler::check_literal(const Template& t, const InputParam& p, const std::string& pointer) {
  if (!t.is_constant() || t.absent()) return;
  if (p.param.required && t.constant.is_null()) {
    add_error(pointer, "input '" + p.param.name + "' is required and cannot be null");
    return;
  }
  std::string problem = check_input_value(p.param.name, p.param.type, p.check, t.constant);
  if (!problem.empty()) add_error(pointer, std::move(problem));
}

void UnitCompiler::compile_builtin_inputs(const ActionSignature& sig, const Value& inputs, const std::string& pointer,
                                          ActionStep* out) {
  out->inputs.resize(sig.inputs.size());
  for (const InputParam& p : sig.inputs) out->input_names.push_back(Value(std::string_view(p.param.name)));
  for (const auto& m : inputs.members()) {
    const std::string_view key = m.key.as_string();
    const std::string p = pointer_append(pointer, key);
    auto it = std::find_if(sig.inputs.begin(), sig.inputs.end(), [&](const InputParam& ip) { return ip.param.name == key; });
    if (it == sig.inputs.end()) {
      add_error(p, sig.name + " has no input '" + std::string(key) + "' (inputs: " + param_list(params_of(sig)) + ")");
      continue;
    }
    const size_t index = static_cast<size_t>(it - sig.inputs.begin());
    switch (it->role) {
      case InputRole::kCondition:
        out->condition = expr_.compile_condition(m.value, p, FieldMode::kRecordUnderTest,
                                                 out->kind == ActionKind::kWaitForCondition);
        out->inputs[index] = expr_.compile_template(m.value, p);
        break;
      case InputRole::kAssignments:
        compile_assignments(m.value, p, out->kind == ActionKind::kAssignOutputs, out);
        out->inputs[index] = expr_.compile_template(m.value, p);
        break;
      default:
        out->inputs[index] = expr_.compile_template(m.value, p);
        check_literal(out->inputs[index], *it, p);
        break;
    }
  }
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if (sig.inputs[i].param.required && out->inputs[i].absent()) {
      add_error(pointer, sig.name + " needs input '" + sig.inputs[i].param.name + "'");
    }
  }
  if (out->kind == ActionKind::kLock) check_lock_literals(*out, pointer);
  name_given_inputs(out);
}

void UnitCompiler::name_given_inputs(ActionStep* out) {
  std::vector<Value> given;
  for (size_t i = 0; i < out->inputs.size(); ++i) {
    if (!out->inputs[i].absent()) given.push_back(out->input_names[i]);
  }
  out->given_input_names = intern_shape(given);
}

void UnitCompiler::check_lock_literals(const ActionStep& step, const std::string& pointer) {
  auto literal = [&](const char* name) -> const Value* {
    const Template* t = step.input(name);
    return t && t->is_constant() && !t->absent() ? &t->constant : nullptr;
  };
  const Value* key = literal("key");
  const Value* weight = literal("weight");
  if (key && key->is_string() && weight && weight->is_int() && weight->as_int() >= 1) {
    const std::string name(key->as_string());
    const auto& limits = builder_->options().lock_limits;
    auto it = limits.find(name);
    const int64_t limit = it == limits.end() ? 1 : it->second;
    if (weight->as_int() > limit) {
      add_error(pointer_append(pointer, "weight"),
                "weight " + std::to_string(weight->as_int()) + " is more than the limit " + std::to_string(limit) +
                    " of lock '" + name + "'" +
                    (it == limits.end() ? " (undeclared locks have limit 1)" : ""));
    }
  }
  // The request gives up (max_attempts - 1) x delay after it is made (delay "1s" unless given).
  const Value* attempts = literal("max_attempts");
  const Value* delay_value = literal("delay");
  if (!attempts || !attempts->is_int() || attempts->as_int() < 1) return;
  if (step.input("delay") && !step.input("delay")->absent() && !delay_value) return;  // a pill: known at run time
  DurationMs delay = 1000;
  if (delay_value) {
    Result<DurationMs> d = parse_duration(*delay_value);
    if (!d) return;  // its own error
    delay = *d;
  }
  if (delay > 0 && attempts->as_int() - 1 > kMaxDuration / delay) {
    add_error(pointer_append(pointer, "max_attempts"),
              "input 'max_attempts': " + std::to_string(attempts->as_int()) + " attempts " + format_duration(delay) +
                  " apart would wait longer than the maximum duration of " + format_duration(kMaxDuration) +
                  " ((max_attempts - 1) x delay), got " + std::to_string(attempts->as_int()));
  }
}

void UnitCompiler::compile_call_inputs(const std::vector<Param>& params, const Value& inputs,
                                       const std::string& pointer, const std::string& callee_label, ActionStep* out) {
  out->inputs.resize(params.size());
  for (const Param& p : params) out->input_names.push_back(Value(std::string_view(p.name)));
  if (!inputs.is_object()) {
    add_error(pointer, "inputs must be an object");
    return;
  }
  for (const auto& m : inputs.members()) {
    const std::string_view key = m.key.as_string();
    const std::string p = pointer_append(pointer, key);
    auto it = std::find_if(params.begin(), params.end(), [&](const Param& param) { return param.name == key; });
    if (it == params.end()) {
      add_error(p, callee_label + " has no input '" + std::string(key) + "' (inputs: " + param_list(params) + ")");
      continue;
    }
    const size_t index = static_cast<size_t>(it - params.begin());
    out->inputs[index] = expr_.compile_template(m.value, p);
    check_literal(out->inputs[index], InputParam{*it, InputRole::kValue, InputCheck::kNone}, p);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].required && out->inputs[i].absent()) {
      add_error(pointer, callee_label + " needs input '" + params[i].name + "'");
    }
  }
  name_given_inputs(out);
}

void UnitCompiler::compile_assignments(const Value& values, const std::string& pointer, bool outputs,
                                       ActionStep* out) {
  if (!values.is_object()) {
    add_error(pointer, "values must be an object of names and values");
    return;
  }
  for (const auto& m : values.members()) {
    const std::string name(m.key.as_string());
    const std::string p = pointer_append(pointer, name);
    Assignment a;
    a.name = m.key;
    if (outputs) {
      auto it = outputs_.find(name);
      if (it == outputs_.end()) {
        add_error(p, def_.label() + " declares no output '" + name + "' (outputs: " + param_list(unit_->outputs) + ")");
        continue;
      }
      a.slot = it->second;
    } else {
      auto it = variables_.find(name);
      if (it == variables_.end()) {
        if (!valid_id(name) || name.find('.') != std::string::npos) {
          add_error(p, "variable name '" + name + "' must be letters, digits, '_' or '-'");
        } else {
          std::vector<Value> declared;
          for (const auto& v : def_.source["variables"].members()) declared.push_back(v.key);
          add_error(p, "set_variables sets '" + name + "', which \"variables\" does not declare (declared: " +
                           join_names(declared) + "); declare it with an initial value");
        }
        continue;
      }
      a.slot = it->second;
    }
    a.value = expr_.compile_template(m.value, p);
    if (outputs && a.value.is_constant() && !value_fits(a.value.constant, unit_->outputs[a.slot].type)) {
      add_error(p, "output '" + name + "' is declared " + std::string(param_type_name(unit_->outputs[a.slot].type)) +
                       ", not " + std::string(type_name(a.value.constant.type())));
    }
    out->assignments.push_back(std::move(a));
  }
}

}  // namespace flowrt
