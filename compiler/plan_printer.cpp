#include "compiler/plan_printer.h"

#include <string>

#include "compiler/signatures.h"

namespace flowrt {
namespace {

std::string_view root_name(PillRoot r) {
  switch (r) {
    case PillRoot::kTriggerRecord: return "trigger.record";
    case PillRoot::kTriggerPrevious: return "trigger.previous";
    case PillRoot::kTriggerTable: return "trigger.table";
    case PillRoot::kTriggerOperation: return "trigger.operation";
    case PillRoot::kTriggerSysId: return "trigger.sys_id";
    case PillRoot::kTriggerTime: return "trigger.time";
    case PillRoot::kTriggerPayload: return "trigger.payload";
    case PillRoot::kTriggerType: return "trigger.type";
    case PillRoot::kStep: return "step";
    case PillRoot::kVariable: return "variable";
    case PillRoot::kInput: return "input";
    case PillRoot::kItem: return "item";
    case PillRoot::kContextId: return "context.id";
    case PillRoot::kFlowId: return "flow.id";
    case PillRoot::kErrorMessage: return "error.message";
    case PillRoot::kErrorStep: return "error.step";
    case PillRoot::kField: return "field";
  }
  return "?";
}

Value pill_value(const Pill& p) {
  std::vector<Member> m;
  m.push_back(Member{Value("pill"), Value(std::string_view(p.text))});
  m.push_back(Member{Value("root"), Value(root_name(p.root))});
  if (p.root == PillRoot::kStep) {
    m.push_back(Member{Value("slot"), Value(p.slot)});
    m.push_back(Member{Value("output"), Value(p.index)});
  } else if (p.root == PillRoot::kVariable || p.root == PillRoot::kItem || (p.root == PillRoot::kInput && !p.by_name)) {
    m.push_back(Member{Value("slot"), Value(p.slot)});
  }
  if (!p.path.empty()) {
    std::vector<Value> path;
    for (const PathSegment& s : p.path) path.push_back(s.key);
    m.push_back(Member{Value("path"), Value::array(std::move(path))});
  }
  if (!p.transforms.empty()) {
    std::vector<Value> ts;
    for (const Transform& t : p.transforms) {
      std::string text(transform_name(t.kind));
      if (t.argument_pill) text += ": " + t.argument_pill->text;
      else if (!t.argument.is_null()) text += ": " + t.argument.to_json();
      ts.push_back(Value(std::string_view(text)));
    }
    m.push_back(Member{Value("transforms"), Value::array(std::move(ts))});
  }
  return Value::object(std::move(m));
}

Value template_value(const Template& t) {
  switch (t.kind) {
    case Template::Kind::kAbsent: return Value();
    case Template::Kind::kConstant: return t.constant;
    case Template::Kind::kPill: return pill_value(t.pills.front());
    case Template::Kind::kText: {
      std::vector<Value> parts;
      for (size_t i = 0; i < t.pills.size(); ++i) {
        if (!t.text_parts[i].as_string().empty()) parts.push_back(t.text_parts[i]);
        parts.push_back(pill_value(t.pills[i]));
      }
      if (!t.text_parts.back().as_string().empty()) parts.push_back(t.text_parts.back());
      return Value::object({{"text", Value::array(std::move(parts))}});
    }
    case Template::Kind::kArray: {
      std::vector<Value> items;
      for (const Template& c : t.children) items.push_back(template_value(c));
      return Value::array(std::move(items));
    }
    case Template::Kind::kObject: {
      std::vector<Member> m;
      for (size_t i = 0; i < t.children.size(); ++i) m.push_back(Member{t.keys.at(i), template_value(t.children[i])});
      return Value::object(std::move(m));
    }
  }
  return Value();
}

Value condition_value(const Condition& c) {
  switch (c.kind) {
    case Condition::Kind::kTrue: return Value(true);
    case Condition::Kind::kAll:
    case Condition::Kind::kAny: {
      std::vector<Value> children;
      for (const Condition& child : c.children) children.push_back(condition_value(child));
      return Value::object({{c.kind == Condition::Kind::kAll ? "all" : "any", Value::array(std::move(children))}});
    }
    case Condition::Kind::kNot: return Value::object({{"not", condition_value(c.children.front())}});
    case Condition::Kind::kCompare:
      return Value::object({{"subject", pill_value(c.subject)}, {"op", Value(op_name(c.op))}, {"value", template_value(c.value)}});
  }
  return Value();
}

Value block_value(const Block& block);

Value node_value(const Node& n) {
  std::vector<Member> m;
  m.push_back(Member{Value("path"), n.path});
  if (const auto* a = std::get_if<ActionStep>(&n.op)) {
    if (!a->id.empty()) m.push_back(Member{Value("id"), Value(std::string_view(a->id))});
    m.push_back(Member{Value("action"), Value(std::string_view(a->action))});
    if (a->slot >= 0) m.push_back(Member{Value("slot"), Value(a->slot)});
    if (a->kind == ActionKind::kCallSubflow || a->kind == ActionKind::kCallAction) {
      m.push_back(Member{Value("unit"), Value(a->callee)});
    }
    std::vector<Member> inputs;
    for (size_t i = 0; i < a->inputs.size(); ++i) {
      if (!a->inputs[i].absent()) inputs.push_back(Member{a->input_names[i], template_value(a->inputs[i])});
    }
    m.push_back(Member{Value("inputs"), Value::object(std::move(inputs))});
    if (a->condition.kind != Condition::Kind::kTrue) m.push_back(Member{Value("condition"), condition_value(a->condition)});
    if (!a->assignments.empty()) {
      std::vector<Member> as;
      for (const Assignment& x : a->assignments) {
        as.push_back(Member{x.name, Value::object({{"slot", Value(x.slot)}, {"value", template_value(x.value)}})});
      }
      m.push_back(Member{Value("assignments"), Value::object(std::move(as))});
    }
    m.push_back(Member{Value("outputs"), Value::array(a->output_names)});
    if (a->on_error == OnError::kContinue) m.push_back(Member{Value("on_error"), Value("continue")});
  } else if (const auto* i = std::get_if<IfNode>(&n.op)) {
    std::vector<Value> branches;
    for (size_t k = 0; k < i->conditions.size(); ++k) {
      branches.push_back(Value::object({{"if", condition_value(i->conditions[k])}, {"then", block_value(i->branches[k])}}));
    }
    m.push_back(Member{Value("branches"), Value::array(std::move(branches))});
    if (i->has_else) m.push_back(Member{Value("else"), block_value(i->else_block)});
  } else if (const auto* f = std::get_if<ForEachNode>(&n.op)) {
    m.push_back(Member{Value("for_each"), template_value(f->items)});
    m.push_back(Member{Value("as"), f->as});
    m.push_back(Member{Value("depth"), Value(f->depth)});
    m.push_back(Member{Value("do"), block_value(f->body)});
  } else if (const auto* t = std::get_if<TryNode>(&n.op)) {
    m.push_back(Member{Value("try"), block_value(t->body)});
    m.push_back(Member{Value("catch"), block_value(t->handler)});
  } else {
    m.push_back(Member{Value("end"), Value(true)});
  }
  return Value::object(std::move(m));
}

Value block_value(const Block& block) {
  std::vector<Value> nodes;
  for (const Node& n : block) nodes.push_back(node_value(n));
  return Value::array(std::move(nodes));
}

Value params_value(const std::vector<Param>& params) {
  std::vector<Value> out;
  for (const Param& p : params) {
    out.push_back(Value::object({{"name", Value(std::string_view(p.name))},
                                 {"type", Value(param_type_name(p.type))},
                                 {"required", Value(p.required)}}));
  }
  return Value::array(std::move(out));
}

Value trigger_value(const TriggerSpec& t) {
  std::vector<Member> m;
  m.push_back(Member{Value("type"), Value(trigger_type_name(t.type))});
  switch (t.type) {
    case TriggerType::kRecord:
      m.push_back(Member{Value("table"), Value(std::string_view(t.table))});
      m.push_back(Member{Value("when"), Value(when_name(t.when))});
      if (t.has_condition) m.push_back(Member{Value("condition"), condition_value(t.condition)});
      m.push_back(Member{Value("run"), Value(run_option_name(t.run))});
      break;
    case TriggerType::kSchedule:
      if (t.repeating) m.push_back(Member{Value("every"), Value(std::string_view(format_duration(t.every)))});
      if (t.has_start) m.push_back(Member{Value(t.repeating ? "start" : "at"), Value(std::string_view(format_time(t.start)))});
      break;
    case TriggerType::kEvent: m.push_back(Member{Value("name"), Value(std::string_view(t.event_name))}); break;
    case TriggerType::kApi: break;
  }
  return Value::object(std::move(m));
}

}  // namespace

Value plan_to_value(const Plan& plan) {
  std::vector<Value> deps;
  for (const PlanDependency& d : plan.dependencies) {
    deps.push_back(Value::object({{"type", Value(unit_type_name(d.type))},
                                  {"id", Value(std::string_view(d.id))},
                                  {"fingerprint", Value(std::string_view(d.fingerprint))}}));
  }
  std::vector<Value> units;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const PlanUnit& u = plan.units[i];
    std::vector<Member> vars;
    for (size_t k = 0; k < u.variable_names.size(); ++k) vars.push_back(Member{u.variable_names[k], u.variable_initial[k]});
    units.push_back(Value::object({{"unit", Value(static_cast<long long>(i))},
                                   {"type", Value(unit_type_name(u.type))},
                                   {"id", Value(std::string_view(u.id))},
                                   {"action_count", Value(u.action_count)},
                                   {"inputs", params_value(u.inputs)},
                                   {"outputs", params_value(u.outputs)},
                                   {"variables", Value::object(std::move(vars))},
                                   {"step_slots", Value::array(u.step_ids)},
                                   {"steps", block_value(u.body)}}));
  }
  return Value::object({{"flow", Value(std::string_view(plan.flow_id))},
                        {"version", Value(std::string_view(plan.version))},
                        {"trigger", trigger_value(plan.trigger)},
                        {"dependencies", Value::array(std::move(deps))},
                        {"units", Value::array(std::move(units))}});
}

}  // namespace flowrt
