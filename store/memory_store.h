// MemoryStore: a Store whose state lives in this process only (the default store).
//
// The engine sends it nothing: with it, the engine's own memory is the only copy of its
// state, exactly as before stores existed, and nothing is written twice. As a Store it is
// complete all the same: it applies the batches written to it and load() gives them back,
// so the store conformance suite runs over it as the reference implementation and a test
// can hand one state from one engine to the next.
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <map>
#include <string>
#include <utility>

#include "base/thread_annotations.h"
#include "store/store.h"

namespace flowrt {

class MemoryStore final : public Store {
 public:
  std::string_view kind() const override { return "memory"; }
  std::string describe() const override { return "memory"; }
  bool durable() const override { return false; }

  using Store::load;
  Result<StoredState> load(bool with_contexts) override EXCLUDES(mu_);
  Result<std::optional<StoredContext>> load_context(uint64_t seq) override EXCLUDES(mu_);
  Result<std::vector<StoredContext>> list_contexts(const ContextQuery& query) override EXCLUDES(mu_);
  Result<Value> load_definition_version(std::string_view type, std::string_view id,
                                        std::string_view fingerprint) override EXCLUDES(mu_);
  Status write(const StoreBatch& batch) override EXCLUDES(mu_);
  Status set_sync_mode(SyncMode mode) override EXCLUDES(mu_);

 private:
  struct Table {
    std::map<uint64_t, std::string> order;                           // position -> sys_id
    std::map<std::string, std::pair<uint64_t, Value>, std::less<>> rows;  // sys_id -> (position, record)
  };
  void apply(const StoreChange& change) REQUIRES(mu_);
  void prune(const HistoryPrune& p) REQUIRES(mu_);

  Mutex mu_;
  bool written_ GUARDED_BY(mu_) = false;
  StoreCounters counters_ GUARDED_BY(mu_);
  std::vector<std::string> table_order_ GUARDED_BY(mu_);
  std::map<std::string, Table, std::less<>> tables_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, StoredDefinition> definitions_ GUARDED_BY(mu_);
  // Every published version: (type, id, fingerprint) -> its definition as written.
  std::map<std::tuple<std::string, std::string, std::string>, Value, std::less<>> versions_ GUARDED_BY(mu_);
  std::map<uint64_t, StoredContext> contexts_ GUARDED_BY(mu_);
  std::map<std::string, Value, std::less<>> locks_ GUARDED_BY(mu_);
  std::map<std::tuple<std::string, std::string, std::string>, bool> run_once_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, KeyedWritePut> keyed_writes_ GUARDED_BY(mu_);  // by (caller, key)
  std::vector<RecoveryNote> recoveries_ GUARDED_BY(mu_);
  SyncMode sync_ GUARDED_BY(mu_) = SyncMode::kNormal;
};

}  // namespace flowrt
