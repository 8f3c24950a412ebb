// parse_json: JSON text (RFC 8259, strict) -> Value, built directly from the text.
//
// One pass, no recursion: an explicit stack of open arrays and objects whose items wait in
// two scratch vectors shared by every level, so a document costs one allocation per array,
// object and long string it holds and nothing else. Limits (JsonLimits) are checked where
// they are met: depth when a bracket opens, a string's length as written when its closing
// quote is found, so hostile input stops at the first budget it passes. Strings must be
// well-formed UTF-8 (no overlong forms, no surrogates); \u escapes must pair surrogates.
// Integers that fit int64 are ints, all other numbers doubles (correctly rounded); a
// number past a double's range is refused.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <boost/container/small_vector.hpp>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "plans/value_json.h"

namespace flowrt {
namespace {

std::string too_deep(size_t max_depth) {
  return "nesting deeper than the limit of " + std::to_string(max_depth) + " levels (max_json_depth)";
}

// The members of objects with at most this many keys are checked for duplicates pairwise;
// larger ones go through Value::object, which indexes them.
constexpr size_t kPairwiseKeyCheck = 16;
// JsonLimits::shared_shapes: objects with at most this many keys share key lists (objects
// with more are indexed by key, a layout of their own).
constexpr size_t kMaxSharedShapeKeys = 16;
// The longest pointer an error names (JsonParseError::pointer).
constexpr size_t kMaxErrorPointerBytes = 256;

// Parses one document. Not reentrant: one per parse.
class JsonParser {
 public:
  JsonParser(std::string_view text, const JsonLimits& limits)
      : p_(text.data()), begin_(text.data()), end_(text.data() + text.size()), limits_(limits) {}

  // The document, or false with error_ and error_at_ set.
  bool parse(Value* out) {
    skip_space();
    if (!parse_document()) return false;
    skip_space();
    if (p_ != end_) return fail("unexpected text after the document", p_);
    *out = std::move(result_);
    return true;
  }

  const std::string& error() const { return error_; }
  size_t error_offset() const { return static_cast<size_t>(error_at_ - begin_); }

  // After a failed parse: the pointer of the value the error is in (JsonParseError::pointer),
  // read off the open arrays and objects. Each frame's items and members are the run of the
  // shared scratch vectors from its `first` to the next inner frame's of its kind. Tokens are
  // added from the outside in while the pointer stays within kMaxErrorPointerBytes, so a
  // deep or long-keyed document names the deepest enclosing value whose pointer fits.
  std::string error_pointer() const {
    struct Step {
      const Value* key;  // an object's member, or null: an array's item
      size_t index;
    };
    std::vector<Step> steps;  // innermost first
    size_t members_end = members_.size();
    size_t items_end = items_.size();
    for (size_t i = stack_.size(); i-- > 0;) {
      const Frame& f = stack_[i];
      const bool innermost = i + 1 == stack_.size();
      if (f.is_object) {
        // No member to name while a key is read, or before the first one.
        if (!(innermost && in_key_) && members_end > f.first) steps.push_back(Step{&members_[members_end - 1].key, 0});
        members_end = f.first;
      } else {
        const size_t count = items_end - f.first;
        steps.push_back(Step{nullptr, innermost && placed_ ? count - 1 : count});
        items_end = f.first;
      }
    }
    std::string out;
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if (it->key && it->key->as_string().size() > kMaxErrorPointerBytes) break;  // cannot fit
      std::string longer = it->key ? pointer_append(out, it->key->as_string()) : pointer_append(out, it->index);
      if (longer.size() > kMaxErrorPointerBytes) break;
      out = std::move(longer);
    }
    return out;
  }

 private:
  // An open array or object: where its items start in the scratch vectors.
  struct Frame {
    bool is_object;
    size_t first;  // index into items_ or members_
  };

  bool fail(std::string message, const char* at) {
    error_ = std::move(message);
    error_at_ = at;
    return false;
  }

  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // The document's values, iteratively: after each value, close what ends and expect a
  // separator; the value parsed last is in result_ when the stack empties.
  bool parse_document() {
    while (true) {
      // A value starts here.
      if (p_ == end_) return fail("unexpected end of input; expected a value", p_);
      const char c = *p_;
      Value v;
      if (c == '[' || c == '{') {
        if (stack_.size() >= limits_.max_depth) return fail(too_deep(limits_.max_depth), p_);
        const bool is_object = c == '{';
        ++p_;
        skip_space();
        const char close = is_object ? '}' : ']';
        if (p_ != end_ && *p_ == close) {
          ++p_;
          v = is_object ? Value::empty_object() : Value::empty_array();
        } else {
          stack_.push_back(Frame{is_object, is_object ? members_.size() : items_.size()});
          placed_ = false;
          if (is_object && !parse_key()) return false;
          continue;  // its first value
        }
      } else if (!parse_scalar(&v)) {
        return false;
      }
      // A value ended: place it, then close every array and object that ends here.
      while (true) {
        if (stack_.empty()) {
          result_ = std::move(v);
          return true;
        }
        Frame& f = stack_.back();
        if (f.is_object) {
          members_.back().value = std::move(v);
        } else {
          items_.push_back(std::move(v));
        }
        placed_ = true;
        skip_space();
        if (p_ == end_) return fail(f.is_object ? "unexpected end of input; expected ',' or '}'"
                                                : "unexpected end of input; expected ',' or ']'", p_);
        if (*p_ == ',') {
          ++p_;
          placed_ = false;
          skip_space();
          if (f.is_object && !parse_key()) return false;
          break;  // the next value
        }
        if (*p_ != (f.is_object ? '}' : ']')) {
          return fail(f.is_object ? "expected ',' or '}' after an object member" : "expected ',' or ']' after an array item",
                      p_);
        }
        ++p_;
        v = f.is_object ? close_object(f.first) : close_array(f.first);
        stack_.pop_back();
      }
    }
  }

  // A member's key and its colon; the member waits in members_ for its value.
  bool parse_key() {
    in_key_ = true;
    if (p_ == end_) return fail("unexpected end of input; expected a string as the member's key", p_);
    if (*p_ != '"') return fail("expected a string as the member's key", p_);
    Value key;
    if (!parse_string(&key)) return false;
    skip_space();
    if (p_ == end_) return fail("unexpected end of input; expected ':' after the key", p_);
    if (*p_ != ':') return fail("expected ':' after the key", p_);
    ++p_;
    skip_space();
    members_.push_back(Member{std::move(key), Value()});
    in_key_ = false;
    return true;
  }

  Value close_array(size_t first) {
    ArrayBuilder b(items_.size() - first);
    for (size_t i = first; i < items_.size(); ++i) b.add(std::move(items_[i]));
    items_.resize(first);
    return b.build();
  }

  Value close_object(size_t first) {
    const size_t n = members_.size() - first;
    bool unique = n <= kPairwiseKeyCheck;
    for (size_t i = first + 1; unique && i < members_.size(); ++i) {
      const std::string_view k = members_[i].key.as_string();
      for (size_t j = first; j < i; ++j) {
        if (members_[j].key.as_string() == k) {
          unique = false;
          break;
        }
      }
    }
    Value v;
    if (unique && limits_.shared_shapes && n <= kMaxSharedShapeKeys) {
      thread_local Value recent[16];
      boost::container::small_vector<Value, kMaxSharedShapeKeys> keys;
      for (size_t i = first; i < members_.size(); ++i) keys.push_back(members_[i].key);
      share_equal_strings(first);
      ObjectBuilder b(shape_for(std::span<const Value>(keys.data(), keys.size()), recent));
      for (size_t i = first; i < members_.size(); ++i) b.add_value(std::move(members_[i].value));
      v = b.build();
    } else if (unique) {
      ObjectBuilder b(n);
      for (size_t i = first; i < members_.size(); ++i) b.add(std::move(members_[i].key), std::move(members_[i].value));
      v = b.build();
    } else {
      // A key written twice keeps its last value (Value::object's rule).
      std::vector<Member> members(std::make_move_iterator(members_.begin() + static_cast<std::ptrdiff_t>(first)),
                                  std::make_move_iterator(members_.end()));
      v = Value::object(std::move(members));
    }
    members_.resize(first);
    return v;
  }

  // Members of the open object at `first` whose values are equal long strings (a record's
  // sys_created_on and sys_updated_on until it is updated) share one copy.
  void share_equal_strings(size_t first) {
    for (size_t i = first + 1; i < members_.size(); ++i) {
      Value& v = members_[i].value;
      if (!v.is_string() || v.as_string().size() <= Value::kInlineCapacity) continue;
      for (size_t j = first; j < i; ++j) {
        const Value& w = members_[j].value;
        if (w.is_string() && w.as_string() == v.as_string()) {
          v = w;
          break;
        }
      }
    }
  }

  bool parse_scalar(Value* out) {
    const char c = *p_;
    if (c == '"') return parse_string(out);
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
    if (literal("true")) *out = Value(true);
    else if (literal("false")) *out = Value(false);
    else if (literal("null")) *out = Value();
    else return fail(c == ']' || c == '}' ? "expected a value" : "invalid literal; expected a value", p_);
    return true;
  }

  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  bool parse_number(Value* out) {
    const char* const start = p_;
    const char* q = p_;
    if (*q == '-') ++q;
    if (q == end_ || *q < '0' || *q > '9') return fail("invalid number: expected a digit", q);
    if (*q == '0') {
      ++q;
    } else {
      while (q != end_ && *q >= '0' && *q <= '9') ++q;
    }
    bool integral = true;
    if (q != end_ && *q == '.') {
      integral = false;
      ++q;
      if (q == end_ || *q < '0' || *q > '9') return fail("invalid number: expected a digit after '.'", q);
      while (q != end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q != end_ && (*q == 'e' || *q == 'E')) {
      integral = false;
      ++q;
      if (q != end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || *q < '0' || *q > '9') return fail("invalid number: expected a digit in the exponent", q);
      while (q != end_ && *q >= '0' && *q <= '9') ++q;
    }
    p_ = q;
    if (integral) {
      long long i = 0;
      const auto r = std::from_chars(start, q, i);
      if (r.ec == std::errc() && r.ptr == q) {
        *out = Value(i);
        return true;
      }
      // Out of int64's range: a double, as every other number.
    }
    double d = 0;
    const auto r = std::from_chars(start, q, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Below double's smallest it is 0 (or the nearest subnormal); past its largest it
      // has no value to stand for.
      const std::string copy(start, q);
      d = std::strtod(copy.c_str(), nullptr);
      if (std::isinf(d)) return fail("number out of the range of a double", start);
    }
    *out = Value(d);
    return true;
  }

  // A string starting at the quote under p_. Bytes without escapes become the Value
  // straight from the text; escaped ones are decoded into scratch_.
  bool parse_string(Value* out) {
    const char* const open = p_;
    const char* q = p_ + 1;
    bool escaped = false;
    while (true) {
      // The run of bytes that need no look.
      while (q != end_) {
        const auto b = static_cast<unsigned char>(*q);
        if (b == '"' || b == '\\' || b < 0x20 || b >= 0x80) break;
        ++q;
      }
      if (q == end_) break;
      const auto b = static_cast<unsigned char>(*q);
      if (b == '"') break;
      if (b == '\\') {
        escaped = true;
        q += 2;  // the escape's letter is checked when decoding
        if (q > end_) q = end_;
        continue;
      }
      if (b < 0x20) return fail("control character U+00" + hex2(b) + " in a string must be escaped", q);
      const size_t n = utf8_sequence(q);
      if (n == 0) return fail("invalid UTF-8 in a string", q);
      q += n;
    }
    const size_t written = static_cast<size_t>(q - open - 1);
    if (written > limits_.max_string_bytes) {
      return fail("string longer than the limit of " + std::to_string(limits_.max_string_bytes) +
                      " bytes (max_string_bytes)",
                  open);
    }
    if (q == end_) return fail("unexpected end of input; the string is not closed", open);
    if (!escaped) {
      *out = Value(std::string_view(open + 1, written));
      p_ = q + 1;
      return true;
    }
    scratch_.clear();
    for (const char* s = open + 1; s != q;) {
      if (*s != '\\') {
        scratch_.push_back(*s++);
        continue;
      }
      const char* const esc = s;
      ++s;
      switch (*s++) {
        case '"': scratch_.push_back('"'); break;
        case '\\': scratch_.push_back('\\'); break;
        case '/': scratch_.push_back('/'); break;
        case 'b': scratch_.push_back('\b'); break;
        case 'f': scratch_.push_back('\f'); break;
        case 'n': scratch_.push_back('\n'); break;
        case 'r': scratch_.push_back('\r'); break;
        case 't': scratch_.push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!parse_hex4(s, q, &cp)) return fail("invalid \\u escape: expected four hex digits", esc);
          s += 4;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("invalid \\u escape: a low surrogate without a high one", esc);
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (q - s < 6 || s[0] != '\\' || s[1] != 'u' || !parse_hex4(s + 2, q, &low) || low < 0xDC00 || low > 0xDFFF) {
              return fail("invalid \\u escape: a high surrogate must be followed by a low one", esc);
            }
            s += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(cp, scratch_);
          break;
        }
        default: return fail("invalid escape in a string", esc);
      }
    }
    *out = Value(std::string_view(scratch_));
    p_ = q + 1;
    return true;
  }

  static std::string hex2(unsigned b) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    return {kHex[b >> 4], kHex[b & 15]};
  }

  size_t utf8_sequence(const char* s) const { return utf8_sequence_length(s, end_); }

  const char* p_;
  const char* const begin_;
  const char* const end_;
  const JsonLimits& limits_;
  std::vector<Frame> stack_;
  std::vector<Value> items_;     // the items of the open arrays, innermost last
  std::vector<Member> members_;  // the members of the open objects, innermost last
  std::string scratch_;          // an escaped string being decoded
  Value result_;
  std::string error_;
  const char* error_at_ = nullptr;
  // Where the parse is, for error_pointer: reading a member's key and colon; or the
  // innermost open array or object has just been given a value (its separator is next).
  bool in_key_ = false;
  bool placed_ = false;
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
    error->pointer.clear();
    locate(text, 0, error);
    return false;
  }
  if (text.starts_with("\xEF\xBB\xBF")) {
    // Editors on some systems write one; JSON text has none (RFC 8259, 8.1), and the
    // parser's own words for it ("invalid literal") would not say what is there.
    error->message = "the text starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON does not allow; "
                     "save it without one";
    error->pointer.clear();
    locate(text, 0, error);
    return false;
  }
  JsonParser parser(text, limits);
  if (!parser.parse(out)) {
    error->message = parser.error();
    error->pointer = parser.error_pointer();
    locate(text, parser.error_offset(), error);
    return false;
  }
  return true;
}

Result<Value> parse_json(std::string_view text, const JsonLimits& limits) {
  Value v;
  JsonParseError e;
  if (!parse_json(text, &v, &e, limits)) return Error{e.describe()};
  return v;
}

std::string pointer_append(std::string_view pointer, std::string_view token) {
  std::string out(pointer);
  out += '/';
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string pointer_append(std::string_view pointer, size_t index) {
  return pointer_append(pointer, std::to_string(index));
}

bool parse_hex4(const char* s, const char* end, uint32_t* out) {
  if (end - s < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = s[i];
    uint32_t d = 0;
    if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
    else return false;
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t utf8_sequence_length(const char* s, const char* end) {
  const auto at = [&](size_t i) -> int { return s + i < end ? static_cast<unsigned char>(s[i]) : -1; };
  const auto cont = [&](size_t i, int lo, int hi) {
    const int b = at(i);
    return b >= lo && b <= hi;
  };
  const int b0 = at(0);
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2, 0x80, 0xBF) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2, 0x80, 0xBF) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  return 0;
}

bool is_well_formed_utf8(std::string_view text) {
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end) {
    if (static_cast<unsigned char>(*p) < 0x80) {
      ++p;
      continue;
    }
    const size_t n = utf8_sequence_length(p, end);
    if (n == 0) return false;
    p += n;
  }
  return true;
}

}  // namespace flowrt
