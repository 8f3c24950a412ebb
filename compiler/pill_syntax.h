// The syntax of data pills: "{{ steps.find.record.name | upper | default: \"x\" }}".
//
// Splitting and parsing only; what a path means is decided by the unit compiler. Free
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plans/result.h"

namespace flowrt {

struct TransformSyntax {
  std::string name;
  bool has_argument = false;
  std::string argument;  // raw text after ':' (trimmed)
};

struct PillSyntax {
  std::vector<std::string> path;  // "steps", "find", "record", "0", "name"
  std::vector<TransformSyntax> transforms;
  std::string text;               // the inside of the braces, trimmed
};

struct TemplatePiece {
  bool is_pill = false;
  std::string text;  // literal text, or the pill's source
  PillSyntax pill;
};

bool has_pill_marker(std::string_view s);
// Splits `s` into literal text and pills; an unclosed "{{" or a malformed pill is an error.
Result<std::vector<TemplatePiece>> split_template(std::string_view s);
Result<PillSyntax> parse_pill(std::string_view inner);

}  // namespace flowrt
