#include "runtime/flow_registry.h"

#include <mutex>

#include "plans/value_json.h"
#include "runtime/engine_log.h"

namespace flowrt {

// Definitions as a compile sees them. REQUIRES: the registry's mu_ is held (shared or
// exclusive) for as long as the returned pointers are used.
class FlowRegistry::View final : public DefinitionLookup {
 public:
  View(const FlowRegistry& r, bool drafts_first) : r_(r), drafts_first_(drafts_first) {}
  const Definition* find(UnitType type, std::string_view id) const override {
    auto it = r_.defs_.find({type, std::string(id)});
    if (it == r_.defs_.end()) return nullptr;
    const Versions& v = it->second;
    if (drafts_first_ && v.draft) return &*v.draft;
    if (v.published) return &*v.published;
    return v.draft ? &*v.draft : nullptr;  // a draft alone: the compiler refuses it unless allowed
  }

 private:
  const FlowRegistry& r_;
  bool drafts_first_;
};

FlowRegistry::FlowRegistry(const ActionTypeLookup* actions) : actions_(actions) {}
FlowRegistry::~FlowRegistry() = default;

FlowSlot* FlowRegistry::slot_locked(const std::string& id) {
  auto it = slots_by_id_.find(id);
  if (it != slots_by_id_.end()) return it->second;
  slots_.push_back(std::make_unique<FlowSlot>(static_cast<uint32_t>(slots_.size()), id));
  FlowSlot* s = slots_.back().get();
  slots_by_id_.emplace(id, s);
  return s;
}

void FlowRegistry::set_trigger_locked(const Definition& published) {
  auto spec = std::make_shared<TriggerSpec>();
  Diagnostics diags;
  // Checked when the version was loaded or published: the interval limit as it was then
  // (min_schedule_interval may have been raised since) is not checked again.
  CompileOptions options;
  options.min_schedule_interval = 0;
  FlowSlot::Trigger t;
  // A trigger that does not compile leaves the flow without one: its errors are the
  // definition's, reported where it is loaded or compiled.
  if (compile_trigger(published.source["trigger"], published.file, pointer_append(published.pointer, "trigger"),
                      spec.get(), &diags, options)) {
    t.spec = std::move(spec);
  }
  t.version = published.fingerprint;
  slot_locked(published.id)->set_trigger(std::move(t));
}

void FlowRegistry::add(std::vector<Definition> defs) {
  std::unique_lock lock(mu_);
  for (Definition& d : defs) {
    if (d.type == UnitType::kFlow) slot_locked(d.id);
    if (d.type == UnitType::kFlow && d.status == DefinitionStatus::kPublished && !d.active) {
      slot_locked(d.id)->stored_activated_at = -1;
    }
    if (d.type == UnitType::kFlow && d.status == DefinitionStatus::kPublished) set_trigger_locked(d);
    Versions& v = defs_[{d.type, d.id}];
    if (d.status == DefinitionStatus::kDraft) v.draft = std::move(d);
    else v.published = std::move(d);
  }
  bump_epoch();
}

Status FlowRegistry::save(Definition def, size_t max_definitions) {
  std::unique_lock lock(mu_);
  return save_locked(std::move(def), max_definitions);
}

Status FlowRegistry::save_locked(Definition def, size_t max_definitions) {
  auto existing = defs_.find({def.type, def.id});
  if (existing == defs_.end() || !existing->second.draft) {
    size_t count = 0;
    for (const auto& [key, v] : defs_) count += (v.published ? 1 : 0) + (v.draft ? 1 : 0);
    if (count >= max_definitions) {
      return Error{"definition '" + def.id + "' not saved: " + std::to_string(count) +
                   " definitions are registered, the limit (max_definitions) is " + std::to_string(max_definitions)};
    }
  }
  if (def.type == UnitType::kFlow) slot_locked(def.id);
  def.status = DefinitionStatus::kDraft;
  defs_[{def.type, def.id}].draft = std::move(def);
  // Drafts run only in tests; plans of published versions are unaffected.
  return Status::ok();
}

std::string FlowRegistry::revision_locked(UnitType type, const std::string& id) const {
  auto it = defs_.find({type, id});
  if (it == defs_.end() || (!it->second.draft && !it->second.published)) return "0";
  bool active = false;
  if (type == UnitType::kFlow) {
    if (auto s = slots_by_id_.find(id); s != slots_by_id_.end()) active = s->second->active.load(std::memory_order_acquire);
  }
  const std::string text = (it->second.draft ? it->second.draft->fingerprint : "-") + "/" +
                           (it->second.published ? it->second.published->fingerprint : "-") + (active ? "/a" : "/i");
  return fingerprint_of(Value(text));
}

std::string FlowRegistry::revision(UnitType type, std::string_view id) const {
  std::shared_lock lock(mu_);
  return revision_locked(type, std::string(id));
}

std::vector<StoredDefinition> FlowRegistry::all_stored() const {
  std::vector<std::pair<UnitType, std::string>> keys;
  {
    std::shared_lock lock(mu_);
    for (const auto& [key, v] : defs_) keys.push_back(key);
  }
  std::vector<StoredDefinition> out;
  for (const auto& [type, id] : keys) {
    if (std::optional<StoredDefinition> d = stored(type, id)) out.push_back(std::move(*d));
  }
  return out;
}

Status FlowRegistry::save_if_revision(Definition def, std::string_view expected, size_t max_definitions, bool* stale,
                                      std::string* revision) {
  std::unique_lock lock(mu_);
  *stale = false;
  const std::string current = revision_locked(def.type, def.id);
  if (current != expected) {
    *stale = true;
    *revision = current;
    return Error{"the definition changed since revision " + std::string(expected) + ": it is at revision " + current};
  }
  const UnitType type = def.type;
  const std::string id = def.id;
  // Checked and saved under one hold of the lock: of two saves at the same revision, one wins.
  FLOWRT_RETURN_IF_ERROR(save_locked(std::move(def), max_definitions));
  *revision = revision_locked(type, id);
  return Status::ok();
}

Status FlowRegistry::publish(std::string_view id, const CompileOptions& options, std::optional<UnitType> only) {
  std::unique_lock lock(mu_);
  for (UnitType type : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
    if (only && type != *only) continue;
    auto it = defs_.find({type, std::string(id)});
    if (it == defs_.end() || !it->second.draft) continue;
    Definition candidate = *it->second.draft;
    candidate.status = DefinitionStatus::kPublished;
    View view(*this, false);
    Compiler compiler(view, actions_, options);
    Diagnostics diags;
    if (!compiler.compile_unit(candidate, &diags)) return Error{diags.describe()};
    if (type == UnitType::kFlow) set_trigger_locked(candidate);
    it->second.published = std::move(candidate);
    it->second.draft.reset();
    bump_epoch();
    return Status::ok();
  }
  for (UnitType type : {UnitType::kFlow, UnitType::kSubflow, UnitType::kAction}) {
    if ((!only || type == *only) && defs_.count({type, std::string(id)})) return Status::ok();  // nothing to do
  }
  return Error{"no " + (only ? std::string(unit_type_name(*only)) : std::string("definition")) + " '" + std::string(id) + "'"};
}

Status FlowRegistry::activate(std::string_view id, const CompileOptions& options, TimeMs now, Activating what) {
  std::unique_lock lock(mu_);
  auto it = defs_.find({UnitType::kFlow, std::string(id)});
  if (it == defs_.end()) return Error{"no flow '" + std::string(id) + "'"};
  Versions& v = it->second;
  const bool from_draft = v.draft && (what == Activating::kDraftIfAny || !v.published);
  Definition candidate = from_draft ? *v.draft : *v.published;
  candidate.status = DefinitionStatus::kPublished;
  View view(*this, false);
  Compiler compiler(view, actions_, options);
  Diagnostics diags;
  std::shared_ptr<const Plan> plan = compiler.compile_flow(candidate, &diags);
  compiles_.fetch_add(1, std::memory_order_relaxed);
  if (!plan) return Error{"flow '" + std::string(id) + "' cannot be activated: " + diags.describe()};
  engine_log().debug("activated {}", plan->version);
  if (from_draft) {
    v.published = std::move(candidate);
    v.draft.reset();
    bump_epoch();
  }
  set_trigger_locked(*v.published);
  FlowSlot* s = slot_locked(std::string(id));
  s->set_cache(std::move(plan), "", epoch());
  if (!s->active.load()) {
    s->activated_at.store(s->stored_activated_at >= 0 ? s->stored_activated_at : now, std::memory_order_release);
  }
  s->stored_activated_at = -1;
  s->active.store(true, std::memory_order_release);
  return Status::ok();
}

Status FlowRegistry::deactivate(std::string_view id) {
  std::unique_lock lock(mu_);
  auto it = slots_by_id_.find(id);
  if (it == slots_by_id_.end()) return Error{"no flow '" + std::string(id) + "'"};
  it->second->active.store(false, std::memory_order_release);
  it->second->stored_activated_at = -1;
  return Status::ok();
}

FlowSlot* FlowRegistry::slot(std::string_view flow_id) const {
  std::shared_lock lock(mu_);
  auto it = slots_by_id_.find(flow_id);
  return it == slots_by_id_.end() ? nullptr : it->second;
}

FlowSlot* FlowRegistry::slot(uint32_t index) const {
  std::shared_lock lock(mu_);
  return index < slots_.size() ? slots_[index].get() : nullptr;
}

std::vector<FlowSlot*> FlowRegistry::active_flows() const {
  std::shared_lock lock(mu_);
  std::vector<FlowSlot*> out;
  for (const auto& s : slots_) {
    if (s->active.load(std::memory_order_acquire)) out.push_back(s.get());
  }
  return out;
}

std::vector<FlowSlot*> FlowRegistry::all_flows() const {
  std::shared_lock lock(mu_);
  std::vector<FlowSlot*> out;
  for (const auto& s : slots_) out.push_back(s.get());
  return out;
}

std::optional<Definition> FlowRegistry::definition(UnitType type, std::string_view id) const {
  std::shared_lock lock(mu_);
  View view(*this, false);
  const Definition* d = view.find(type, id);
  return d ? std::optional<Definition>(*d) : std::nullopt;
}

std::vector<Definition> FlowRegistry::all_definitions() const {
  std::shared_lock lock(mu_);
  std::vector<Definition> out;
  for (const auto& [key, v] : defs_) {
    if (v.published) out.push_back(*v.published);
    if (v.draft) out.push_back(*v.draft);
  }
  return out;
}

bool FlowRegistry::dependencies_current(const Plan& plan) const {
  View view(*this, false);
  for (const PlanDependency& d : plan.dependencies) {
    const Definition* def = view.find(d.type, d.id);
    if (!def || def->fingerprint != d.fingerprint || def->status != DefinitionStatus::kPublished) return false;
  }
  return true;
}

FlowRegistry::PlanResult FlowRegistry::plan_for(FlowSlot& slot, const CompileOptions& options) {
  const uint64_t now_epoch = epoch();
  {
    std::shared_ptr<const FlowSlot::PlanEntry> e = slot.cache();
    if (e && e->epoch == now_epoch) return PlanResult{e->plan, e->error};
  }
  // Something changed since the plan was checked: re-check its dependencies, and compile
  // only if the flow or something it uses really changed. One thread per flow does this;
  // the others wait and then find the plan checked.
  MutexLock compiling(slot.compile_mu);
  {
    std::shared_ptr<const FlowSlot::PlanEntry> e = slot.cache();
    if (e && e->epoch == now_epoch) return PlanResult{e->plan, e->error};
  }
  std::shared_lock lock(mu_);
  std::shared_ptr<const Plan> cached = slot.cached_plan();
  PlanResult result;
  if (cached && dependencies_current(*cached)) {
    result.plan = cached;
  } else {
    auto it = defs_.find({UnitType::kFlow, slot.id});
    if (it == defs_.end() || !it->second.published) {
      result.error = "flow '" + slot.id + "' has no published version";
    } else {
      View view(*this, false);
      // The published version's schedule was checked against min_schedule_interval when
      // it was published or activated; a limit raised since leaves it running (BEHAVIOUR.md).
      CompileOptions o = options;
      o.min_schedule_interval = 0;
      Compiler compiler(view, actions_, o);
      Diagnostics diags;
      result.plan = compiler.compile_flow(*it->second.published, &diags);
      compiles_.fetch_add(1, std::memory_order_relaxed);
      if (result.plan) {
        engine_log().debug("compiled {} just in time", result.plan->version);
      } else {
        result.error = diags.describe();
        engine_log().warn("flow {} no longer compiles: {}", slot.id, result.error);
      }
    }
  }
  slot.set_cache(result.plan, result.error, now_epoch);
  return result;
}

FlowRegistry::PlanResult FlowRegistry::plan_for_test(std::string_view flow_id, const CompileOptions& options,
                                                     Value* source) {
  std::shared_lock lock(mu_);
  auto it = defs_.find({UnitType::kFlow, std::string(flow_id)});
  if (it == defs_.end()) return PlanResult{nullptr, "no flow '" + std::string(flow_id) + "'"};
  const Definition& def = it->second.draft ? *it->second.draft : *it->second.published;
  if (source) *source = def.source;
  return compile_for_test(def, options);
}

FlowRegistry::PlanResult FlowRegistry::plan_for_stored_test(std::string_view flow_id, const Value& source,
                                                            const CompileOptions& options) {
  Definition def;
  Diagnostics diags;
  if (!read_definition(source, "", "", &def, &diags)) return PlanResult{nullptr, diags.describe()};
  if (def.type != UnitType::kFlow || def.id != flow_id) {
    return PlanResult{nullptr, "the definition kept is not one of flow '" + std::string(flow_id) + "'"};
  }
  def.file = def.label() + " (stored with its test run)";  // its compile errors name it
  std::shared_lock lock(mu_);
  return compile_for_test(def, options);
}

FlowRegistry::PlanResult FlowRegistry::compile_for_test(const Definition& def, const CompileOptions& options) const {
  CompileOptions o = options;
  o.allow_draft_dependencies = def.source["show_draft_actions"] == Value(true);
  View view(*this, o.allow_draft_dependencies);
  Compiler compiler(view, actions_, o);
  Diagnostics diags;
  PlanResult result;
  result.plan = compiler.compile_flow(def, &diags);
  if (!result.plan) result.error = diags.describe();
  return result;
}

void FlowRegistry::check_versions(const Versions& v, const CompileOptions& options, Diagnostics* diags,
                                  CheckMemo (&memos)[2], std::optional<DefinitionStatus> only) const {
  for (const std::optional<Definition>* version : {&v.published, &v.draft}) {
    if (!version->has_value()) continue;
    const Definition& def = **version;
    if (only && def.status != *only) continue;
    // A draft may use drafts (it is work in progress); a draft flow only with
    // show_draft_actions, as test_flow would run it. Published ones may not.
    CompileOptions o = options;
    o.allow_draft_dependencies =
        def.status == DefinitionStatus::kDraft &&
        (def.type != UnitType::kFlow || def.source["show_draft_actions"] == Value(true));
    View view(*this, o.allow_draft_dependencies);
    Compiler compiler(view, actions_, o);
    compiler.check_unit(def, diags, &memos[o.allow_draft_dependencies ? 1 : 0]);
  }
}

void FlowRegistry::check_all(const CompileOptions& options, Diagnostics* diags) const {
  std::shared_lock lock(mu_);
  CheckMemo memos[2];
  for (const auto& [key, v] : defs_) check_versions(v, options, diags, memos);
}

void FlowRegistry::check(const std::vector<VersionKey>& which, const CompileOptions& options, Diagnostics* diags) const {
  std::shared_lock lock(mu_);
  CheckMemo memos[2];
  for (const VersionKey& key : which) {
    auto it = defs_.find({key.type, key.id});
    if (it != defs_.end()) check_versions(it->second, options, diags, memos, key.status);
  }
}

std::shared_ptr<const TriggerIndex> FlowRegistry::build_index() const {
  auto index = std::make_shared<TriggerIndex>();
  std::shared_lock lock(mu_);
  for (const auto& s : slots_) {
    if (!s->active.load(std::memory_order_acquire)) continue;
    FlowSlot::Trigger trigger = s->trigger();
    if (!trigger.spec) continue;
    TriggerEntry e;
    e.flow = s->index;
    e.handle = s.get();
    e.flow_id = s->id;
    e.spec = std::move(trigger.spec);
    index->add(std::move(e));
  }
  return index;
}

std::optional<StoredDefinition> FlowRegistry::stored(UnitType type, std::string_view id) const {
  std::shared_lock lock(mu_);
  auto it = defs_.find({type, std::string(id)});
  if (it == defs_.end()) return std::nullopt;
  StoredDefinition d;
  d.type = std::string(unit_type_name(type));
  d.id = std::string(id);
  if (it->second.draft) d.draft = it->second.draft->source;
  if (it->second.published) {
    d.published = it->second.published->source;
    d.published_fingerprint = it->second.published->fingerprint;
  }
  if (type == UnitType::kFlow) {
    if (auto s = slots_by_id_.find(id); s != slots_by_id_.end()) {
      d.active = s->second->active.load(std::memory_order_acquire);
      d.activated_at = s->second->activated_at.load(std::memory_order_acquire);
    }
  }
  return d;
}

std::vector<std::string> FlowRegistry::restore(const std::vector<StoredDefinition>& stored) {
  std::vector<std::string> problems;
  std::vector<Definition> defs;
  for (const StoredDefinition& s : stored) {
    for (const Value* source : {&s.published, &s.draft}) {
      if (source->is_null()) continue;
      Diagnostics diags;
      Definition d;
      if (!read_definition(*source, "", "", &d, &diags) || unit_type_name(d.type) != s.type || d.id != s.id) {
        problems.push_back(s.type + " '" + s.id + "': its stored definition cannot be read back: " + diags.describe());
        continue;
      }
      // The source may say otherwise (a draft published since); the store knows which it is.
      d.status = source == &s.published ? DefinitionStatus::kPublished : DefinitionStatus::kDraft;
      // It has no file: its compile errors name it instead.
      d.file = d.label() + " (stored)";
      defs.push_back(std::move(d));
    }
  }
  add(std::move(defs));
  std::unique_lock lock(mu_);
  for (const StoredDefinition& s : stored) {
    if (s.type == "flow" && s.active) slot_locked(s.id)->stored_activated_at = s.activated_at;
  }
  return problems;
}

}  // namespace flowrt
