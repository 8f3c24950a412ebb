// parse_json checked against nlohmann::json, a strict and independent parser: what both
// make of one text. Used by tests/plans/json_parse_test.cpp (a seeded share) and
// fuzz/json_fuzz.cpp (the long budget). Header-only; needs nlohmann_json.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "plans/value_json.h"

namespace flowrt::json_reference {

// The Value nlohmann's parse stands for, with flowrt's number rule: integers that fit int64
// are ints, every other number a double.
inline Value from_reference(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value();
    case nlohmann::json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.get<long long>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.get<unsigned long long>();
      return u <= static_cast<unsigned long long>(INT64_MAX) ? Value(static_cast<long long>(u))
                                                              : Value(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::json::value_t::string: return Value(std::string_view(j.get_ref<const std::string&>()));
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      for (const auto& item : j) items.push_back(from_reference(item));
      return Value::array(std::move(items));
    }
    default: {
      std::vector<Member> members;
      for (const auto& [k, v] : j.items()) members.push_back(Member{Value(std::string_view(k)), from_reference(v)});
      return Value::object(std::move(members));
    }
  }
}

// The same value with the same number kinds (an int is not a double of the same value).
inline bool same(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (a.is_double()) return a.as_double() == b.as_double();
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same(a.at(i), b.at(i))) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& m : a.members()) {
      const Value* other = b.find(m.key.as_string());
      if (!other || !same(m.value, *other)) return false;
    }
    return true;
  }
  return a == b;
}

// What the two parsers made of `text`; `agree` when both refused it, or both accepted it
// with the same value (for a text with a NUL byte, when parse_json refused it).
struct Verdict {
  bool ours_ok = false;
  bool reference_ok = false;
  bool agree = false;
  std::string ours;       // the value as JSON, or the error
  std::string reference;  // the same for nlohmann
};

inline Verdict compare(std::string_view text) {
  Verdict v;
  Value ours;
  JsonParseError e;
  v.ours_ok = parse_json(text, &ours, &e);
  v.ours = v.ours_ok ? ours.to_json() : e.describe();
  nlohmann::json ref;
  try {
    ref = nlohmann::json::parse(text);
    v.reference_ok = true;
    v.reference = ref.dump();
  } catch (const std::exception& ex) {
    v.reference = ex.what();
  }
  if (text.find('\0') != std::string_view::npos) {
    // nlohmann takes a NUL byte for the end of its input; JSON has no place for one
    // (outside a string it is not whitespace, inside it must be escaped): refused.
    v.agree = !v.ours_ok;
    return v;
  }
  if (text.starts_with("\xEF\xBB\xBF")) {
    // nlohmann skips a leading UTF-8 byte order mark; JSON (RFC 8259) does not allow one,
    // and flowrt refuses it, naming it (JsonParseTest.AByteOrderMark_IsRefusedNamingIt).
    v.agree = !v.ours_ok;
    return v;
  }
  v.agree = v.ours_ok == v.reference_ok && (!v.ours_ok || same(ours, from_reference(ref)));
  return v;
}

}  // namespace flowrt::json_reference
