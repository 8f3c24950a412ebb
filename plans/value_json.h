// JSON text <-> Value.
//
// Parsing (json_parse.cpp) is strict RFC 8259, iterative (no recursion on nesting) and
// enforces JsonLimits where they are met, so hostile input such as "[" x 100000 is refused
// with a clear error at the first budget it passes instead of exhausting the stack or
// memory. Strings must be well-formed UTF-8. Writing produces compact JSON, well-formed
// UTF-8 whatever a string holds (an ill-formed byte is written as U+FFFD). Writing,
// shown_value and bound_value have no depth limit (an explicit stack past 64 levels): a
// value built in C++ nested a million deep is written whole. Free functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "flowrt/plans/result.h"
#include "flowrt/plans/value.h"

namespace flowrt {

// The budgets of one parse; the defaults are the engine properties' defaults, whose names
// the error messages carry.
struct JsonLimits {
  size_t max_bytes = 64u << 20;        // whole document
  size_t max_depth = 256;              // nested arrays/objects (max_json_depth)
  size_t max_string_bytes = 16u << 20; // one string or key, as written (max_string_bytes)
  // Not a limit: objects of up to 24 keys are built on shared key lists (shape_for, see
  // ObjectBuilder), 16 bytes per member instead of 32, and equal long strings in one object
  // share a copy, for values kept long (what a store reads back). Off by default: user
  // input could make many one-off key lists.
  bool shared_shapes = false;
};

struct JsonParseError {
  std::string message;  // what is wrong, without the position
  size_t offset = 0;    // byte offset of the error
  size_t line = 1;      // 1-based
  size_t column = 1;    // 1-based, in bytes
  // The JSON pointer (RFC 6901) of the value the error is in: the member or item being read
  // or just read; an object's own when the error is in one of its keys or between its
  // members; "" for the document. Made of keys the parser decoded, so always UTF-8. At most
  // 256 bytes: past that, the deepest enclosing value's whose pointer fits.
  std::string pointer;
  // "line L, column C: message"
  std::string describe() const;
};

// Parses one JSON document. On failure, returns false and fills *error.
bool parse_json(std::string_view text, Value* out, JsonParseError* error,
                const JsonLimits& limits = {});

// Convenience for code and tests: parse or return the error as Result.
Result<Value> parse_json(std::string_view text, const JsonLimits& limits = {});

// Appends the compact JSON text of `v` to `out`. Non-finite doubles are written as null.
void write_json(const Value& v, std::string& out);

// How a value measures against a size and a depth: written as compact JSON it takes at most
// `max_bytes`, and nests at most `max_depth` arrays and objects. Walks only as far as it
// must: a value whose parts are shared many times over (one pill's value placed in an array
// again and again) is measured as it would be written, and the walk stops at the first limit
// passed, so it costs at most about `max_bytes` steps and `max_depth` frames.
enum class ValueBound : uint8_t { kWithin, kTooLarge, kTooDeep };
ValueBound bound_value(const Value& v, size_t max_bytes, size_t max_depth);
// Appends `s` as a quoted JSON string; each byte of `s` that is not part of well-formed
// UTF-8 as U+FFFD.
void write_json_string(std::string_view s, std::string& out);

// The value as a message shows it: its compact JSON, cut after `max_bytes` (on a character
// boundary) with "...". Writes no more than that of it, however large the value (a 16 MiB
// string, a value whose parts are shared a billion times over).
std::string shown_value(const Value& v, size_t max_bytes = 64);

// Indented JSON for people (two spaces). Its size grows with the square of the depth.
std::string to_pretty_json(const Value& v);

// Whether `text` is well-formed UTF-8 (Unicode's table 3-7: no overlong forms, no
// surrogates, nothing past U+10FFFF), as JSON strings must be.
bool is_well_formed_utf8(std::string_view text);
// The length of the well-formed sequence of two to four bytes at `s` (before `end`), or 0.
size_t utf8_sequence_length(const char* s, const char* end);
// Appends code point `cp` (at most U+10FFFF, not a surrogate) as UTF-8.
void append_utf8(uint32_t cp, std::string& out);
// The four hex digits at `s` (before `end`) as a number; false when they are not that.
bool parse_hex4(const char* s, const char* end, uint32_t* out);

// `pointer` with one more reference token (RFC 6901: '~' as "~0", '/' as "~1").
std::string pointer_append(std::string_view pointer, std::string_view token);
std::string pointer_append(std::string_view pointer, size_t index);

}  // namespace flowrt
