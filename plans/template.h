// Compiled data pills and templates (SPEC section 5).
//
// A Template is what a JSON value with "{{...}}" in it compiles to: constants stay shared
// Values, pills are resolved to a root and slot at compile time, so rendering does no
// parsing and no name lookups. Immutable after compilation; safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowrt/plans/value.h"

namespace flowrt {

// Where a pill's value comes from.
enum class PillRoot : uint8_t {
  kTriggerRecord,     // trigger.record[...]
  kTriggerPrevious,   // trigger.previous[...]
  kTriggerTable,      // trigger.table
  kTriggerOperation,  // trigger.operation
  kTriggerSysId,      // trigger.sys_id
  kTriggerTime,       // trigger.time
  kTriggerPayload,    // trigger.payload[...]
  kTriggerType,       // trigger.type
  kStep,              // steps.ID.OUTPUT[...]: slot = step slot, index = output position
  kVariable,          // vars.NAME[...]: slot = variable slot
  kInput,             // inputs.NAME[...]: slot = declared input slot, or by name (see Pill::name)
  kItem,              // the current for_each item: slot = loop depth (0 = outermost)
  kContextId,         // context.id
  kFlowId,            // flow.id
  kErrorMessage,      // error.message (inside catch)
  kErrorStep,         // error.step (inside catch)
  kField,             // a field of the record under test (conditions' "field")
};

// One member or index access after the root: "record", "0", "name".
struct PathSegment {
  Value key;          // member name
  int64_t index = -1; // >= 0 when the segment is all digits: an array index (or member name)
};

enum class TransformKind : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kUpper, kLower, kTrim, kLength, kDefault, kJson, kNot };

std::string_view transform_name(TransformKind k);
bool parse_transform(std::string_view name, TransformKind* k);
// add, sub, mul, div, mod and default take an argument; the others take none.
bool transform_takes_argument(TransformKind k);

struct Pill;

struct Transform {
  TransformKind kind;
  Value argument;                             // literal argument (add: 1, default: "x"); null when none
  std::shared_ptr<const Pill> argument_pill;  // or a pill argument (add: item), read at run time
};

struct Pill {
  PillRoot root = PillRoot::kTriggerRecord;
  uint32_t slot = 0;
  uint32_t index = 0;                // output position for kStep
  Value name;                        // output name (kStep) or input name (kInput by name)
  bool by_name = false;              // kInput on a flow without declared inputs
  std::vector<PathSegment> path;
  std::vector<Transform> transforms;
  std::string text;                  // source text, for run-time error messages
};

// A compiled JSON value that may contain pills.
struct Template {
  enum class Kind : uint8_t {
    kAbsent,    // the input was not given
    kConstant,  // no pill anywhere inside: `constant` is the value
    kPill,      // a string that is exactly one pill: keeps the pill's JSON type
    kText,      // a string with pills inside: rendered as text
    kArray,     // array with pills somewhere inside
    kObject,    // object with pills somewhere inside
  };
  Kind kind = Kind::kAbsent;
  Value constant;
  std::vector<Pill> pills;          // kPill: one; kText: one per pill part
  std::vector<Value> text_parts;    // kText: literal text before each pill, plus the tail
  std::vector<Template> children;   // kArray / kObject
  Value keys;                       // kObject: array, key of each child (the rendered shape)

  bool absent() const { return kind == Kind::kAbsent; }
  bool is_constant() const { return kind == Kind::kConstant || kind == Kind::kAbsent; }
};

}  // namespace flowrt
