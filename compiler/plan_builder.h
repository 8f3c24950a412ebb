// PlanBuilder: assembles one Plan from its root definition and everything it calls.
//
// Each definition used becomes one unit, compiled once, depth first, as the calls reach it
// (the units' order, and so the nodes' ordinals that checkpoints hold, is that order); a
// call to a unit being compiled (recursion) just refers to its index. A call that would
// compile a unit deeper than kMaxCallDepth units (the interpreter would fail it) is an
// error: so compiling recurses at most that deep, whatever the definitions. Internal to
// the compiler; one per compile; not synchronized.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/compiler.h"

namespace flowrt {

class PlanBuilder {
 public:
  PlanBuilder(const DefinitionLookup& definitions, const ActionTypeLookup* actions, const CompileOptions& options,
              Diagnostics* diags);

  // Compiles `root` as units[0] and everything it uses; nullptr when anything failed.
  std::shared_ptr<const Plan> build(const Definition& root);

  // The unit index of subflow/action `id`, compiling it on first use. Returns false with
  // *problem set when there is no such definition or it may not be used.
  bool unit_for(UnitType type, const std::string& id, uint32_t* index, std::string* problem);

  const DefinitionLookup& definitions() const { return definitions_; }
  const ActionTypeLookup* actions() const { return actions_; }
  const CompileOptions& options() const { return options_; }
  Diagnostics* diags() { return diags_; }
  // Did compiling a dependency fail? (Its errors are in diags under its own file.)
  bool dependency_failed() const { return dependency_failed_; }

 private:
  void compile_unit(const Definition& def, uint32_t index);

  const DefinitionLookup& definitions_;
  const ActionTypeLookup* actions_;
  const CompileOptions& options_;
  Diagnostics* diags_;
  Plan plan_;
  std::map<std::pair<UnitType, std::string>, uint32_t> index_;
  std::vector<const Definition*> path_;  // the units being compiled, the root first
  bool dependency_failed_ = false;
};

}  // namespace flowrt
