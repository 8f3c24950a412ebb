#include "plans/eval.h"

#include <charconv>

#include "plans/value_json.h"

namespace flowrt {
namespace {

const Value* step_path(const Value* v, const std::vector<PathSegment>& path, size_t from = 0) {
  for (size_t i = from; i < path.size() && v; ++i) {
    const PathSegment& seg = path[i];
    if (v->is_array() && seg.index >= 0) {
      auto items = v->items();
      v = static_cast<size_t>(seg.index) < items.size() ? &items[static_cast<size_t>(seg.index)] : nullptr;
    } else {
      v = v->find(seg.key.as_string());
    }
  }
  return v;
}

const Value* at_slot(std::span<const Value> values, uint32_t slot) {
  return slot < values.size() ? &values[slot] : nullptr;
}

// Output `index` of a step's outputs object, checking the name (outputs are produced in
// declared order, so the index is almost always right).
const Value* step_output(const Value* outputs, uint32_t index, const Value& name) {
  if (!outputs) return nullptr;
  auto members = outputs->members();
  if (index < members.size() && members[index].key.as_string() == name.as_string()) return &members[index].value;
  return outputs->find(name.as_string());
}

}  // namespace

Value resolve_pill(const Pill& pill, const Scope& s) {
  const TriggerData* t = s.trigger;
  const Value* base = nullptr;
  Value scratch;
  switch (pill.root) {
    case PillRoot::kTriggerRecord: base = t ? &t->record : nullptr; break;
    case PillRoot::kTriggerPrevious: base = t && t->has_previous ? &t->previous : nullptr; break;
    case PillRoot::kTriggerTable: base = t ? &t->table : nullptr; break;
    case PillRoot::kTriggerSysId: base = t ? &t->sys_id : nullptr; break;
    case PillRoot::kTriggerPayload: base = t ? &t->payload : nullptr; break;
    case PillRoot::kTriggerOperation:
      if (t && t->type == TriggerType::kRecord) scratch = Value(operation_name(t->operation));
      base = &scratch;
      break;
    case PillRoot::kTriggerType:
      if (t) scratch = Value(trigger_type_name(t->type));
      base = &scratch;
      break;
    case PillRoot::kTriggerTime:
      if (t) scratch = Value(format_time(t->time));
      base = &scratch;
      break;
    case PillRoot::kStep: {
      const Value* outputs = at_slot(s.steps, pill.slot);
      base = step_output(outputs, pill.index, pill.name);
      break;
    }
    case PillRoot::kVariable: base = at_slot(s.variables, pill.slot); break;
    case PillRoot::kInput:
      base = pill.by_name ? (s.input_object ? s.input_object->find(pill.name.as_string()) : nullptr)
                          : at_slot(s.inputs, pill.slot);
      break;
    case PillRoot::kItem: base = at_slot(s.items, pill.slot); break;
    case PillRoot::kContextId: base = s.context_id; break;
    case PillRoot::kFlowId: base = s.flow_id; break;
    case PillRoot::kErrorMessage: base = s.error ? s.error->find("message") : nullptr; break;
    case PillRoot::kErrorStep: base = s.error ? s.error->find("step") : nullptr; break;
    case PillRoot::kField: base = s.record; break;
  }
  const Value* v = step_path(base, pill.path);
  return v ? *v : Value();
}

namespace {

Result<Value> apply_transforms(const Pill& pill, Value v, const Scope& scope) {
  for (const Transform& t : pill.transforms) {
    Result<Value> next = apply_transform(t, v, pill.text, &scope);
    if (!next) return next;
    v = std::move(next).value();
  }
  return v;
}

}  // namespace

Result<Value> evaluate_pill(const Pill& pill, const Scope& scope) {
  if (pill.transforms.empty()) return resolve_pill(pill, scope);
  return apply_transforms(pill, resolve_pill(pill, scope), scope);
}

void append_text(const Value& v, std::string& out) {
  switch (v.type()) {
    case ValueType::kNull: return;
    case ValueType::kString: out.append(v.as_string()); return;
    default: write_json(v, out); return;
  }
}

Result<Value> render(const Template& t, const Scope& scope) {
  switch (t.kind) {
    case Template::Kind::kAbsent: return Value();
    case Template::Kind::kConstant: return t.constant;
    case Template::Kind::kPill: return evaluate_pill(t.pills.front(), scope);
    case Template::Kind::kText: {
      // Rendered into a reused per-thread buffer: the only allocation is the result.
      thread_local std::string out;
      out.clear();
      for (size_t i = 0; i < t.pills.size(); ++i) {
        out.append(t.text_parts[i].as_string());
        Result<Value> v = evaluate_pill(t.pills[i], scope);
        if (!v) return v;
        append_text(*v, out);
      }
      out.append(t.text_parts.back().as_string());
      return Value(std::string_view(out));
    }
    case Template::Kind::kArray: {
      ArrayBuilder items(t.children.size());
      for (const Template& c : t.children) {
        Result<Value> v = render(c, scope);
        if (!v) return v;
        items.add(std::move(v).value());
      }
      return items.build();
    }
    case Template::Kind::kObject: {
      ObjectBuilder members(t.keys);  // keys come from a JSON object: unique
      for (const Template& child : t.children) {
        Result<Value> v = render(child, scope);
        if (!v) return v;
        members.add_value(std::move(v).value());
      }
      return members.build();
    }
  }
  return Value();
}

Result<bool> evaluate(const Condition& c, const Scope& scope) {
  switch (c.kind) {
    case Condition::Kind::kTrue: return true;
    case Condition::Kind::kAll:
      for (const Condition& child : c.children) {
        Result<bool> r = evaluate(child, scope);
        if (!r || !*r) return r;
      }
      return true;
    case Condition::Kind::kAny:
      for (const Condition& child : c.children) {
        Result<bool> r = evaluate(child, scope);
        if (!r || *r) return r;
      }
      return false;
    case Condition::Kind::kNot: {
      Result<bool> r = evaluate(c.children.front(), scope);
      if (!r) return r;
      return !*r;
    }
    case Condition::Kind::kCompare: break;
  }
  Result<Value> subject = evaluate_pill(c.subject, scope);
  if (!subject) return subject.error();
  Value value;
  if (!c.value.absent()) {
    Result<Value> v = render(c.value, scope);
    if (!v) return v.error();
    value = std::move(v).value();
  }
  if (!op_needs_previous(c.op)) return compare(c.op, *subject, value, nullptr);
  // The previous value of the same path: the record under test's previous version, or
  // trigger.previous for a trigger.record pill.
  Value previous;
  const Value* prev_base = nullptr;
  if (c.subject.root == PillRoot::kField) {
    prev_base = scope.previous;
  } else if (c.subject.root == PillRoot::kTriggerRecord && scope.trigger && scope.trigger->has_previous) {
    prev_base = &scope.trigger->previous;
  }
  if (prev_base) {
    // Both roots address the record itself, so the same path applies to its previous version.
    const Value* pv = step_path(prev_base, c.subject.path);
    Result<Value> transformed = apply_transforms(c.subject, pv ? *pv : Value(), scope);
    if (!transformed) return transformed.error();
    previous = std::move(transformed).value();
  }
  return compare(c.op, *subject, value, &previous);
}

Result<Condition> bind_condition(const Condition& c, const Scope& scope) {
  Condition out;
  out.kind = c.kind;
  if (c.kind != Condition::Kind::kCompare) {
    for (const Condition& child : c.children) {
      Result<Condition> b = bind_condition(child, scope);
      if (!b) return b;
      out.children.push_back(std::move(b).value());
    }
    return out;
  }
  if (c.subject.root != PillRoot::kField) {
    Result<bool> now = evaluate(c, scope);
    if (!now) return now.error();
    out.kind = *now ? Condition::Kind::kTrue : Condition::Kind::kAny;  // "any of none" is false
    return out;
  }
  out.subject = c.subject;
  out.op = c.op;
  if (!c.value.absent()) {
    Result<Value> v = render(c.value, scope);
    if (!v) return v.error();
    out.value.kind = Template::Kind::kConstant;
    out.value.constant = std::move(v).value();
  }
  return out;
}

}  // namespace flowrt
