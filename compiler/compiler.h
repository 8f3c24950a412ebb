// Compiler: definitions -> immutable process plans.
//
// compile_flow checks a flow and every subflow and action it uses, reports every error it
// finds (file: /json/pointer: message), and on success returns a Plan in which every data
// pill is resolved to a slot and every condition and template is prepared, so that running
// the plan does no parsing. The Compiler only reads its lookups; it is safe to use from
// several threads at once if the lookups are.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/definition.h"
#include "compiler/diagnostics.h"
#include "compiler/signatures.h"
#include "plans/plan.h"

namespace flowrt {

// Finds the definitions that plans use (subflows, actions). The implementation decides
// which version is visible (published, or draft when testing).
class DefinitionLookup {
 public:
  virtual ~DefinitionLookup() = default;
  virtual const Definition* find(UnitType type, std::string_view id) const = 0;
};

struct CompileOptions {
  uint32_t max_actions = 50;          // action steps per flow/subflow/action (a call counts one)
  uint32_t max_action_steps = 20;     // steps per "type": "action" definition
  uint32_t max_steps = 10000;         // hard ceiling on steps of one definition, any limit aside
  size_t max_template_bytes = 65536;  // one string with pills in it
  // Let a flow use draft subflows and actions (test_flow with show_draft_actions).
  bool allow_draft_dependencies = false;
  // Check the action limits (activation and publication do; validation reports them too).
  bool enforce_action_limits = true;
  // Declared lock limits: a literal weight above its literal key's limit is an error.
  std::map<std::string, int64_t> lock_limits;
  // The shortest `every` a schedule trigger may have (the engine's min_schedule_interval).
  DurationMs min_schedule_interval = 1000;
};

// What checking definitions learnt that later checks can reuse: each subflow and action
// that compiled without an error, and the calls it makes (in order, each with its JSON
// pointer). A later check that reaches such a unit again walks only those calls (their
// depth and their callees can still fail there) instead of compiling it once more, so
// checking every definition of a wide call graph costs one compile per definition plus a
// walk of each closure, not a compile of each closure. Valid only for one lookup and one
// set of options, while the definitions it names are unchanged and alive: make one per
// such check, and drop it after. Not synchronized.
class CheckMemo {
 public:
  struct Call {
    UnitType type;
    std::string id;
    std::string pointer;  // where the caller makes the call
  };
  // How many definitions are known to compile (for tests).
  size_t clean_units() const { return clean_.size(); }

 private:
  friend class PlanBuilder;
  std::unordered_map<const Definition*, std::vector<Call>> clean_;
};

class Compiler {
 public:
  // `actions` may be null when no C++ action types are registered. Both lookups must outlive
  // the Compiler.
  Compiler(const DefinitionLookup& definitions, const ActionTypeLookup* actions, CompileOptions options);

  // Compiles a flow and everything it uses. On error returns nullptr with diagnostics added.
  std::shared_ptr<const Plan> compile_flow(const Definition& flow, Diagnostics* diags) const;

  // Compiles any definition on its own (a subflow or action as the root unit), as
  // `validate` and `publish` do. Returns the plan, or nullptr with diagnostics added.
  std::shared_ptr<const Plan> compile_unit(const Definition& def, Diagnostics* diags) const;

  // Checks `def` as compile_unit would, reporting the same errors in the same order, but
  // builds no plan; with `memo` (see CheckMemo) it reuses what earlier checks with this
  // Compiler's lookups and options learnt. Returns whether it compiles.
  bool check_unit(const Definition& def, Diagnostics* diags, CheckMemo* memo) const;

  const CompileOptions& options() const { return options_; }

 private:
  const DefinitionLookup& definitions_;
  const ActionTypeLookup* actions_;
  CompileOptions options_;
};

// Compiles a trigger object (SPEC section 3). Returns false with diagnostics on error.
// Of `options`, only min_schedule_interval applies.
bool compile_trigger(const Value& trigger, const std::string& file, const std::string& pointer, TriggerSpec* out,
                     Diagnostics* diags, const CompileOptions& options = {});

// Compiles a condition over a record with no pills allowed: the `where` of the events
// file's update and delete ops. Returns false with diagnostics on error.
bool compile_record_condition(const Value& condition, const std::string& file, const std::string& pointer,
                              Condition* out, Diagnostics* diags);

// Reads an "inputs"/"outputs" declaration list. Diagnostics may be null (peeking at a callee).
bool read_params(const Value& list, const std::string& file, const std::string& pointer, std::vector<Param>* out,
                 Diagnostics* diags);

}  // namespace flowrt
