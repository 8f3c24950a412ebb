// JSON writing: Value -> compact or indented text (parsing is json_parse.cpp).
#include "plans/value_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>
#include <vector>

namespace flowrt {

void write_json_string(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the current run of characters that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

namespace {

void write_number(const Value& v, std::string& out) {
  char buf[32];
  if (v.is_int()) {
    auto r = std::to_chars(buf, buf + sizeof buf, v.as_int());
    out.append(buf, r.ptr);
    return;
  }
  const double d = v.as_double();
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
  out.append(text);
  // Keep a double recognisable as such when it prints as an integer ("2.0", not "2").
  if (text.find_first_of(".eE") == std::string_view::npos && text.find("inf") == std::string_view::npos) out += ".0";
}

void write_value(const Value& v, std::string& out, int indent, int depth) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out.push_back('\n');
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.type()) {
    case ValueType::kNull: out += "null"; return;
    case ValueType::kBool: out += v.as_bool() ? "true" : "false"; return;
    case ValueType::kInt:
    case ValueType::kDouble: write_number(v, out); return;
    case ValueType::kString: write_json_string(v.as_string(), out); return;
    case ValueType::kArray: {
      out.push_back('[');
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) out.push_back(',');
        first = false;
        newline(depth + 1);
        write_value(item, out, indent, depth + 1);
      }
      if (!first) newline(depth);
      out.push_back(']');
      return;
    }
    case ValueType::kObject: {
      out.push_back('{');
      bool first = true;
      for (const auto& m : v.members()) {
        if (!first) out.push_back(',');
        first = false;
        newline(depth + 1);
        write_json_string(m.key.as_string(), out);
        out.push_back(':');
        if (indent >= 0) out.push_back(' ');
        write_value(m.value, out, indent, depth + 1);
      }
      if (!first) newline(depth);
      out.push_back('}');
      return;
    }
  }
}

}  // namespace

void write_json(const Value& v, std::string& out) { write_value(v, out, -1, 0); }

namespace {

// Appends `v`'s compact JSON to `out` until `out` holds more than `limit` bytes; false
// once it does (the text is then cut somewhere past `limit`).
bool append_bounded(const Value& v, std::string& out, size_t limit) {
  if (out.size() > limit) return false;
  // A long string or key: only its start, a few bytes past the limit (so that a character
  // it splits lies past where the text is cut).
  auto string = [&](std::string_view s) {
    const size_t room = limit - out.size() + 8;
    write_json_string(s.substr(0, std::min(s.size(), room)), out);
  };
  if (v.is_string()) {
    string(v.as_string());
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (const Value& item : v.items()) {
      if (!first) out += ',';
      first = false;
      if (!append_bounded(item, out, limit)) return false;
    }
    out += ']';
  } else if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& m : v.members()) {
      if (!first) out += ',';
      first = false;
      string(m.key.as_string());
      out += ':';
      if (!append_bounded(m.value, out, limit)) return false;
    }
    out += '}';
  } else {
    write_json(v, out);
  }
  return out.size() <= limit;
}

}  // namespace

std::string shown_value(const Value& v, size_t max_bytes) {
  std::string text;
  if (append_bounded(v, text, max_bytes)) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  text.resize(cut);
  return text + "...";
}

std::string to_pretty_json(const Value& v) {
  std::string out;
  write_value(v, out, 2, 0);
  return out;
}

void PrintTo(const Value& v, std::ostream* os) {
  constexpr size_t kCompactWidth = 72;  // what fits on one line of a test's failure message
  std::string compact = v.to_json();
  *os << (compact.size() <= kCompactWidth ? compact : to_pretty_json(v));
}

namespace {

// The compact JSON length of `v` added to *bytes, until it passes `max_bytes` or a container
// lies deeper than `depth_left` allows.
ValueBound measure(const Value& v, size_t max_bytes, size_t depth_left, size_t* bytes) {
  switch (v.type()) {
    case ValueType::kNull: *bytes += 4; break;
    case ValueType::kBool: *bytes += v.as_bool() ? 4 : 5; break;
    case ValueType::kInt:
    case ValueType::kDouble: *bytes += 24; break;  // at most, as written
    case ValueType::kString: *bytes += v.as_string().size() + 2; break;
    case ValueType::kArray:
      if (depth_left == 0) return ValueBound::kTooDeep;
      *bytes += v.size() + 1;
      for (const Value& item : v.items()) {
        if (ValueBound b = measure(item, max_bytes, depth_left - 1, bytes); b != ValueBound::kWithin) return b;
      }
      break;
    case ValueType::kObject:
      if (depth_left == 0) return ValueBound::kTooDeep;
      *bytes += v.size() + 1;
      for (const auto& m : v.members()) {
        *bytes += m.key.as_string().size() + 3;
        if (ValueBound b = measure(m.value, max_bytes, depth_left - 1, bytes); b != ValueBound::kWithin) return b;
      }
      break;
  }
  return *bytes > max_bytes ? ValueBound::kTooLarge : ValueBound::kWithin;
}

}  // namespace

ValueBound bound_value(const Value& v, size_t max_bytes, size_t max_depth) {
  size_t bytes = 0;
  return measure(v, max_bytes, max_depth, &bytes);
}

}  // namespace flowrt
