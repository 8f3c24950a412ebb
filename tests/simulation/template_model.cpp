#include "tests/simulation/template_model.h"

#include <cctype>
#include <charconv>
#include <vector>

#include "plans/value_json.h"

namespace flowrt::sim {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  bool quoted = false;
  std::string cur;
  for (char c : s) {
    if (c == '"') quoted = !quoted;
    if (c == sep && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

const Value& descend(const Value& base, const std::vector<std::string>& parts, size_t from) {
  const Value* v = &base;
  static const Value kNull;
  for (size_t i = from; i < parts.size(); ++i) {
    if (v->is_object()) {
      v = &(*v)[parts[i]];
    } else if (v->is_array()) {
      size_t idx = 0;
      auto [p, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), idx);
      if (ec != std::errc()) return kNull;
      v = &v->at(idx);
    } else {
      return kNull;
    }
  }
  return *v;
}

Result<Value> resolve(const std::string& path, const ModelScope& s) {
  const std::vector<std::string> parts = split(path, '.');
  const std::string& root = parts[0];
  if (root == "flow" && parts.size() == 2 && parts[1] == "id") return s.flow_id;
  if (root == "context" && parts.size() == 2 && parts[1] == "id") return s.context_id;
  if (root == "trigger") return descend(s.trigger, parts, 1);
  if (root == "vars") return descend(s.vars, parts, 1);
  if (root == "inputs") return descend(s.inputs, parts, 1);
  if (root == "error") return descend(s.error, parts, 1);
  if (root == "item" || (!s.item_name.empty() && root == s.item_name)) return descend(s.item, parts, 1);
  if (root == "steps" && parts.size() >= 2) {
    if (!s.steps) return Value();
    auto it = s.steps->find(parts[1]);
    if (it == s.steps->end()) return Value();
    return descend(it->second, parts, 2);
  }
  return Error{"the model does not know pill '" + path + "'"};
}

void append_text(const Value& v, std::string& out) {
  switch (v.type()) {
    case ValueType::kNull: return;
    case ValueType::kString: out += v.as_string(); return;
    default: out += v.to_json(); return;
  }
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case ValueType::kNull: return false;
    case ValueType::kBool: return v.as_bool();
    case ValueType::kInt: return v.as_int() != 0;
    case ValueType::kDouble: return v.as_double() != 0;
    case ValueType::kString: return !v.as_string().empty();
    default: return v.size() > 0;
  }
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

Result<Value> arithmetic(const std::string& name, const Value& a, const Value& b, const std::string& pill) {
  if (!a.is_number() || !b.is_number()) return Error{"transform " + name + " of a non-number in {{" + pill + "}}"};
  if (a.is_int() && b.is_int()) {
    const long long x = a.as_int(), y = b.as_int();
    long long r = 0;
    if (name == "add" && !__builtin_add_overflow(x, y, &r)) return Value(r);
    if (name == "sub" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
    if (name == "mul" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
    if (name == "div" && y != 0 && x % y == 0) return Value(x / y);
    if (name == "mod" && y != 0) return Value(x % y);
  }
  const double x = a.as_double(), y = b.as_double();
  if (name == "add") return Value(x + y);
  if (name == "sub") return Value(x - y);
  if (name == "mul") return Value(x * y);
  if (name == "div") return Value(x / y);
  return Error{"the model cannot compute " + name};
}

Result<Value> argument(const std::string& text, const ModelScope& s) {
  Result<Value> literal = parse_json(text);
  if (literal) return literal;
  return resolve(text, s);
}

Result<Value> apply(const std::string& transform, Value v, const ModelScope& s, const std::string& pill) {
  const size_t colon = transform.find(':');
  const std::string name = trim(transform.substr(0, colon));
  Value arg;
  if (colon != std::string::npos) {
    Result<Value> a = argument(trim(transform.substr(colon + 1)), s);
    if (!a) return a;
    arg = *a;
  }
  if (name == "add" || name == "sub" || name == "mul" || name == "div" || name == "mod") return arithmetic(name, v, arg, pill);
  if (name == "upper" || name == "lower" || name == "trim") {
    if (!v.is_string()) return Error{"transform " + name + " of a non-string in {{" + pill + "}}"};
    std::string out(v.as_string());
    if (name == "trim") return Value(std::string_view(trim(out)));
    for (char& c : out) c = static_cast<char>(name == "upper" ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return Value(std::string_view(out));
  }
  if (name == "length") {
    if (v.is_null()) return Value(0);
    if (v.is_string()) return Value(static_cast<long long>(utf8_length(v.as_string())));
    if (v.is_array() || v.is_object()) return Value(static_cast<long long>(v.size()));
    return Error{"transform length of a number in {{" + pill + "}}"};
  }
  if (name == "default") return v.is_null() || (v.is_string() && v.as_string().empty()) ? arg : v;
  if (name == "not") return Value(!truthy(v));
  if (name == "json") return Value(std::string_view(v.to_json()));
  return Error{"the model does not know transform '" + name + "'"};
}

Result<Value> pill(const std::string& inner, const ModelScope& s) {
  const std::vector<std::string> parts = split(inner, '|');
  const std::string path = trim(parts[0]);
  Result<Value> v = resolve(path, s);
  if (!v) return v;
  Value cur = *v;
  for (size_t i = 1; i < parts.size(); ++i) {
    Result<Value> next = apply(trim(parts[i]), cur, s, path);
    if (!next) return next;
    cur = *next;
  }
  return cur;
}

Result<Value> render_string(std::string_view text, const ModelScope& s) {
  const size_t open = text.find("{{");
  if (open == std::string_view::npos) return Value(text);
  if (open == 0 && text.ends_with("}}") && text.find("{{", 2) == std::string_view::npos) {
    return pill(std::string(text.substr(2, text.size() - 4)), s);
  }
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t a = text.find("{{", pos);
    if (a == std::string_view::npos) {
      out += text.substr(pos);
      break;
    }
    const size_t b = text.find("}}", a);
    if (b == std::string_view::npos) return Error{"unclosed pill"};
    out += text.substr(pos, a - pos);
    Result<Value> v = pill(std::string(text.substr(a + 2, b - a - 2)), s);
    if (!v) return v;
    append_text(*v, out);
    pos = b + 2;
  }
  return Value(std::string_view(out));
}

bool same(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() == b.as_double();
  if (a.type() != b.type()) return false;
  return a == b;
}

}  // namespace

bool model_compare(std::string_view op, const Value& subject, const Value& value, const Value& previous) {
  if (op == "eq") return same(subject, value);
  if (op == "ne") return !same(subject, value);
  if (op == "changes") return !same(previous, subject);
  if (op == "changes_to") return !same(previous, subject) && same(subject, value);
  if (op == "changes_from") return !same(previous, subject) && same(previous, value);
  if (op == "in" || op == "not_in") {
    bool found = false;
    if (value.is_array()) {
      for (const Value& v : value.items()) found = found || same(subject, v);
    } else if (value.is_string()) {
      std::string text;
      append_text(subject, text);
      for (const std::string& part : split(value.as_string(), ',')) found = found || (!subject.is_null() && trim(part) == text);
    } else {
      return false;
    }
    return op == "in" ? found : !found;
  }
  if (op == "starts_with") return subject.is_string() && value.is_string() && subject.as_string().starts_with(value.as_string());
  if (op == "ends_with") return subject.is_string() && value.is_string() && subject.as_string().ends_with(value.as_string());
  if (op == "contains") {
    if (subject.is_string() && value.is_string()) return subject.as_string().find(value.as_string()) != std::string_view::npos;
    if (subject.is_array()) {
      for (const Value& v : subject.items()) {
        if (same(v, value)) return true;
      }
    }
    return false;
  }
  if (op == "is_empty") return subject.is_null() || (subject.is_string() && subject.as_string().empty()) ||
                                ((subject.is_array() || subject.is_object()) && subject.size() == 0);
  if (op == "is_not_empty") return !model_compare("is_empty", subject, value, previous);
  int order = 0;
  if (subject.is_number() && value.is_number()) {
    const double a = subject.as_double(), b = value.as_double();
    order = a < b ? -1 : a > b ? 1 : 0;
  } else if (subject.is_string() && value.is_string()) {
    const int c = subject.as_string().compare(value.as_string());
    order = c < 0 ? -1 : c > 0 ? 1 : 0;
  } else {
    return false;
  }
  if (op == "lt") return order < 0;
  if (op == "le") return order <= 0;
  if (op == "gt") return order > 0;
  if (op == "ge") return order >= 0;
  return false;
}

Result<Value> model_render(const Value& v, const ModelScope& scope) {
  if (v.is_string()) return render_string(v.as_string(), scope);
  if (v.is_array()) {
    std::vector<Value> items;
    for (const Value& i : v.items()) {
      Result<Value> r = model_render(i, scope);
      if (!r) return r;
      items.push_back(*r);
    }
    return Value::array(std::move(items));
  }
  if (v.is_object()) {
    std::vector<Member> members;
    for (const auto& m : v.members()) {
      Result<Value> r = model_render(m.value, scope);
      if (!r) return r;
      members.push_back(Member{m.key, *r});
    }
    return Value::object(std::move(members));
  }
  return v;
}

Result<bool> model_condition(const Value& c, const ModelScope& s) {
  if (c.contains("all") || c.contains("any")) {
    const bool all = c.contains("all");
    for (const Value& sub : c[all ? "all" : "any"].items()) {
      Result<bool> r = model_condition(sub, s);
      if (!r) return r;
      if (*r != all) return !all;
    }
    return all;
  }
  if (c.contains("not")) {
    Result<bool> r = model_condition(c["not"], s);
    if (!r) return r;
    return !*r;
  }
  Result<Value> value = model_render(c["value"], s);
  if (!value) return value.error();
  Value subject, previous;
  if (c["field"].is_string()) {
    subject = s.trigger["record"][c["field"].as_string()];
    if (s.has_previous) previous = s.trigger["previous"][c["field"].as_string()];
  } else {
    Result<Value> v = resolve(std::string(c["pill"].as_string()), s);
    if (!v) return v.error();
    subject = *v;
  }
  return model_compare(c["op"].as_string(), subject, *value, previous);
}

}  // namespace flowrt::sim
