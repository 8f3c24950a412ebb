#include <algorithm>
#include <cstring>

#include "plans/eval.h"

namespace flowrt {
namespace {

bool same_kind(const Value& a, const Value& b) {
  return (a.is_number() && b.is_number()) || a.type() == b.type();
}

// Three-way order of two values of the same kind (numbers or strings); false when unordered.
bool order(const Value& a, const Value& b, int* out) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) {
      *out = a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    } else {
      double x = a.as_double(), y = b.as_double();
      if (x != x || y != y) return false;  // NaN
      *out = x < y ? -1 : (x > y ? 1 : 0);
    }
    return true;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    *out = c < 0 ? -1 : (c > 0 ? 1 : 0);
    return true;
  }
  if (a.is_bool() && b.is_bool()) {
    *out = static_cast<int>(a.as_bool()) - static_cast<int>(b.as_bool());
    return true;
  }
  return false;
}

// "in" accepts an array, or a string holding a comma-separated list.
bool member_of(const Value& subject, const Value& list) {
  if (list.is_array()) {
    const auto items = list.items();
    return std::any_of(items.begin(), items.end(), [&](const Value& v) { return v == subject; });
  }
  if (list.is_string()) {
    std::string text;
    append_text(subject, text);
    std::string_view rest = list.as_string();
    while (true) {
      size_t comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      if (!subject.is_null() && (subject.is_string() || subject.is_number()) && part == text) return true;
      if (comma == std::string_view::npos) return false;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

// Whether `needle` occurs in `hay`, in time linear in their lengths (glibc's memmem; a
// string_view's find compares at every position, so a long needle of one repeated byte
// against a long text took their product).
bool has_substring(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  return ::memmem(hay.data(), hay.size(), needle.data(), needle.size()) != nullptr;
}

bool contains(const Value& subject, const Value& value) {
  if (subject.is_string() && value.is_string()) return has_substring(subject.as_string(), value.as_string());
  if (subject.is_array()) {
    const auto items = subject.items();
    return std::any_of(items.begin(), items.end(), [&](const Value& v) { return v == value; });
  }
  if (subject.is_object() && value.is_string()) return subject.contains(value.as_string());
  return false;
}

}  // namespace

bool is_empty_value(const Value& v) {
  switch (v.type()) {
    case ValueType::kNull: return true;
    case ValueType::kString: return v.as_string().empty();
    case ValueType::kArray:
    case ValueType::kObject: return v.size() == 0;
    default: return false;
  }
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case ValueType::kBool: return v.as_bool();
    case ValueType::kInt: return v.as_int() != 0;
    case ValueType::kDouble: return v.as_double() != 0.0;
    default: return !is_empty_value(v);
  }
}

bool compare(CompareOp op, const Value& subject, const Value& value, const Value* previous) {
  int ord = 0;
  switch (op) {
    case CompareOp::kEq: return subject == value;
    case CompareOp::kNe: return !(subject == value);
    case CompareOp::kLt: return same_kind(subject, value) && order(subject, value, &ord) && ord < 0;
    case CompareOp::kLe: return same_kind(subject, value) && order(subject, value, &ord) && ord <= 0;
    case CompareOp::kGt: return same_kind(subject, value) && order(subject, value, &ord) && ord > 0;
    case CompareOp::kGe: return same_kind(subject, value) && order(subject, value, &ord) && ord >= 0;
    case CompareOp::kIn: return member_of(subject, value);
    case CompareOp::kNotIn: return (value.is_array() || value.is_string()) && !member_of(subject, value);
    case CompareOp::kContains: return contains(subject, value);
    case CompareOp::kStartsWith:
      return subject.is_string() && value.is_string() && subject.as_string().starts_with(value.as_string());
    case CompareOp::kEndsWith:
      return subject.is_string() && value.is_string() && subject.as_string().ends_with(value.as_string());
    case CompareOp::kIsEmpty: return is_empty_value(subject);
    case CompareOp::kIsNotEmpty: return !is_empty_value(subject);
    case CompareOp::kChanges: {
      const Value& before = previous ? *previous : null_value();
      return !(before == subject);
    }
    case CompareOp::kChangesTo: {
      const Value& before = previous ? *previous : null_value();
      return !(before == subject) && subject == value;
    }
    case CompareOp::kChangesFrom: {
      const Value& before = previous ? *previous : null_value();
      return !(before == subject) && before == value;
    }
  }
  return false;
}

}  // namespace flowrt
