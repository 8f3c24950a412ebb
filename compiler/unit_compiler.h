// UnitCompiler: one definition (flow, subflow or action) -> one PlanUnit.
//
// Walks the steps in document order, gives every step id an output slot and every variable
// a slot, resolves each pill against what is declared before it, and asks the PlanBuilder
// for the units of the subflows and actions it calls. Internal to the compiler; one per
// unit compile; not synchronized.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/expr_compiler.h"
#include "compiler/plan_builder.h"

namespace flowrt {

class UnitCompiler : public PillResolver {
 public:
  UnitCompiler(PlanBuilder* builder, const Definition& def, const TriggerSpec* trigger);

  // Compiles the definition into *unit. Errors go to the builder's diagnostics.
  void compile(PlanUnit* unit);

  std::string resolve(const std::vector<std::string>& path, Pill* pill) const override;
  bool has_previous(PillRoot root) const override;

 private:
  struct StepRef {
    uint32_t slot;
    size_t order;
    std::string action;
    std::vector<Value> outputs;
    bool outputs_known;
  };
  struct Loop {
    std::string as;
    uint32_t depth;
  };

  void add_error(const std::string& pointer, std::string message);
  void read_header(PlanUnit* unit);
  void collect(const Value& steps, const std::string& pointer, int depth);
  void collect_step(const Value& step, const std::string& pointer, int depth);
  std::vector<Value> outputs_of(const Value& step, bool* known) const;

  Block compile_block(const Value& steps, const std::string& pointer, const std::string& path_prefix, bool in_loop);
  Node compile_node(const Value& step, const std::string& pointer, const std::string& path, bool in_loop);
  IfNode compile_if(const Value& step, const std::string& pointer, const std::string& path, bool in_loop);
  ForEachNode compile_for_each(const Value& step, const std::string& pointer, const std::string& path);
  TryNode compile_try(const Value& step, const std::string& pointer, const std::string& path, bool in_loop);
  ActionStep compile_action(const Value& step, const std::string& pointer);

  // step_compiler.cpp: inputs of the different kinds of action
  void compile_builtin_inputs(const ActionSignature& sig, const Value& inputs, const std::string& pointer,
                              ActionStep* out);
  void compile_call_inputs(const std::vector<Param>& params, const Value& inputs, const std::string& pointer,
                           const std::string& callee_label, ActionStep* out);
  void compile_assignments(const Value& values, const std::string& pointer, bool outputs, ActionStep* out);
  // A literal input checked as the action checks it at run time (compiler/input_checks.h).
  void check_literal(const Template& t, const InputParam& p, const std::string& pointer);
  // Lock inputs checked together: a literal weight against its literal key's limit, and a
  // literal max_attempts x delay against the longest duration.
  void check_lock_literals(const ActionStep& step, const std::string& pointer);
  // Fills given_input_names once the step's inputs are compiled.
  void name_given_inputs(ActionStep* out);
  bool resolve_callee(UnitType type, const std::string& id, const std::string& pointer, ActionStep* out);

  std::string check_keys(const Value& obj, std::initializer_list<std::string_view> allowed,
                         const std::string& pointer);

  PlanBuilder* builder_;
  const Definition& def_;
  const TriggerSpec* trigger_;  // flows only
  ExprCompiler expr_;
  PlanUnit* unit_ = nullptr;

  std::unordered_map<std::string, StepRef> steps_;
  std::unordered_map<std::string, uint32_t> variables_;
  std::unordered_map<std::string, uint32_t> inputs_;
  std::unordered_map<std::string, uint32_t> outputs_;
  std::vector<Loop> loops_;
  size_t collect_order_ = 0;  // action steps seen by collect()
  size_t order_ = 0;          // document order of the next action step to compile
  size_t current_order_ = 0;  // steps before this one are readable by the pills being compiled
  int catch_depth_ = 0;
  uint32_t action_count_ = 0;
  uint32_t step_count_ = 0;
};

}  // namespace flowrt
