#include "compiler/unit_compiler.h"

#include <algorithm>

#include "plans/value_json.h"

namespace flowrt {
namespace {

constexpr std::string_view kReservedRoots[] = {"trigger", "steps", "vars", "inputs", "item",
                                               "context", "flow",  "error"};

bool reserved_root(std::string_view name) {
  return std::find(std::begin(kReservedRoots), std::end(kReservedRoots), name) != std::end(kReservedRoots);
}

std::string join_names(const std::vector<Value>& names) {
  std::string out;
  for (const Value& n : names) {
    if (!out.empty()) out += ", ";
    out += n.as_string();
  }
  return out.empty() ? "none" : out;
}

}  // namespace

UnitCompiler::UnitCompiler(PlanBuilder* builder, const Definition& def, const TriggerSpec* trigger)
    : builder_(builder),
      def_(def),
      trigger_(trigger),
      expr_(*this, def.file, builder->diags(), builder->options().max_template_bytes) {}

void UnitCompiler::add_error(const std::string& pointer, std::string message) {
  builder_->diags()->add(def_.file, pointer, std::move(message));
}

namespace {

// Steps a run of `block` records when each if takes its largest branch and each loop runs
// once: what a context record reserves room for.
uint32_t steps_in_one_pass(const Block& block) {
  uint32_t n = 0;
  for (const Node& node : block) {
    ++n;
    if (const auto* f = std::get_if<IfNode>(&node.op)) {
      uint32_t most = steps_in_one_pass(f->else_block);
      for (const Block& b : f->branches) most = std::max(most, steps_in_one_pass(b));
      n += most;
    } else if (const auto* l = std::get_if<ForEachNode>(&node.op)) {
      n += steps_in_one_pass(l->body);
    } else if (const auto* t = std::get_if<TryNode>(&node.op)) {
      n += steps_in_one_pass(t->body) + steps_in_one_pass(t->handler);
    }
  }
  return n;
}

}  // namespace

std::string UnitCompiler::check_keys(const Value& obj, std::initializer_list<std::string_view> allowed,
                                     const std::string& pointer) {
  std::string first_unknown;
  for (const auto& m : obj.members()) {
    const std::string_view k = m.key.as_string();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      add_error(pointer_append(pointer, k), "unknown property '" + std::string(k) + "' (expected " + list + ")");
      if (first_unknown.empty()) first_unknown = std::string(k);
    }
  }
  return first_unknown;
}

void UnitCompiler::read_header(PlanUnit* unit) {
  const Value& src = def_.source;
  const std::string& base = def_.pointer;
  if (def_.type == UnitType::kFlow) {
    check_keys(src, {"id", "type", "name", "description", "status", "active", "trigger", "inputs", "variables",
                     "show_draft_actions", "actions", "$schema"},
               base);
  } else {
    // ("active" on a subflow or action is reported by read_definition, which says why.)
    check_keys(src, {"id", "type", "name", "description", "status", "active", "inputs", "outputs", "variables",
                     "actions", "$schema"},
               base);
  }
  const Value& show = src["show_draft_actions"];
  if (!show.is_null() && !show.is_bool()) add_error(pointer_append(base, "show_draft_actions"), "must be true or false");
  if (def_.type == UnitType::kAction) {
    // A step names an action by id, and a built-in or registered action type of that name
    // comes first (step_compiler.cpp): such a definition could never be called.
    ActionKind kind{};
    uint32_t index = 0;
    const bool builtin = find_builtin(def_.id, &kind) != nullptr;
    if (builtin || (builder_->actions() && builder_->actions()->find(def_.id, &index))) {
      add_error(pointer_append(base, "id"), "'" + def_.id + "' is the name of a " +
                                                (builtin ? "built-in action" : "registered action type") +
                                                ": a step {\"action\": \"" + def_.id +
                                                "\"} runs that, never this definition; give it another id");
    }
  }

  if (const Value* inputs = src.find("inputs")) {
    if (def_.type == UnitType::kFlow && trigger_ && trigger_->type != TriggerType::kApi) {
      add_error(pointer_append(base, "inputs"), "only API flows, subflows and actions declare inputs");
    }
    read_params(*inputs, def_.file, pointer_append(base, "inputs"), &unit->inputs, builder_->diags());
    unit->declares_inputs = true;
    for (uint32_t i = 0; i < unit->inputs.size(); ++i) inputs_.emplace(unit->inputs[i].name, i);
  }
  if (const Value* outputs = src.find("outputs")) {
    read_params(*outputs, def_.file, pointer_append(base, "outputs"), &unit->outputs, builder_->diags());
    for (uint32_t i = 0; i < unit->outputs.size(); ++i) outputs_.emplace(unit->outputs[i].name, i);
  }
  const Value& vars = src["variables"];
  if (vars.is_object()) {
    for (const auto& m : vars.members()) {
      const std::string name(m.key.as_string());
      if (!valid_id(name) || name.find('.') != std::string::npos) {
        add_error(pointer_append(pointer_append(base, "variables"), name),
                  "variable name '" + name + "' must be letters, digits, '_' or '-'");
        continue;
      }
      variables_.emplace(name, static_cast<uint32_t>(unit->variable_names.size()));
      unit->variable_names.push_back(m.key);
      unit->variable_initial.push_back(m.value);
    }
  } else if (!vars.is_null()) {
    add_error(pointer_append(base, "variables"), "variables must be an object of names and initial values");
  }
}

std::vector<Value> UnitCompiler::outputs_of(const Value& step, bool* known) const {
  *known = true;
  const Value& action = step["action"];
  if (!action.is_string()) {
    *known = false;
    return {};
  }
  const std::string_view name = action.as_string();
  std::vector<Value> names;
  auto from_params = [&](const Value& decl) {
    std::vector<Param> params;
    if (!read_params(decl, "", "", &params, nullptr)) *known = false;
    for (const Param& p : params) names.push_back(Value(std::string_view(p.name)));
  };
  ActionKind kind;
  if (const ActionSignature* sig = find_builtin(name, &kind)) {
    if (kind == ActionKind::kCallSubflow) {
      const Value& id = step["inputs"]["subflow"];
      const Definition* sub = id.is_string() ? builder_->definitions().find(UnitType::kSubflow, id.as_string()) : nullptr;
      if (!sub) {
        *known = false;
        return {};
      }
      from_params(sub->source["outputs"]);
      return names;
    }
    for (const Param& p : sig->outputs) names.push_back(Value(std::string_view(p.name)));
    return names;
  }
  if (const Definition* a = builder_->definitions().find(UnitType::kAction, name)) {
    from_params(a->source["outputs"]);
    return names;
  }
  uint32_t index;
  if (const ActionSignature* sig = builder_->actions() ? builder_->actions()->find(name, &index) : nullptr) {
    for (const Param& p : sig->outputs) names.push_back(Value(std::string_view(p.name)));
    return names;
  }
  *known = false;
  return {};
}

void UnitCompiler::collect_step(const Value& step, const std::string& pointer, int depth) {
  if (!step.is_object()) return;
  if (step.contains("action")) {
    const size_t order = collect_order_++;
    const Value& id = step["id"];
    if (id.is_string() && valid_id(id.as_string())) {
      const std::string key(id.as_string());
      if (steps_.count(key)) {
        add_error(pointer_append(pointer, "id"), "duplicate step id '" + key + "'");
      } else {
        StepRef ref;
        ref.slot = static_cast<uint32_t>(unit_->step_ids.size());
        ref.order = order;
        ref.action = step["action"].is_string() ? std::string(step["action"].as_string()) : "";
        ref.outputs = outputs_of(step, &ref.outputs_known);
        steps_.emplace(key, std::move(ref));
        unit_->step_ids.push_back(id);
      }
    }
    // Without a "variables" declaration, set_variables declares what it sets; with one,
    // setting an undeclared name is an error (compile_assignments).
    if (step["action"] == Value("set_variables") && !def_.source["variables"].is_object()) {
      for (const auto& m : step["inputs"]["values"].members()) {
        const std::string name(m.key.as_string());
        if (variables_.count(name) || !valid_id(name)) continue;
        variables_.emplace(name, static_cast<uint32_t>(unit_->variable_names.size()));
        unit_->variable_names.push_back(m.key);
        unit_->variable_initial.push_back(Value());
      }
    }
    return;
  }
  auto sub = [&](std::string_view key) {
    if (const Value* v = step.find(key)) collect(*v, pointer_append(pointer, key), depth + 1);
  };
  sub("then");
  if (const Value* elifs = step.find("else_if"); elifs && elifs->is_array()) {
    size_t i = 0;
    for (const Value& e : elifs->items()) {
      const std::string p = pointer_append(pointer_append(pointer, "else_if"), i++);
      if (const Value* then = e.find("then")) collect(*then, pointer_append(p, "then"), depth + 1);
    }
  }
  sub("else");
  sub("do");
  sub("try");
  sub("catch");
}

void UnitCompiler::collect(const Value& steps, const std::string& pointer, int depth) {
  if (!steps.is_array() || depth > 64) return;
  size_t i = 0;
  for (const Value& step : steps.items()) collect_step(step, pointer_append(pointer, i++), depth);
}

void UnitCompiler::compile(PlanUnit* unit) {
  unit_ = unit;
  unit->type = def_.type;
  unit->id = def_.id;
  unit->fingerprint = def_.fingerprint;
  read_header(unit);

  const std::string actions_ptr = pointer_append(def_.pointer, "actions");
  const Value& actions = def_.source["actions"];
  if (!actions.is_array()) {
    add_error(actions.is_null() ? def_.pointer : actions_ptr,
              actions.is_null() ? std::string("a definition needs \"actions\" (an array of steps)")
                                : std::string("actions must be an array of steps"));
    return;
  }
  collect(actions, actions_ptr, 0);
  unit->body = compile_block(actions, actions_ptr, "", false);
  unit->action_count = action_count_;
  unit->recorded_steps = steps_in_one_pass(unit->body);
  unit->variable_name_list = Value::array(std::span<const Value>(unit->variable_names));
  unit->variable_initial_list = Value::array(std::span<const Value>(unit->variable_initial));

  const CompileOptions& opt = builder_->options();
  if (opt.enforce_action_limits) {
    if (action_count_ > opt.max_actions) {
      add_error(actions_ptr, def_.label() + " has " + std::to_string(action_count_) +
                                 " action steps, more than max_actions (" + std::to_string(opt.max_actions) + ")");
    }
    if (def_.type == UnitType::kAction && action_count_ > opt.max_action_steps) {
      add_error(actions_ptr, def_.label() + " has " + std::to_string(action_count_) +
                                 " steps, more than max_action_steps (" + std::to_string(opt.max_action_steps) + ")");
    }
  }
}

Block UnitCompiler::compile_block(const Value& steps, const std::string& pointer, const std::string& path_prefix,
                                  bool in_loop) {
  Block block;
  if (!steps.is_array()) {
    add_error(pointer, "must be an array of steps");
    return block;
  }
  if (loops_.size() + static_cast<size_t>(catch_depth_) > 64) {
    add_error(pointer, "flow logic nested more than 64 levels deep");
    return block;
  }
  block.reserve(steps.size());
  size_t i = 0;
  for (const Value& step : steps.items()) {
    if (++step_count_ > builder_->options().max_steps) {
      add_error(pointer, "more than " + std::to_string(builder_->options().max_steps) + " steps in one definition");
      break;
    }
    std::string path = path_prefix.empty() ? std::to_string(i + 1) : path_prefix + "." + std::to_string(i + 1);
    block.push_back(compile_node(step, pointer_append(pointer, i), path, in_loop));
    ++i;
  }
  return block;
}

Node UnitCompiler::compile_node(const Value& step, const std::string& pointer, const std::string& path,
                                bool in_loop) {
  Node node;
  node.path = Value(std::string_view(path));
  node.in_loop = in_loop;
  node.op = EndNode{};
  if (!step.is_object()) {
    add_error(pointer, "a step must be an object, not " + std::string(type_name(step.type())));
    return node;
  }
  if (step.contains("action")) {
    node.op = compile_action(step, pointer);
  } else if (step.contains("if")) {
    node.op = compile_if(step, pointer, path, in_loop);
  } else if (step.contains("for_each")) {
    node.op = compile_for_each(step, pointer, path);
  } else if (step.contains("try")) {
    node.op = compile_try(step, pointer, path, in_loop);
  } else if (step.contains("end")) {
    check_keys(step, {"end", "name", "description"}, pointer);
    if (step["end"] != Value(true)) add_error(pointer_append(pointer, "end"), "end must be true");
  } else {
    add_error(pointer, "a step needs \"action\", or is flow logic (\"if\", \"for_each\", \"try\", \"end\")");
  }
  switch (node.op.index()) {
    case 0: {
      const ActionStep& a = std::get<ActionStep>(node.op);
      node.action = Value(std::string_view(a.action));
      if (!a.id.empty()) node.id = Value(std::string_view(a.id));
      break;
    }
    case 1: node.action = Value("if"); break;
    case 2: node.action = Value("for_each"); break;
    case 3: node.action = Value("try"); break;
    default: node.action = Value("end"); break;
  }
  return node;
}

IfNode UnitCompiler::compile_if(const Value& step, const std::string& pointer, const std::string& path,
                                bool in_loop) {
  check_keys(step, {"if", "then", "else_if", "else", "name", "description"}, pointer);
  IfNode node;
  const FieldMode field = def_.type == UnitType::kFlow && trigger_ && trigger_->type == TriggerType::kRecord
                              ? FieldMode::kTriggerRecord
                              : FieldMode::kNotAllowed;
  current_order_ = order_;
  node.conditions.push_back(expr_.compile_condition(step["if"], pointer_append(pointer, "if"), field, false));
  if (!step.contains("then")) add_error(pointer, "if needs \"then\" (an array of steps)");
  node.branches.push_back(compile_block(step.contains("then") ? step["then"] : Value::empty_array(),
                                        pointer_append(pointer, "then"), path + ".then", in_loop));
  if (const Value* elifs = step.find("else_if")) {
    const std::string ep = pointer_append(pointer, "else_if");
    if (!elifs->is_array()) add_error(ep, "else_if must be an array of {\"if\", \"then\"}");
    size_t i = 0;
    for (const Value& e : elifs->items()) {
      const std::string p = pointer_append(ep, i);
      ++i;
      if (!e.is_object() || !e.contains("if") || !e.contains("then")) {
        add_error(p, "each else_if needs \"if\" and \"then\"");
        continue;
      }
      check_keys(e, {"if", "then"}, p);
      current_order_ = order_;
      node.conditions.push_back(expr_.compile_condition(e["if"], pointer_append(p, "if"), field, false));
      node.branches.push_back(
          compile_block(e["then"], pointer_append(p, "then"), path + ".else_if." + std::to_string(i) + ".then", in_loop));
    }
  }
  if (const Value* els = step.find("else")) {
    node.has_else = true;
    node.else_block = compile_block(*els, pointer_append(pointer, "else"), path + ".else", in_loop);
  }
  return node;
}

ForEachNode UnitCompiler::compile_for_each(const Value& step, const std::string& pointer, const std::string& path) {
  check_keys(step, {"for_each", "as", "do", "name", "description"}, pointer);
  ForEachNode node;
  current_order_ = order_;
  node.items = expr_.compile_template(step["for_each"], pointer_append(pointer, "for_each"));
  if (node.items.is_constant() && !node.items.constant.is_array()) {
    add_error(pointer_append(pointer, "for_each"), "for_each needs an array or a pill such as \"{{steps.list.records}}\"");
  }
  std::string as = "item";
  if (const Value* a = step.find("as")) {
    if (!a->is_string() || !valid_id(a->as_string()) || a->as_string().find('.') != std::string_view::npos) {
      add_error(pointer_append(pointer, "as"), "as must be a name of letters, digits, '_' or '-'");
    } else if (reserved_root(a->as_string()) && a->as_string() != "item") {
      add_error(pointer_append(pointer, "as"), "'" + std::string(a->as_string()) + "' is a reserved pill root");
    } else {
      as = std::string(a->as_string());
    }
  }
  node.as = Value(std::string_view(as));
  node.depth = static_cast<uint32_t>(loops_.size());
  unit_->max_loop_depth = std::max(unit_->max_loop_depth, node.depth + 1);
  loops_.push_back(Loop{as, node.depth});
  if (!step.contains("do")) add_error(pointer, "for_each needs \"do\" (an array of steps)");
  node.body = compile_block(step.contains("do") ? step["do"] : Value::empty_array(), pointer_append(pointer, "do"),
                            path + ".do", true);
  loops_.pop_back();
  return node;
}

TryNode UnitCompiler::compile_try(const Value& step, const std::string& pointer, const std::string& path,
                                  bool in_loop) {
  check_keys(step, {"try", "catch", "name", "description"}, pointer);
  TryNode node;
  node.body = compile_block(step["try"], pointer_append(pointer, "try"), path + ".try", in_loop);
  ++catch_depth_;
  node.handler = compile_block(step.contains("catch") ? step["catch"] : Value::empty_array(),
                               pointer_append(pointer, "catch"), path + ".catch", in_loop);
  --catch_depth_;
  return node;
}

bool UnitCompiler::has_previous(PillRoot root) const {
  if (root != PillRoot::kTriggerRecord || !trigger_ || def_.type != UnitType::kFlow) return false;
  return trigger_->type == TriggerType::kRecord &&
         (trigger_->when == RecordWhen::kUpdated || trigger_->when == RecordWhen::kCreatedOrUpdated);
}

std::string UnitCompiler::resolve(const std::vector<std::string>& path, Pill* pill) const {
  const std::string& root = path[0];
  auto no_more = [&](size_t n) -> std::string {
    return path.size() > n ? "'" + root + "." + path[1] + "' has no members" : "";
  };
  if (root == "trigger") {
    if (def_.type != UnitType::kFlow) {
      return "a " + std::string(unit_type_name(def_.type)) + " has no trigger; pass what it needs as inputs";
    }
    if (path.size() < 2) return "trigger needs a part: record, previous, table, operation, sys_id, time, payload, type";
    const std::string& part = path[1];
    const bool record = trigger_ && trigger_->type == TriggerType::kRecord;
    auto need_record = [&]() -> std::string {
      return record ? "" : "trigger." + part + " exists only for record triggers, and this flow's trigger is " +
                               std::string(trigger_type_name(trigger_ ? trigger_->type : TriggerType::kApi));
    };
    std::string problem;
    if (part == "record") {
      pill->root = PillRoot::kTriggerRecord;
      problem = need_record();
    } else if (part == "previous") {
      pill->root = PillRoot::kTriggerPrevious;
      problem = need_record();
      if (problem.empty() && !has_previous(PillRoot::kTriggerRecord)) {
        problem = "trigger.previous exists only for updated and created_or_updated triggers, not " +
                  std::string(when_name(trigger_->when));
      }
    } else if (part == "table" || part == "operation" || part == "sys_id") {
      pill->root = part == "table" ? PillRoot::kTriggerTable
                                   : (part == "operation" ? PillRoot::kTriggerOperation : PillRoot::kTriggerSysId);
      problem = need_record();
      if (problem.empty()) problem = no_more(2);
    } else if (part == "time") {
      pill->root = PillRoot::kTriggerTime;
      problem = no_more(2);
    } else if (part == "type") {
      pill->root = PillRoot::kTriggerType;
      problem = no_more(2);
    } else if (part == "payload") {
      pill->root = PillRoot::kTriggerPayload;
      if (!trigger_ || trigger_->type != TriggerType::kEvent) {
        problem = "trigger.payload exists only for event triggers";
      }
    } else {
      problem = "unknown trigger part '" + part + "' (record, previous, table, operation, sys_id, time, payload, type)";
    }
    pill->path = ExprCompiler::make_path(path, 2);
    return problem;
  }
  if (root == "steps") {
    if (path.size() < 3) return "a step pill is steps.ID.OUTPUT";
    // A step id may hold dots ("s.1"). The path's first part is the id, unless that does
    // not fit (no such step, not readable here, no such output) and a longer run of parts
    // does: the shortest that fits, so that a pill that read a step before still reads it.
    // When none fits, the errors are the first part's, or the longest id's that exists.
    auto fits = [&](const StepRef& ref, const std::string& output) {
      if (ref.order >= current_order_) return false;
      if (output == "error" || !ref.outputs_known) return true;
      return std::any_of(ref.outputs.begin(), ref.outputs.end(), [&](const Value& o) { return o.as_string() == output; });
    };
    auto it = steps_.find(path[1]);
    size_t out_at = 2;  // the output's part of the path
    if (it == steps_.end() || !fits(it->second, path[2])) {
      std::string id = path[1];
      auto longest = steps_.end();
      size_t longest_out_at = 0;
      for (size_t k = 2; k + 1 < path.size(); ++k) {
        id += '.';
        id += path[k];
        auto longer = steps_.find(id);
        if (longer == steps_.end()) continue;
        if (fits(longer->second, path[k + 1])) {
          it = longer;
          out_at = k + 1;
          break;
        }
        longest = longer;
        longest_out_at = k + 1;
      }
      if (it == steps_.end() && longest != steps_.end()) {
        it = longest;
        out_at = longest_out_at;
      }
    }
    if (it == steps_.end()) return "unknown step '" + path[1] + "'";
    const std::string& step_id = it->first;
    const std::string& output = path[out_at];
    const StepRef& ref = it->second;
    if (ref.order == current_order_) return "step '" + step_id + "' cannot read its own outputs";
    if (ref.order > current_order_) return "step '" + step_id + "' comes later; a pill can only read earlier steps";
    pill->root = PillRoot::kStep;
    pill->slot = ref.slot;
    pill->name = Value(std::string_view(output));
    pill->path = ExprCompiler::make_path(path, out_at + 1);
    if (output == "error") {
      pill->index = static_cast<uint32_t>(ref.outputs.size());
      return "";
    }
    if (!ref.outputs_known) return "";  // the step's own error says why
    for (uint32_t i = 0; i < ref.outputs.size(); ++i) {
      if (ref.outputs[i].as_string() == output) {
        pill->index = i;
        return "";
      }
    }
    return "step '" + step_id + "' (" + ref.action + ") has no output '" + output + "'; its outputs: " +
           join_names(ref.outputs) + ", error";
  }
  if (root == "vars") {
    if (path.size() < 2) return "a variable pill is vars.NAME";
    auto it = variables_.find(path[1]);
    if (it == variables_.end()) {
      return "unknown variable '" + path[1] + "' (declare it in \"variables\" or set it with set_variables)";
    }
    pill->root = PillRoot::kVariable;
    pill->slot = it->second;
    pill->path = ExprCompiler::make_path(path, 2);
    return "";
  }
  if (root == "inputs") {
    if (path.size() < 2) return "an input pill is inputs.NAME";
    pill->root = PillRoot::kInput;
    pill->name = Value(std::string_view(path[1]));
    pill->path = ExprCompiler::make_path(path, 2);
    auto it = inputs_.find(path[1]);
    if (it != inputs_.end()) {
      pill->slot = it->second;
      return "";
    }
    if (unit_->declares_inputs) return "unknown input '" + path[1] + "'";
    if (def_.type == UnitType::kFlow && trigger_ && trigger_->type == TriggerType::kApi) {
      pill->by_name = true;
      return "";
    }
    return def_.type == UnitType::kFlow ? "only API flows have inputs" : "unknown input '" + path[1] + "'";
  }
  if (root == "context" || root == "flow") {
    if (path.size() != 2 || path[1] != "id") return "the only part of " + root + " is " + root + ".id";
    pill->root = root == "context" ? PillRoot::kContextId : PillRoot::kFlowId;
    return "";
  }
  if (root == "error") {
    if (catch_depth_ == 0) return "error is only available inside a catch block";
    if (path.size() != 2 || (path[1] != "message" && path[1] != "step")) return "error has message and step";
    pill->root = path[1] == "message" ? PillRoot::kErrorMessage : PillRoot::kErrorStep;
    return "";
  }
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it) {
    if (root == it->as || (root == "item" && it == loops_.rbegin())) {
      pill->root = PillRoot::kItem;
      pill->slot = it->depth;
      pill->path = ExprCompiler::make_path(path, 1);
      return "";
    }
  }
  if (root == "item") return "item is only available inside for_each";
  return "unknown data pill root '" + root + "' (trigger, steps, vars, inputs, item, context, flow, error)";
}

}  // namespace flowrt
