// Action signatures: the inputs and outputs an action type declares, as the compiler checks
// them. Built-in signatures are constant; C++ action types registered through the library
// API are found through an ActionTypeLookup that the runtime provides.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/input_checks.h"
#include "plans/plan.h"

namespace flowrt {

// How the compiler treats one built-in input beyond its type.
enum class InputRole : uint8_t {
  kValue,        // a template
  kDuration,     // a template; when literal, must parse as a duration
  kCondition,    // a condition (section 4), "field" = the record under test
  kAssignments,  // an object of literal names to templates (set_variables, assign_outputs)
  kCallee,       // a literal definition id (call_subflow's "subflow")
};

struct InputParam {
  Param param;
  InputRole role = InputRole::kValue;
  InputCheck check = InputCheck::kNone;  // checked on a literal and on the rendered value
};

struct ActionSignature {
  std::string name;
  std::vector<InputParam> inputs;
  std::vector<Param> outputs;
};

// The built-in action `name`, or nullptr.
const ActionSignature* find_builtin(std::string_view name, ActionKind* kind);
const ActionSignature& builtin_signature(ActionKind kind);
// The declared input `name` of a built-in action, or nullptr.
const InputParam* builtin_input(ActionKind kind, std::string_view name);
// check_input_value for input `name` of a built-in action ("" for an undeclared name).
std::string check_builtin_input(ActionKind kind, std::string_view name, const Value& v);
std::string_view builtin_name(ActionKind kind);

// C++ action types registered with the runtime. Implementations must be safe for
// concurrent use (the plan cache may compile on any thread).
class ActionTypeLookup {
 public:
  virtual ~ActionTypeLookup() = default;
  // The registered type `name` and its registry index, or nullptr.
  virtual const ActionSignature* find(std::string_view name, uint32_t* index) const = 0;
};

}  // namespace flowrt
