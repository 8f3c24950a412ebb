// FlowRegistry: every definition (draft and published versions), the flows' lifecycle, and
// the plan cache.
//
// Thread-safety: definitions and lifecycle are guarded by mu_ (readers share it; saving,
// publishing, activating take it alone). The plan cache is per flow (FlowSlot::cache):
// plan_for returns the cached plan while no definition has changed since it was checked
// (one epoch compare), re-checks the plan's dependencies after a change, and compiles just
// in time only when the flow or something it uses really changed. Plans are immutable and
// shared: a context keeps the plan it started with.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/definition.h"
#include "store/store.h"
#include "triggers/trigger_index.h"
#include "runtime/flow_slot.h"

namespace flowrt {

class FlowRegistry {
 public:
  explicit FlowRegistry(const ActionTypeLookup* actions);
  ~FlowRegistry();

  // ---- definitions and lifecycle ----
  // Adds definitions as written: published or draft per their status. Replaces existing
  // versions of the same status.
  void add(std::vector<Definition> defs);
  // Stores `def` as the draft of its id (SPEC "save"). Refused when it is a new draft and
  // the registry already holds `max_definitions` definitions.
  Status save(Definition def, size_t max_definitions);
  // save, only if the id's revision is `expected` ("0" when it has no definition yet).
  // When it is not, nothing is saved and *stale is set. *revision is the revision after
  // (or, when stale, the current one).
  Status save_if_revision(Definition def, std::string_view expected, size_t max_definitions, bool* stale,
                          std::string* revision);
  // A definition id's revision: 16 hex digits that change whenever its draft, published
  // version or active flag does ("0" for an id with no definition).
  std::string revision(UnitType type, std::string_view id) const;
  // Every definition id, as stored.
  std::vector<StoredDefinition> all_stored() const;
  // Makes the draft of `id` the published version, after checking that it compiles.
  // For flows, also after checking the flow compiles. `type` may be null: any type.
  // With `type`, the definition of that type only; without, the first of flow, subflow,
  // action that has a draft.
  Status publish(std::string_view id, const CompileOptions& options, std::optional<UnitType> type = std::nullopt);
  // What an activation makes active: the draft when there is one (published by it, as a
  // user's activate does), or the published version, leaving a draft a draft (a load of
  // the flow's file, or a restart that makes a flow active again).
  enum class Activating : uint8_t { kDraftIfAny, kPublished };
  // Compiles the version `what` says and makes it active.
  Status activate(std::string_view id, const CompileOptions& options, TimeMs now,
                  Activating what = Activating::kDraftIfAny);
  Status deactivate(std::string_view id);

  // ---- lookups ----
  FlowSlot* slot(std::string_view flow_id) const;
  FlowSlot* slot(uint32_t index) const;
  std::vector<FlowSlot*> active_flows() const;
  std::vector<FlowSlot*> all_flows() const;
  // The published (or, failing that, draft) definition, copied.
  std::optional<Definition> definition(UnitType type, std::string_view id) const;
  std::vector<Definition> all_definitions() const;  // published and drafts
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // How many times a flow's plan was compiled to run (activation or just in time).
  uint64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }

  // ---- plans ----
  struct PlanResult {
    std::shared_ptr<const Plan> plan;
    std::string error;  // the compile error, when plan is null
  };
  // The plan new contexts of this flow run (published versions), from the cache.
  PlanResult plan_for(FlowSlot& slot, const CompileOptions& options);
  // That plan when the cache holds it checked against every change so far, without
  // compiling or reading the definitions; null when plan_for must be asked (something
  // changed since, or the flow does not compile).
  std::shared_ptr<const Plan> current_plan(const FlowSlot& slot) const { return slot.plan_if_current(epoch()); }
  // Compiles the flow's current version for test_flow: the draft if there is one, with
  // draft dependencies when it shows draft actions. Not cached. With `source`, sets it to
  // the definition compiled, as written (null when there is no such flow).
  PlanResult plan_for_test(std::string_view flow_id, const CompileOptions& options, Value* source = nullptr);
  // Compiles `source`, a definition of flow `flow_id` that plan_for_test compiled before (a
  // test run kept in the store), as plan_for_test compiles the current version: what it
  // uses is resolved as it would be now. Not cached.
  PlanResult plan_for_stored_test(std::string_view flow_id, const Value& source, const CompileOptions& options);
  // Compiles every definition (flows and, alone, subflows and actions), for validate.
  void check_all(const CompileOptions& options, Diagnostics* diags) const;
  // Compiles these versions only (against everything registered): a draft beside a loaded
  // published version is not checked (drafts are not compiled until published).
  struct VersionKey {
    UnitType type;
    std::string id;
    DefinitionStatus status;
  };
  void check(const std::vector<VersionKey>& which, const CompileOptions& options, Diagnostics* diags) const;

  // A new trigger index over the active flows.
  std::shared_ptr<const TriggerIndex> build_index() const;

  // ---- what a durable store keeps (store/store.h, StoredDefinition) ----
  // Definition (type, id): its draft, its published version and its flow's lifecycle (the
  // last schedule tick is not the registry's: left -1). nullopt when there is none.
  std::optional<StoredDefinition> stored(UnitType type, std::string_view id) const;
  // Adds stored definitions as they were (drafts and published versions; nothing is
  // activated). Returns a message for each that cannot be read back.
  std::vector<std::string> restore(const std::vector<StoredDefinition>& defs);

 private:
  struct Versions {
    std::optional<Definition> draft;
    std::optional<Definition> published;
  };
  class View;  // DefinitionLookup over published (or draft) versions; REQUIRES mu_ held
  // Compiles `def` for test_flow (with draft dependencies when it shows draft actions).
  // REQUIRES mu_ held.
  PlanResult compile_for_test(const Definition& def, const CompileOptions& options) const;
  // Both versions, or only the one of `only` when given. memos[d] is what the checks made
  // so far under this lock learnt, for d = whether drafts may be used (CheckMemo).
  void check_versions(const Versions& v, const CompileOptions& options, Diagnostics* diags, CheckMemo (&memos)[2],
                      std::optional<DefinitionStatus> only = std::nullopt) const;

  FlowSlot* slot_locked(const std::string& id);
  // Sets the slot of flow `published` to its trigger (FlowSlot::trigger). REQUIRES mu_
  // held exclusively.
  void set_trigger_locked(const Definition& published);
  std::string revision_locked(UnitType type, const std::string& id) const;  // REQUIRES mu_ held
  Status save_locked(Definition def, size_t max_definitions);               // REQUIRES mu_ held
  bool dependencies_current(const Plan& plan) const;  // REQUIRES mu_ held
  void bump_epoch() { epoch_.fetch_add(1, std::memory_order_acq_rel); }

  const ActionTypeLookup* actions_;
  mutable std::shared_mutex mu_;
  std::map<std::pair<UnitType, std::string>, Versions> defs_;  // guarded by mu_
  std::map<std::string, FlowSlot*, std::less<>> slots_by_id_;    // guarded by mu_
  std::vector<std::unique_ptr<FlowSlot>> slots_;                 // guarded by mu_; slots never move
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> compiles_{0};
};

}  // namespace flowrt
