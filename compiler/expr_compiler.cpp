#include "compiler/expr_compiler.h"

#include <algorithm>

#include "plans/value_json.h"

namespace flowrt {

ExprCompiler::ExprCompiler(const PillResolver& resolver, std::string file, Diagnostics* diags,
                           size_t max_template_bytes)
    : resolver_(resolver), file_(std::move(file)), diags_(diags), max_template_bytes_(max_template_bytes) {}

std::vector<PathSegment> ExprCompiler::make_path(const std::vector<std::string>& segments, size_t from) {
  std::vector<PathSegment> path;
  for (size_t i = from; i < segments.size(); ++i) {
    PathSegment seg;
    seg.key = Value(std::string_view(segments[i]));
    bool digits = !segments[i].empty() && segments[i].size() < 10;
    for (char c : segments[i]) digits = digits && c >= '0' && c <= '9';
    if (digits) seg.index = std::stoll(segments[i]);
    path.push_back(std::move(seg));
  }
  return path;
}

bool ExprCompiler::compile_transform(const TransformSyntax& t, const PillSyntax& pill, const std::string& pointer,
                                     Transform* out) {
  const std::string where = " in {{" + pill.text + "}}";
  if (!parse_transform(t.name, &out->kind)) {
    diags_->add(file_, pointer,
                "unknown transform '" + t.name + "'" + where +
                    " (transforms: add, sub, mul, div, mod, upper, lower, trim, length, default, json, not)");
    return false;
  }
  if (!transform_takes_argument(out->kind)) {
    if (t.has_argument) {
      diags_->add(file_, pointer, "transform '" + t.name + "' takes no argument" + where);
      return false;
    }
    return true;
  }
  if (!t.has_argument || t.argument.empty()) {
    diags_->add(file_, pointer, "transform '" + t.name + "' needs an argument, as in '" + t.name + ": 1'" + where);
    return false;
  }
  // The argument is a JSON literal, a data pill ("add: item"), or else a bare string.
  Value arg;
  JsonParseError ignored;
  if (!parse_json(t.argument, &arg, &ignored)) {
    Result<PillSyntax> syntax = parse_pill(t.argument);
    if (syntax && syntax->transforms.empty()) {
      Pill p;
      p.text = syntax->text;
      const std::string problem = resolver_.resolve(syntax->path, &p);
      if (problem.empty()) {
        out->argument_pill = std::make_shared<const Pill>(std::move(p));
        return true;
      }
      if (problem.rfind("unknown data pill root", 0) != 0 || out->kind != TransformKind::kDefault) {
        diags_->add(file_, pointer, "transform '" + t.name + "' argument " + t.argument + ": " + problem + where);
        return false;
      }
    } else if (out->kind != TransformKind::kDefault) {
      diags_->add(file_, pointer, "transform '" + t.name + "' needs a number argument, not " + t.argument + where);
      return false;
    }
    arg = Value(std::string_view(t.argument));
  }
  if (out->kind != TransformKind::kDefault && !arg.is_number()) {
    diags_->add(file_, pointer, "transform '" + t.name + "' needs a number argument, not " + shown_value(arg) + where);
    return false;
  }
  out->argument = std::move(arg);
  return true;
}

bool ExprCompiler::compile_pill(const PillSyntax& syntax, const std::string& pointer, Pill* out) {
  out->text = syntax.text;
  std::string problem = resolver_.resolve(syntax.path, out);
  if (!problem.empty()) {
    diags_->add(file_, pointer, "{{" + syntax.text + "}}: " + problem);
    return false;
  }
  bool ok = true;
  for (const TransformSyntax& t : syntax.transforms) {
    Transform tr;
    if (compile_transform(t, syntax, pointer, &tr)) out->transforms.push_back(std::move(tr));
    else ok = false;
  }
  return ok;
}

Template ExprCompiler::compile_string(const Value& v, const std::string& pointer) {
  Template t;
  t.kind = Template::Kind::kConstant;
  t.constant = v;
  const std::string_view s = v.as_string();
  if (!has_pill_marker(s)) return t;
  if (s.size() > max_template_bytes_) {
    diags_->add(file_, pointer,
                "template of " + std::to_string(s.size()) + " bytes is longer than the limit of " +
                    std::to_string(max_template_bytes_) + " bytes (max_template_bytes)");
    return t;
  }
  Result<std::vector<TemplatePiece>> pieces = split_template(s);
  if (!pieces) {
    diags_->add(file_, pointer, pieces.message());
    return t;
  }
  if (std::none_of(pieces->begin(), pieces->end(), [](const TemplatePiece& p) { return p.is_pill; })) {
    // Escaped braces only: constant text.
    std::string text;
    for (const TemplatePiece& piece : *pieces) text += piece.text;
    t.constant = Value(std::string_view(text));
    return t;
  }
  if (pieces->size() == 1 && pieces->front().is_pill) {
    Pill pill;
    if (!compile_pill(pieces->front().pill, pointer, &pill)) return t;
    t.kind = Template::Kind::kPill;
    t.constant = Value();
    t.pills.push_back(std::move(pill));
    return t;
  }
  Template text;
  text.kind = Template::Kind::kText;
  std::string literal;
  bool ok = true;
  for (const TemplatePiece& piece : *pieces) {
    if (!piece.is_pill) {
      literal += piece.text;
      continue;
    }
    Pill pill;
    ok = compile_pill(piece.pill, pointer, &pill) && ok;
    text.text_parts.push_back(Value(std::string_view(literal)));
    literal.clear();
    text.pills.push_back(std::move(pill));
  }
  text.text_parts.push_back(Value(std::string_view(literal)));
  return ok ? text : t;
}

namespace {

Template constant_template(Value v) {
  Template t;
  t.kind = Template::Kind::kConstant;
  t.constant = std::move(v);
  return t;
}

}  // namespace

Template ExprCompiler::compile_template(const Value& v, const std::string& pointer) {
  Template t;
  switch (v.type()) {
    case ValueType::kString: return compile_string(v, pointer);
    case ValueType::kArray: {
      bool dynamic = false, unescaped = false;
      size_t i = 0;
      for (const Value& item : v.items()) {
        Template c = compile_template(item, pointer_append(pointer, i++));
        dynamic = dynamic || !c.is_constant();
        unescaped = unescaped || (c.is_constant() && !(c.constant == item));
        t.children.push_back(std::move(c));
      }
      if (!dynamic && unescaped) {
        std::vector<Value> items;
        for (const Template& c : t.children) items.push_back(c.constant);
        return constant_template(Value::array(std::move(items)));
      }
      if (!dynamic) break;
      t.kind = Template::Kind::kArray;
      return t;
    }
    case ValueType::kObject: {
      bool dynamic = false, unescaped = false;
      std::vector<Value> keys;
      for (const auto& m : v.members()) {
        Template c = compile_template(m.value, pointer_append(pointer, m.key.as_string()));
        dynamic = dynamic || !c.is_constant();
        unescaped = unescaped || (c.is_constant() && !(c.constant == m.value));
        keys.push_back(m.key);
        t.children.push_back(std::move(c));
      }
      if (!dynamic && unescaped) {
        std::vector<Member> members;
        for (size_t k = 0; k < keys.size(); ++k) members.push_back(Member{keys[k], t.children[k].constant});
        return constant_template(Value::object(std::move(members)));
      }
      if (!dynamic) break;
      t.keys = intern_shape(keys);
      t.kind = Template::Kind::kObject;
      return t;
    }
    default: break;
  }
  // No pill anywhere inside (and no escaped braces): share the definition's own value.
  return constant_template(v);
}

Condition ExprCompiler::compile_condition(const Value& v, const std::string& pointer, FieldMode field_mode,
                                          bool field_has_previous) {
  Condition c;
  if (!v.is_object()) {
    diags_->add(file_, pointer, "a condition must be an object, not " + std::string(type_name(v.type())));
    return c;
  }
  auto list = [&](std::string_view key, Condition::Kind kind) {
    c.kind = kind;
    const Value& items = v[key];
    const std::string p = pointer_append(pointer, key);
    if (!items.is_array() || items.size() == 0) {
      diags_->add(file_, p, std::string(key) + " must be a non-empty array of conditions");
      return;
    }
    size_t i = 0;
    for (const Value& item : items.items()) {
      c.children.push_back(compile_condition(item, pointer_append(p, i++), field_mode, field_has_previous));
    }
  };
  auto only_key = [&](std::string_view key) {
    if (v.size() != 1) diags_->add(file_, pointer, "a condition with \"" + std::string(key) + "\" takes no other keys");
  };
  if (v.contains("all")) {
    only_key("all");
    list("all", Condition::Kind::kAll);
    return c;
  }
  if (v.contains("any")) {
    only_key("any");
    list("any", Condition::Kind::kAny);
    return c;
  }
  if (v.contains("not")) {
    only_key("not");
    c.kind = Condition::Kind::kNot;
    c.children.push_back(compile_condition(v["not"], pointer_append(pointer, "not"), field_mode, field_has_previous));
    return c;
  }

  c.kind = Condition::Kind::kCompare;
  for (const auto& m : v.members()) {
    std::string_view k = m.key.as_string();
    if (k != "field" && k != "pill" && k != "op" && k != "value") {
      diags_->add(file_, pointer_append(pointer, k),
                  "unknown condition key '" + std::string(k) + "' (expected field or pill, op, value; or all, any, not)");
    }
  }
  const Value& field = v["field"];
  const Value& pill = v["pill"];
  bool subject_ok = true;
  bool subject_has_previous = false;
  if (!field.is_null() && !pill.is_null()) {
    diags_->add(file_, pointer, "a condition takes \"field\" or \"pill\", not both");
    subject_ok = false;
  } else if (!field.is_null()) {
    if (!field.is_string() || field.as_string().empty()) {
      diags_->add(file_, pointer_append(pointer, "field"), "field must be a non-empty string");
      subject_ok = false;
    } else if (field_mode == FieldMode::kNotAllowed) {
      diags_->add(file_, pointer_append(pointer, "field"),
                  "\"field\" needs a record under test, and there is none here; use \"pill\"");
      subject_ok = false;
    } else {
      std::vector<std::string> segments;
      std::string_view f = field.as_string();
      size_t start = 0;
      while (true) {
        size_t dot = f.find('.', start);
        segments.emplace_back(f.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
      }
      if (field_mode == FieldMode::kRecordUnderTest) {
        c.subject.root = PillRoot::kField;
        c.subject.path = make_path(segments, 0);
        c.subject.text = std::string(f);
        subject_has_previous = field_has_previous;
      } else {
        std::vector<std::string> full{"trigger", "record"};
        full.insert(full.end(), segments.begin(), segments.end());
        std::string problem = resolver_.resolve(full, &c.subject);
        c.subject.text = "trigger.record." + std::string(f);
        if (!problem.empty()) {
          diags_->add(file_, pointer_append(pointer, "field"), "field '" + std::string(f) + "': " + problem);
          subject_ok = false;
        }
        subject_has_previous = resolver_.has_previous(PillRoot::kTriggerRecord);
      }
    }
  } else if (!pill.is_null()) {
    const std::string p = pointer_append(pointer, "pill");
    if (!pill.is_string()) {
      diags_->add(file_, p, "pill must be a string such as \"steps.find.found\"");
      subject_ok = false;
    } else {
      // Accept the path with or without braces.
      std::string_view text = pill.as_string();
      if (text.starts_with("{{") && text.ends_with("}}") && text.size() >= 4) text = text.substr(2, text.size() - 4);
      Result<PillSyntax> syntax = parse_pill(text);
      if (!syntax) {
        diags_->add(file_, p, syntax.message());
        subject_ok = false;
      } else if (!compile_pill(*syntax, p, &c.subject)) {
        subject_ok = false;
      } else {
        subject_has_previous = c.subject.root == PillRoot::kTriggerRecord && resolver_.has_previous(PillRoot::kTriggerRecord);
      }
    }
  } else {
    diags_->add(file_, pointer, "a condition needs \"field\" or \"pill\" (or all, any, not)");
    subject_ok = false;
  }

  const Value& op = v["op"];
  if (!op.is_string() || !parse_op(op.as_string(), &c.op)) {
    diags_->add(file_, pointer_append(pointer, "op"),
                (op.is_null() ? std::string("a condition needs \"op\"") : "unknown op " + shown_value(op)) +
                    " (ops: eq ne lt le gt ge in not_in contains starts_with ends_with is_empty is_not_empty "
                    "changes changes_to changes_from)");
    return c;
  }
  if (op_needs_previous(c.op) && subject_ok && !subject_has_previous) {
    diags_->add(file_, pointer_append(pointer, "op"),
                std::string(op_name(c.op)) +
                    " compares with the previous value, which exists only in update triggers, waits and "
                    "trigger.record of flows with an update trigger");
  }
  const Value* value = v.find("value");
  if (op_takes_value(c.op)) {
    if (!value) {
      diags_->add(file_, pointer, "op " + std::string(op_name(c.op)) + " needs a \"value\"");
      return c;
    }
    c.value = compile_template(*value, pointer_append(pointer, "value"));
    const bool ordering = c.op == CompareOp::kLt || c.op == CompareOp::kLe || c.op == CompareOp::kGt ||
                          c.op == CompareOp::kGe;
    // An array, object or null can never be ordered, so such a comparison is always false.
    const Value& lit = c.value.constant;
    if (ordering && c.value.is_constant() && (lit.is_null() || lit.is_array() || lit.is_object())) {
      diags_->add(file_, pointer_append(pointer, "value"),
                  "op " + std::string(op_name(c.op)) + " compares numbers or strings, not " +
                      std::string(type_name(c.value.constant.type())));
    }
    if ((c.op == CompareOp::kIn || c.op == CompareOp::kNotIn) && c.value.is_constant() &&
        !c.value.constant.is_array() && !c.value.constant.is_string()) {
      diags_->add(file_, pointer_append(pointer, "value"),
                  "op " + std::string(op_name(c.op)) + " needs an array (or a comma-separated string)");
    }
  } else if (value) {
    diags_->add(file_, pointer_append(pointer, "value"), "op " + std::string(op_name(c.op)) + " takes no value");
  }
  return c;
}

}  // namespace flowrt
