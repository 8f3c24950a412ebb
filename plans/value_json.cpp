#include "plans/value_json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

namespace flowrt {
namespace {

std::string too_deep(size_t max_depth) {
  return "nesting deeper than the limit of " + std::to_string(max_depth) + " levels (max_json_depth)";
}

// Checks nesting depth and string length on the raw text, before the parser builds
// anything: a linear pass that stops at the first budget passed, so a document of a
// million brackets or a 100 MB string costs at most one look at the bytes up to the limit.
// Syntax is left to the parser. Returns false with the message and offset of the problem.
bool scan_limits(std::string_view text, const JsonLimits& limits, std::string* message, size_t* offset) {
  size_t depth = 0;
  const char* const data = text.data();
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = data[i];
    if (c == '"') {
      const size_t start = i++;
      // The string's bytes as written run to the closing quote; an escape covers two.
      const size_t stop = std::min(n, start + 1 + limits.max_string_bytes + 1);
      while (i < stop && data[i] != '"') i += data[i] == '\\' ? 2 : 1;
      if (i - start - 1 > limits.max_string_bytes) {
        *message = "string longer than the limit of " + std::to_string(limits.max_string_bytes) +
                   " bytes (max_string_bytes)";
        *offset = start;
        return false;
      }
      if (i >= n) return true;  // unterminated: the parser reports it
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        *message = too_deep(limits.max_depth);
        *offset = i;
        return false;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

// Builds a Value from nlohmann's SAX events with an explicit stack, enforcing JsonLimits.
class ValueBuilder {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  explicit ValueBuilder(const JsonLimits& limits) : limits_(limits) {}

  bool null() { return put(Value()); }
  bool boolean(bool b) { return put(Value(b)); }
  bool number_integer(number_integer_t i) { return put(Value(static_cast<long long>(i))); }
  bool number_unsigned(number_unsigned_t u) {
    if (u <= static_cast<number_unsigned_t>(INT64_MAX)) return put(Value(static_cast<long long>(u)));
    return put(Value(static_cast<double>(u)));
  }
  bool number_float(number_float_t d, const string_t&) { return put(Value(d)); }
  bool string(string_t& s) {
    if (s.size() > limits_.max_string_bytes) return fail(too_long(s.size()));
    return put(Value(std::string_view(s)));
  }
  bool binary(binary_t&) { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) { return open(true); }
  bool key(string_t& k) {
    if (k.size() > limits_.max_string_bytes) return fail(too_long(k.size()));
    stack_.back().key = Value(std::string_view(k));
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    error_position_ = position;
    if (error_.empty()) error_ = clean_message(ex.what());
    return false;
  }

  const std::string& error() const { return error_; }
  std::size_t error_position() const { return error_position_; }
  Value take() { return std::move(root_); }

 private:
  struct Frame {
    bool is_object;
    Value key;
    std::vector<Value> items;
    std::vector<Member> members;
  };

  static std::string clean_message(std::string what) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    const auto colon = what.find(": ");
    if (what.rfind("[json.exception", 0) == 0 && colon != std::string::npos) what = what.substr(colon + 2);
    return what;
  }
  std::string too_long(size_t n) const {
    return "string of " + std::to_string(n) + " bytes is longer than the limit of " +
           std::to_string(limits_.max_string_bytes) + " bytes (max_string_bytes)";
  }
  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  bool open(bool is_object) {
    if (stack_.size() >= limits_.max_depth) {
      return fail(too_deep(limits_.max_depth));
    }
    stack_.push_back(Frame{is_object, Value(), {}, {}});
    return true;
  }
  bool close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    return put(f.is_object ? Value::object(std::move(f.members)) : Value::array(std::move(f.items)));
  }
  bool put(Value v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Frame& f = stack_.back();
    if (f.is_object) f.members.push_back(Member{std::move(f.key), std::move(v)});
    else f.items.push_back(std::move(v));
    return true;
  }

  const JsonLimits& limits_;
  std::vector<Frame> stack_;
  Value root_;
  std::string error_;
  std::size_t error_position_ = 0;
};

void locate(std::string_view text, size_t offset, JsonParseError* e) {
  e->offset = offset;
  e->line = 1;
  e->column = 1;
  const size_t end = std::min(offset, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++e->line;
      e->column = 1;
    } else {
      ++e->column;
    }
  }
}

}  // namespace

std::string JsonParseError::describe() const {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

bool parse_json(std::string_view text, Value* out, JsonParseError* error, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    error->message = "document of " + std::to_string(text.size()) + " bytes is larger than the limit of " +
                     std::to_string(limits.max_bytes) + " bytes";
    locate(text, 0, error);
    return false;
  }
  std::string scan_message;
  size_t scan_offset = 0;
  if (!scan_limits(text, limits, &scan_message, &scan_offset)) {
    error->message = std::move(scan_message);
    locate(text, scan_offset, error);
    return false;
  }
  ValueBuilder builder(limits);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                                   /*strict=*/true);
  } catch (const std::exception& ex) {  // nlohmann may throw on allocation or odd input
    error->message = ex.what();
    locate(text, 0, error);
    return false;
  }
  if (!ok) {
    error->message = builder.error().empty() ? "invalid JSON" : builder.error();
    // A limit error has no position from the parser; nlohmann reports 1-based byte counts.
    size_t pos = builder.error_position();
    locate(text, pos > 0 ? pos - 1 : 0, error);
    return false;
  }
  *out = builder.take();
  return true;
}

Result<Value> parse_json(std::string_view text, const JsonLimits& limits) {
  Value v;
  JsonParseError e;
  if (!parse_json(text, &v, &e, limits)) return Error{e.describe()};
  return v;
}

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

}  // namespace flowrt
