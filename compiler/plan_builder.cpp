#include "compiler/plan_builder.h"

#include <algorithm>

#include "compiler/unit_compiler.h"
#include "plans/value_json.h"

namespace flowrt {

PlanBuilder::PlanBuilder(const DefinitionLookup& definitions, const ActionTypeLookup* actions,
                         const CompileOptions& options, Diagnostics* diags, CheckMemo* memo)
    : definitions_(definitions), actions_(actions), options_(options), diags_(diags), memo_(memo) {}

void PlanBuilder::compile_unit(const Definition& def, uint32_t index) {
  if (memo_ && def.type != UnitType::kFlow) {
    if (auto known = memo_->clean_.find(&def); known != memo_->clean_.end()) {
      walk_clean_unit(def, known->second);
      return;
    }
  }
  const TriggerSpec* trigger = index == 0 && def.type == UnitType::kFlow ? &plan_.trigger : nullptr;
  PlanUnit unit;
  const size_t before = diags_->reported();
  path_.push_back(&def);
  if (memo_) calls_.emplace_back();
  UnitCompiler(this, def, trigger).compile(&unit);
  path_.pop_back();
  if (memo_) {
    // Clean here means clean anywhere: a unit's own compile depends only on the options and
    // the lookups; what a deeper call would change, the walk makes again.
    if (diags_->reported() == before && def.type != UnitType::kFlow) memo_->clean_[&def] = std::move(calls_.back().list);
    calls_.pop_back();
    return;  // checking: no plan is made
  }
  plan_.units[index] = std::move(unit);
}

void PlanBuilder::walk_clean_unit(const Definition& def, const std::vector<CheckMemo::Call>& calls) {
  path_.push_back(&def);
  calls_.push_back(Calls{false, {}});  // a known unit's calls are known already
  for (const CheckMemo::Call& call : calls) {
    uint32_t index = 0;
    std::string problem;
    // As UnitCompiler::resolve_callee reports a failed call; the rest of a clean unit's
    // compile found nothing, and does not depend on its callees.
    if (!unit_for(call.type, call.id, call.pointer, &index, &problem)) diags_->add(def.file, call.pointer, problem);
  }
  calls_.pop_back();
  path_.pop_back();
}

namespace {

// "flow 'f' -> subflow 'a' -> ... -> subflow 'z'": the first three and the last two.
std::string call_chain(const std::vector<const Definition*>& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (i == 3 && path.size() > 5) {
      out += " -> ...";
      i = path.size() - 2;
    }
    out += (i == 0 ? "" : " -> ") + path[i]->label();
  }
  return out;
}

}  // namespace

bool PlanBuilder::unit_for(UnitType type, const std::string& id, const std::string& pointer, uint32_t* index,
                           std::string* problem) {
  if (memo_ && calls_.back().kept) calls_.back().list.push_back(CheckMemo::Call{type, id, pointer});
  const std::string kind(unit_type_name(type));
  auto it = index_.find({type, id});
  if (it != index_.end()) {
    *index = it->second;
    return true;
  }
  const Definition* def = definitions_.find(type, id);
  if (!def) {
    *problem = "unknown " + kind + " '" + id + "'";
    return false;
  }
  if (def->status == DefinitionStatus::kDraft && !options_.allow_draft_dependencies) {
    *problem = "uses " + kind + " '" + id + "', which is a draft; publish it first";
    return false;
  }
  if (path_.size() >= kMaxCallDepth) {
    *problem = "calls nested more than " + std::to_string(kMaxCallDepth) + " deep (" + kind + " '" + id +
               "', called through " + call_chain(path_) + ")";
    return false;
  }
  *index = static_cast<uint32_t>(plan_.units.size());
  plan_.units.emplace_back();
  index_.emplace(std::make_pair(type, id), *index);
  plan_.dependencies.push_back(PlanDependency{type, id, def->fingerprint});
  const size_t before = diags_->reported();
  compile_unit(*def, *index);
  if (diags_->reported() != before) {
    dependency_failed_ = true;
    *problem = kind + " '" + id + "' does not compile";
    return false;
  }
  return true;
}

bool PlanBuilder::check(const Definition& root) {
  const size_t before = diags_->reported();
  compile_root(root);
  return diags_->reported() == before;
}

void PlanBuilder::compile_root(const Definition& root) {
  plan_.flow_id = root.id;
  if (root.type == UnitType::kFlow) {
    const std::string trigger_ptr = pointer_append(root.pointer, "trigger");
    if (!root.source.contains("trigger")) {
      diags_->add(root.file, root.pointer, "a flow needs a \"trigger\"");
    } else {
      compile_trigger(root.source["trigger"], root.file, trigger_ptr, &plan_.trigger, diags_, options_);
    }
  }
  plan_.units.emplace_back();
  index_.emplace(std::make_pair(root.type, root.id), 0u);
  plan_.dependencies.push_back(PlanDependency{root.type, root.id, root.fingerprint});
  compile_unit(root, 0);
}

std::shared_ptr<const Plan> PlanBuilder::build(const Definition& root) {
  const size_t before = diags_->reported();
  compile_root(root);
  if (diags_->reported() != before) return nullptr;

  // The version covers the root and every definition it uses, in a stable order.
  std::vector<PlanDependency> deps(plan_.dependencies.begin() + 1, plan_.dependencies.end());
  std::sort(deps.begin(), deps.end(), [](const PlanDependency& a, const PlanDependency& b) {
    return std::tie(a.type, a.id) < std::tie(b.type, b.id);
  });
  std::string text = root.fingerprint;
  for (const PlanDependency& d : deps) {
    text += '|';
    text += unit_type_name(d.type);
    text += ':';
    text += d.id;
    text += '=';
    text += d.fingerprint;
  }
  plan_.version = root.id + "@" + hex64(hash_bytes(text)).substr(0, 8);
  plan_.version_value = Value(std::string_view(plan_.version));
  number_nodes(plan_);
  return std::make_shared<const Plan>(std::move(plan_));
}

}  // namespace flowrt
