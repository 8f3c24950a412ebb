#include "compiler/input_checks.h"

#include "plans/time.h"

namespace flowrt {
namespace {

bool is_integer(const Value& v) {
  return v.is_int() || (v.is_double() && v.as_double() == static_cast<double>(v.as_int()));
}

std::string wrong(std::string_view name, std::string_view wanted, const Value& v) {
  return "input '" + std::string(name) + "' must be " + std::string(wanted) + ", got " + shown_value(v);
}

}  // namespace

std::string_view wanted_type(ParamType type) {
  switch (type) {
    case ParamType::kString: return "a string";
    case ParamType::kInteger: return "an integer";
    case ParamType::kNumber: return "a number";
    case ParamType::kBoolean: return "true or false";
    case ParamType::kObject: return "an object";
    case ParamType::kArray: return "an array";
    case ParamType::kRecord: return "a record (an object)";
    case ParamType::kAny: return "any value";
  }
  return "?";
}

std::string check_input_value(std::string_view name, ParamType type, InputCheck check, const Value& v) {
  if (v.is_null()) return "";
  switch (check) {
    case InputCheck::kNone: break;
    case InputCheck::kNonEmptyString:
      if (!v.is_string() || v.as_string().empty()) return wrong(name, "a non-empty string", v);
      return "";
    case InputCheck::kLogLevel:
      if (v != Value("info") && v != Value("warn") && v != Value("error")) return wrong(name, "info, warn or error", v);
      return "";
    case InputCheck::kPositiveInteger:
      if (!is_integer(v) || v.as_int() < 1) return wrong(name, "an integer of at least 1", v);
      return "";
    case InputCheck::kNonNegativeInteger:
      if (!is_integer(v) || v.as_int() < 0) return wrong(name, "an integer of at least 0", v);
      return "";
    case InputCheck::kDuration:
    case InputCheck::kPositiveDuration: {
      if (v.is_number() && v.as_double() < 0) {
        return wrong(name, check == InputCheck::kPositiveDuration ? "a duration longer than 0ms" : "a duration of at least 0ms", v);
      }
      Result<DurationMs> d = parse_duration(v);
      if (!d) return "input '" + std::string(name) + "': " + d.message();
      if (check == InputCheck::kPositiveDuration && *d <= 0) return wrong(name, "a duration longer than 0ms", v);
      return "";
    }
  }
  if (!value_fits(v, type)) return wrong(name, wanted_type(type), v);
  return "";
}

}  // namespace flowrt
