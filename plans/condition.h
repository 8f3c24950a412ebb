// Compiled conditions (SPEC section 4). Immutable after compilation; safe to share.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "flowrt/plans/template.h"

namespace flowrt {

enum class CompareOp : uint8_t {
  kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn, kContains, kStartsWith, kEndsWith,
  kIsEmpty, kIsNotEmpty, kChanges, kChangesTo, kChangesFrom,
};

std::string_view op_name(CompareOp op);
bool parse_op(std::string_view name, CompareOp* op);
// changes, changes_to, changes_from: need the previous value.
bool op_needs_previous(CompareOp op);
// is_empty, is_not_empty, changes: take no value.
bool op_takes_value(CompareOp op);

struct Condition {
  enum class Kind : uint8_t { kAll, kAny, kNot, kCompare, kTrue };
  Kind kind = Kind::kTrue;
  std::vector<Condition> children;  // kAll, kAny; kNot has exactly one
  // kCompare:
  Pill subject;           // root kField for {"field": ...}, any pill for {"pill": ...}
  CompareOp op = CompareOp::kEq;
  Template value;         // may contain pills; absent for ops that take none
};

}  // namespace flowrt
