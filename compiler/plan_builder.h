// PlanBuilder: assembles one Plan from its root definition and everything it calls.
//
// Each definition used becomes one unit, compiled once, depth first, as the calls reach it
// (the units' order, and so the nodes' ordinals that checkpoints hold, is that order); a
// call to a unit being compiled (recursion) just refers to its index. A call that would
// compile a unit deeper than kMaxCallDepth units (the interpreter would fail it) is an
// error: so compiling recurses at most that deep, whatever the definitions. With a
// CheckMemo (checking only, no plan made) a unit the memo knows to compile is walked, its
// calls made again in order, rather than compiled. Internal to the compiler; one per
// compile; not synchronized.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/compiler.h"

namespace flowrt {

class PlanBuilder {
 public:
  // With `memo`, only check() may be called.
  PlanBuilder(const DefinitionLookup& definitions, const ActionTypeLookup* actions, const CompileOptions& options,
              Diagnostics* diags, CheckMemo* memo = nullptr);

  // Compiles `root` as units[0] and everything it uses; nullptr when anything failed.
  std::shared_ptr<const Plan> build(const Definition& root);

  // Compiles `root` and everything it uses, reporting every error, but makes no plan.
  // Returns whether it compiles.
  bool check(const Definition& root);

  // The unit index of subflow/action `id`, called at `pointer` of the unit being compiled,
  // compiling it on first use. Returns false with *problem set when there is no such
  // definition or it may not be used.
  bool unit_for(UnitType type, const std::string& id, const std::string& pointer, uint32_t* index,
                std::string* problem);

  const DefinitionLookup& definitions() const { return definitions_; }
  const ActionTypeLookup* actions() const { return actions_; }
  const CompileOptions& options() const { return options_; }
  Diagnostics* diags() { return diags_; }
  // Did compiling a dependency fail? (Its errors are in diags under its own file.)
  bool dependency_failed() const { return dependency_failed_; }

 private:
  void compile_root(const Definition& root);
  void compile_unit(const Definition& def, uint32_t index);
  // Makes the calls of a unit the memo knows to compile, as compiling it would.
  void walk_clean_unit(const Definition& def, const std::vector<CheckMemo::Call>& calls);

  const DefinitionLookup& definitions_;
  const ActionTypeLookup* actions_;
  const CompileOptions& options_;
  Diagnostics* diags_;
  Plan plan_;
  struct UnitKeyHash {
    size_t operator()(const std::pair<UnitType, std::string>& k) const {
      return std::hash<std::string>{}(k.second) ^ static_cast<size_t>(k.first);
    }
  };
  std::unordered_map<std::pair<UnitType, std::string>, uint32_t, UnitKeyHash> index_;
  std::vector<const Definition*> path_;  // the units being compiled, the root first
  CheckMemo* memo_;
  // With a memo: the calls each unit on path_ has made so far (one list per unit; none
  // kept for a unit the memo knows).
  struct Calls {
    bool kept = true;
    std::vector<CheckMemo::Call> list;
  };
  std::vector<Calls> calls_;
  bool dependency_failed_ = false;
};

}  // namespace flowrt
