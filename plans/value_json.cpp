// JSON writing: Value -> compact or indented text (parsing is json_parse.cpp).
#include "plans/value_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>
#include <span>
#include <vector>

namespace flowrt {

void write_json_string(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run = 0;  // start of the current run of characters that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    if (c >= 0x80) {
      // Well-formed UTF-8 goes as it is. Any other byte (a string that did not come from
      // JSON: a file name, an OS message, a C++ caller's bytes) goes as U+FFFD, so that the
      // text is JSON, which a store reads back and any client parses, whatever it held.
      if (const size_t n = utf8_sequence_length(s.data() + i, s.data() + s.size()); n > 0) {
        i += n - 1;
        continue;
      }
      out.append(s.data() + run, i - run);
      run = i + 1;
      out += "\xEF\xBF\xBD";
      continue;
    }
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

// The walks below recurse while a value nests at most this deep (the usual value: a record,
// a context) and go on from an explicit stack of their own below that, so that a value built
// in C++ nested a million deep takes no more of the thread's stack than one nested 64 deep.
constexpr size_t kJsonRecursionDepth = 64;

// One array or object part way through a walk: its children and the next one to visit.
struct JsonWalkFrame {
  std::span<const Value> items;  // an array's
  MemberRange members;           // an object's
  size_t next = 0;
  bool object = false;

  explicit JsonWalkFrame(const Value& v)
      : items(v.items()), members(v.members()), object(v.is_object()) {}
  size_t size() const { return object ? members.size() : items.size(); }
};

void write_newline(std::string& out, int indent, size_t depth) {
  if (indent < 0) return;
  out.push_back('\n');
  out.append(static_cast<size_t>(indent) * depth, ' ');
}

void write_scalar(const Value& v, std::string& out) {
  switch (v.type()) {
    case ValueType::kNull: out += "null"; return;
    case ValueType::kBool: out += v.as_bool() ? "true" : "false"; return;
    case ValueType::kInt:
    case ValueType::kDouble: write_number(v, out); return;
    case ValueType::kString: write_json_string(v.as_string(), out); return;
    default: return;
  }
}

// write_value's text of `v`, an array or object at `depth`, from an explicit stack: the
// same bytes, in constant stack space however deep `v` nests.
void write_nested(const Value& v, std::string& out, int indent, size_t depth) {
  std::vector<JsonWalkFrame> stack;
  const Value* next = &v;
  while (next != nullptr) {
    const Value& cur = *next;
    next = nullptr;
    if (cur.is_array() || cur.is_object()) {
      out.push_back(cur.is_object() ? '{' : '[');
      if (cur.size() == 0) out.push_back(cur.is_object() ? '}' : ']');
      else stack.emplace_back(cur);
    } else {
      write_scalar(cur, out);
    }
    // The next value to write, closing the arrays and objects that are done.
    while (!stack.empty()) {
      JsonWalkFrame& f = stack.back();
      const size_t child_depth = depth + stack.size();
      if (f.next < f.size()) {
        if (f.next > 0) out.push_back(',');
        write_newline(out, indent, child_depth);
        if (f.object) {
          const MemberRef m = f.members[f.next];
          write_json_string(m.key.as_string(), out);
          out.push_back(':');
          if (indent >= 0) out.push_back(' ');
          next = &m.value;
        } else {
          next = &f.items[f.next];
        }
        ++f.next;
        break;
      }
      write_newline(out, indent, child_depth - 1);
      out.push_back(f.object ? '}' : ']');
      stack.pop_back();
    }
  }
}

void write_value(const Value& v, std::string& out, int indent, size_t depth) {
  auto newline = [&](size_t d) { write_newline(out, indent, d); };
  switch (v.type()) {
    case ValueType::kNull:
    case ValueType::kBool:
    case ValueType::kInt:
    case ValueType::kDouble:
    case ValueType::kString: write_scalar(v, out); return;
    case ValueType::kArray: {
      if (depth >= kJsonRecursionDepth) return write_nested(v, out, indent, depth);
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
      if (depth >= kJsonRecursionDepth) return write_nested(v, out, indent, depth);
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
// once it does (the text is then cut somewhere past `limit`). From an explicit stack: a
// large `limit` lets it write as deep as `v` nests.
bool append_bounded(const Value& v, std::string& out, size_t limit) {
  // A long string or key: only its start, a few bytes past the limit (so that a character
  // it splits lies past where the text is cut).
  auto string = [&](std::string_view s) {
    const size_t room = limit - out.size() + 8;
    write_json_string(s.substr(0, std::min(s.size(), room)), out);
  };
  std::vector<JsonWalkFrame> stack;
  const Value* next = &v;
  while (next != nullptr) {
    if (out.size() > limit) return false;
    const Value& cur = *next;
    next = nullptr;
    if (cur.is_string()) {
      string(cur.as_string());
    } else if (cur.is_array() || cur.is_object()) {
      out += cur.is_object() ? '{' : '[';
      if (cur.size() == 0) out += cur.is_object() ? '}' : ']';
      else stack.emplace_back(cur);
    } else {
      write_scalar(cur, out);
    }
    while (!stack.empty()) {
      if (out.size() > limit) return false;
      JsonWalkFrame& f = stack.back();
      if (f.next < f.size()) {
        if (f.next > 0) out += ',';
        if (f.object) {
          const MemberRef m = f.members[f.next];
          string(m.key.as_string());
          out += ':';
          next = &m.value;
        } else {
          next = &f.items[f.next];
        }
        ++f.next;
        break;
      }
      out += f.object ? '}' : ']';
      stack.pop_back();
    }
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
  // Indenting a value that nests deep writes the square of its depth in spaces (a million
  // deep: a terabyte): such a value is shown compact.
  constexpr size_t kMaxIndentedDepth = 64;
  std::string compact = v.to_json();
  const bool indent = compact.size() > kCompactWidth &&
                      bound_value(v, SIZE_MAX, kMaxIndentedDepth) != ValueBound::kTooDeep;
  *os << (indent ? to_pretty_json(v) : compact);
}

namespace {

// The compact JSON length of `v` added to *bytes, until it passes `max_bytes` or a container
// lies deeper than `depth_left` allows.
ValueBound measure(const Value& v, size_t max_bytes, size_t depth_left, size_t* bytes, size_t depth);

// measure() of `v`, an array or object, from an explicit stack: the same answer, found at
// the same point of the walk, in constant stack space however deep `v` nests.
ValueBound measure_nested(const Value& v, size_t max_bytes, size_t depth_left, size_t* bytes) {
  std::vector<JsonWalkFrame> stack;
  const Value* next = &v;
  while (next != nullptr) {
    const Value& cur = *next;
    next = nullptr;
    if (cur.is_array() || cur.is_object()) {
      if (depth_left - stack.size() == 0) return ValueBound::kTooDeep;
      *bytes += cur.size() + 1;
      if (cur.size() == 0) {
        if (*bytes > max_bytes) return ValueBound::kTooLarge;
      } else {
        stack.emplace_back(cur);
      }
    } else if (ValueBound b = measure(cur, max_bytes, 0, bytes, 0); b != ValueBound::kWithin) {
      return b;
    }
    while (!stack.empty()) {
      JsonWalkFrame& f = stack.back();
      if (f.next < f.size()) {
        if (f.object) {
          const MemberRef m = f.members[f.next];
          *bytes += m.key.as_string().size() + 3;
          next = &m.value;
        } else {
          next = &f.items[f.next];
        }
        ++f.next;
        break;
      }
      stack.pop_back();
      if (*bytes > max_bytes) return ValueBound::kTooLarge;
    }
  }
  return ValueBound::kWithin;
}

// `depth` is how deep `v` lies in the value first measured (for the switch to an explicit
// stack).
ValueBound measure(const Value& v, size_t max_bytes, size_t depth_left, size_t* bytes, size_t depth) {
  switch (v.type()) {
    case ValueType::kNull: *bytes += 4; break;
    case ValueType::kBool: *bytes += v.as_bool() ? 4 : 5; break;
    case ValueType::kInt:
    case ValueType::kDouble: *bytes += 24; break;  // at most, as written
    case ValueType::kString: *bytes += v.as_string().size() + 2; break;
    case ValueType::kArray:
      if (depth_left == 0) return ValueBound::kTooDeep;
      if (depth >= kJsonRecursionDepth) return measure_nested(v, max_bytes, depth_left, bytes);
      *bytes += v.size() + 1;
      for (const Value& item : v.items()) {
        if (ValueBound b = measure(item, max_bytes, depth_left - 1, bytes, depth + 1); b != ValueBound::kWithin) return b;
      }
      break;
    case ValueType::kObject:
      if (depth_left == 0) return ValueBound::kTooDeep;
      if (depth >= kJsonRecursionDepth) return measure_nested(v, max_bytes, depth_left, bytes);
      *bytes += v.size() + 1;
      for (const auto& m : v.members()) {
        *bytes += m.key.as_string().size() + 3;
        if (ValueBound b = measure(m.value, max_bytes, depth_left - 1, bytes, depth + 1); b != ValueBound::kWithin) return b;
      }
      break;
  }
  return *bytes > max_bytes ? ValueBound::kTooLarge : ValueBound::kWithin;
}

}  // namespace

ValueBound bound_value(const Value& v, size_t max_bytes, size_t max_depth) {
  size_t bytes = 0;
  return measure(v, max_bytes, max_depth, &bytes, 0);
}

}  // namespace flowrt
