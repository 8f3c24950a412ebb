// Process plans: what the compiler makes of flow, subflow and action definitions.
//
// A Plan is immutable after compilation and shared (std::shared_ptr<const Plan>) by the plan
// cache and by every context that runs it, so a context keeps the exact plan it started
// with. All per-run state lives in the context, never here. A Plan holds its root unit (the
// flow) and every subflow and action definition it uses, directly or indirectly, as units
// that calls refer to by index; recursion between units is just an index.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "flowrt/plans/condition.h"
#include "flowrt/plans/template.h"
#include "flowrt/plans/time.h"
#include "flowrt/plans/trigger_spec.h"
#include "flowrt/plans/value.h"

namespace flowrt {

// Declared types of inputs and outputs (SPEC section 2).
enum class ParamType : uint8_t { kString, kInteger, kNumber, kBoolean, kObject, kArray, kRecord, kAny };
std::string_view param_type_name(ParamType t);
bool parse_param_type(std::string_view name, ParamType* t);
// Does `v` fit `t`? null fits every type (an absent optional value).
bool value_fits(const Value& v, ParamType t);

struct Param {
  std::string name;
  ParamType type = ParamType::kAny;
  bool required = false;
};

enum class ActionKind : uint8_t {
  kLog, kCreateRecord, kUpdateRecord, kDeleteRecord, kLookUpRecord, kLookUpRecords,
  kSetVariables, kLock, kUnlock, kWait, kWaitForCondition, kCallSubflow, kStartFlow,
  kFireEvent, kAssignOutputs, kFail,
  kCustom,      // a C++ action type registered through the library API
  kCallAction,  // a "type": "action" definition, run as a unit of this plan
};

enum class OnError : uint8_t { kStop, kContinue };

// An assignment compiled from a literal key: set_variables and assign_outputs.
struct Assignment {
  uint32_t slot;
  Value name;
  Template value;
};

struct ActionStep {
  std::string id;                  // empty when the step has none
  std::string action;              // the type as written ("update_record", "my.action")
  ActionKind kind = ActionKind::kLog;
  uint32_t callee = 0;             // kCallSubflow / kCallAction: unit index; kCustom: registry index
  std::string callee_id;           // kCallSubflow / kCallAction: the definition id
  std::vector<Template> inputs;    // in the order of input_names
  std::vector<Value> input_names;
  Value given_input_names;         // array: names of the inputs given, in order (the shape
                                   // of the inputs object its context record shows)
  std::vector<Value> output_names; // in the order actions produce them
  Condition condition;             // look_up_record(s), wait_for_condition
  std::vector<Assignment> assignments;  // set_variables, assign_outputs
  OnError on_error = OnError::kStop;
  int32_t slot = -1;               // step-output slot, -1 when the step has no id

  // Position of input `name` in `inputs`, or -1.
  int input_index(std::string_view name) const;
  const Template* input(std::string_view name) const;
};

struct Node;
using Block = std::vector<Node>;

struct IfNode {
  std::vector<Condition> conditions;  // the if, then each else_if
  std::vector<Block> branches;        // one per condition
  bool has_else = false;
  Block else_block;
};

struct ForEachNode {
  Template items;
  uint32_t depth = 0;  // loop depth: which item slot `as` names
  Value as;
  Block body;
};

struct TryNode {
  Block body;
  Block handler;
};

struct EndNode {};

struct Node {
  Value path;  // position in the definition: "3", "4.then.1", "5.do.2" (no iteration marks)
  Value id;      // the step's id, null when it has none (shared into context records)
  Value action;  // "update_record", "my.action", or for flow logic "if", "for_each", "try", "end"
  bool in_loop = false;  // inside some for_each body: the run-time path carries "#N" marks
  // Its place in a depth-first walk of the plan's units, in order (nodes_of(plan)): how a
  // stored context record names the node each of its steps ran.
  uint32_t ordinal = 0;
  std::variant<ActionStep, IfNode, ForEachNode, TryNode, EndNode> op;
};

enum class UnitType : uint8_t { kFlow, kSubflow, kAction };
std::string_view unit_type_name(UnitType t);

// One compiled definition.
struct PlanUnit {
  UnitType type = UnitType::kFlow;
  std::string id;
  std::string fingerprint;              // of this definition alone (16 hex digits)
  std::vector<Param> inputs;
  std::vector<Param> outputs;
  bool declares_inputs = false;         // flows may leave their inputs undeclared
  std::vector<Value> variable_names;
  std::vector<Value> variable_initial;
  Value variable_name_list;             // the two above as arrays, shared by context records
  Value variable_initial_list;
  std::vector<Value> step_ids;          // by step slot
  uint32_t max_loop_depth = 0;          // item slots needed
  uint32_t action_count = 0;            // action steps through nested logic; a call counts one
  uint32_t recorded_steps = 0;          // steps one pass records (largest branches, loops once)
  Block body;
};

// How deep calls nest: a context's call stack holds at most this many activations of
// units (its flow's included). The interpreter fails a call past it; the compiler refuses
// a definition whose calls, as it first reaches them, nest deeper.
inline constexpr size_t kMaxCallDepth = 64;

// A definition that a plan was compiled from, with the fingerprint it had.
struct PlanDependency {
  UnitType type;
  std::string id;
  std::string fingerprint;
};

struct Plan {
  std::string flow_id;
  std::string version;                  // "flow_id@8 hex digits" over every definition used
  Value version_value;                  // the same, shared by context records
  TriggerSpec trigger;
  std::vector<PlanUnit> units;          // units[0] is the flow itself
  std::vector<PlanDependency> dependencies;  // every definition used, the flow first

  const PlanUnit& root() const { return units.front(); }
};

// Every node of `plan` by ordinal (Node::ordinal).
std::vector<const Node*> nodes_of(const Plan& plan);
// Gives every node of `plan` its ordinal; the compiler calls it once a plan is complete.
void number_nodes(Plan& plan);

}  // namespace flowrt
