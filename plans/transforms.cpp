#include <utf8proc.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "plans/eval.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

// `s` with each letter mapped to its upper (or lower) case by Unicode's simple case
// mapping (one code point for one: ß becomes ẞ, not "SS"); bytes that are not UTF-8 are
// kept as they are.
std::string map_case(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {  // not UTF-8: the byte as it is
      out.push_back(static_cast<char>(*p));
      ++p;
      --left;
      continue;
    }
    const utf8proc_int32_t mapped = upper ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
    utf8proc_uint8_t buf[4];
    const utf8proc_ssize_t m = utf8proc_encode_char(mapped, buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(m));
    p += n;
    left -= n;
  }
  return out;
}

Error type_error(const std::string& pill, std::string_view transform, std::string_view wanted, const Value& got) {
  return Error{"{{" + pill + "}}: " + std::string(transform) + " needs " + std::string(wanted) + ", got " +
               std::string(type_name(got.type()))};
}

// Integer arithmetic stays integral unless it overflows; then it falls back to doubles.
Result<Value> arithmetic(TransformKind k, const Value& a, const Value& b, const std::string& pill) {
  const std::string_view name = transform_name(k);
  if (!a.is_number()) return type_error(pill, name, "a number", a);
  if (!b.is_number()) return type_error(pill, name, "a number argument", b);
  if ((k == TransformKind::kDiv || k == TransformKind::kMod) && b.as_double() == 0.0) {
    return Error{"{{" + pill + "}}: " + std::string(name) + " by zero"};
  }
  if (a.is_int() && b.is_int()) {
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    switch (k) {
      case TransformKind::kAdd:
        if (!__builtin_add_overflow(x, y, &r)) return Value(static_cast<long long>(r));
        break;
      case TransformKind::kSub:
        if (!__builtin_sub_overflow(x, y, &r)) return Value(static_cast<long long>(r));
        break;
      case TransformKind::kMul:
        if (!__builtin_mul_overflow(x, y, &r)) return Value(static_cast<long long>(r));
        break;
      case TransformKind::kDiv:
        if (y != -1 && x % y == 0) return Value(static_cast<long long>(x / y));
        break;
      case TransformKind::kMod:
        if (y != -1) return Value(static_cast<long long>(x % y));
        return Value(0);
      default: break;
    }
  }
  const double x = a.as_double(), y = b.as_double();
  switch (k) {
    case TransformKind::kAdd: return Value(x + y);
    case TransformKind::kSub: return Value(x - y);
    case TransformKind::kMul: return Value(x * y);
    case TransformKind::kDiv: return Value(x / y);
    case TransformKind::kMod: return Value(std::fmod(x, y));
    default: return Value();
  }
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

Result<Value> apply_transform(const Transform& t, const Value& v, const std::string& pill, const Scope* scope) {
  if (t.argument_pill) {
    // A pill argument is read now, then applied as a literal one would be.
    Transform literal{t.kind, scope ? resolve_pill(*t.argument_pill, *scope) : Value(), nullptr};
    return apply_transform(literal, v, pill, nullptr);
  }
  switch (t.kind) {
    case TransformKind::kAdd:
    case TransformKind::kSub:
    case TransformKind::kMul:
    case TransformKind::kDiv:
    case TransformKind::kMod: return arithmetic(t.kind, v, t.argument, pill);
    case TransformKind::kUpper:
    case TransformKind::kLower: {
      if (!v.is_string()) return type_error(pill, transform_name(t.kind), "a string", v);
      return Value(std::string_view(map_case(v.as_string(), t.kind == TransformKind::kUpper)));
    }
    case TransformKind::kTrim: {
      if (!v.is_string()) return type_error(pill, "trim", "a string", v);
      std::string_view s = v.as_string();
      const char* ws = " \t\r\n\f\v";
      size_t b = s.find_first_not_of(ws);
      if (b == std::string_view::npos) return Value("");
      size_t e = s.find_last_not_of(ws);
      return Value(s.substr(b, e - b + 1));
    }
    case TransformKind::kLength:
      if (v.is_string()) return Value(static_cast<long long>(utf8_length(v.as_string())));
      if (v.is_array() || v.is_object()) return Value(static_cast<long long>(v.size()));
      if (v.is_null()) return Value(0);
      return type_error(pill, "length", "a string, array or object", v);
    case TransformKind::kDefault:
      return v.is_null() || (v.is_string() && v.as_string().empty()) ? t.argument : v;
    case TransformKind::kJson: {
      const size_t limit = scope ? scope->max_value_bytes : Scope{}.max_value_bytes;
      if (bound_value(v, limit, SIZE_MAX) == ValueBound::kTooLarge) {
        return Error{"{{" + pill + "}}: json would make a text larger than the limit of " + std::to_string(limit) +
                     " bytes (max_value_bytes)"};
      }
      return Value(std::string_view(v.to_json()));
    }
    case TransformKind::kNot: return Value(!truthy(v));
  }
  return v;
}

}  // namespace flowrt
