// Dispatcher's writes by `where` (update_where, remove_where): every record a condition
// matches, in insertion order, a commit each (each starts its own flows), under one hold
// of the commit lock; the commits go to the journal as one entry, so a durable store
// writes them in one transaction, all or none. Under the commit lock, as the rest of the
// dispatcher's state (dispatcher.h).
#include <string>
#include <vector>

#include "runtime/dispatcher.h"
#include "runtime/engine_core.h"

namespace flowrt {

Result<size_t> Dispatcher::update_where(std::string_view table, const Condition& where, const Value& values,
                                        Origin origin) {
  FLOWRT_RETURN_IF_ERROR(RecordStore::check_value_sizes(values, core_.props().max_record_value_bytes));
  Batch batch(core_);
  SpinMutexLock lock(mu_);
  const uint64_t commits_before = last_commit_;
  one_entry_ = true;
  Result<size_t> done = update_where_locked(table, where, values, origin, &batch);
  end_one_entry(origin, commits_before);
  return done;
}

Result<size_t> Dispatcher::remove_where(std::string_view table, const Condition& where, Origin origin) {
  Batch batch(core_);
  SpinMutexLock lock(mu_);
  const uint64_t commits_before = last_commit_;
  one_entry_ = true;
  Result<size_t> done = remove_where_locked(table, where, origin, &batch);
  end_one_entry(origin, commits_before);
  return done;
}

void Dispatcher::end_one_entry(Origin origin, uint64_t commits_before) {
  one_entry_ = false;
  // What did commit, also when a later commit failed; nothing when nothing committed.
  if (last_commit_ != commits_before) journal_locked(origin.context);
}

Result<size_t> Dispatcher::update_where_locked(std::string_view table, const Condition& where, const Value& values,
                                               Origin origin, Batch* batch) {
  RecordQuery q;
  q.table = table;
  q.condition = &where;
  Result<Value> found = store_.find(q);
  if (!found) return found.error();
  // Every change and start first, so that a full queue refuses them all. Every write
  // commits under the commit lock, so the records read here stay current until their
  // own commit below.
  struct Planned {
    RecordChange change;
    std::vector<Prepared> prepared;
  };
  std::vector<Planned> planned;
  size_t starts = 0;
  for (const Value& r : found->items()) {
    Result<RecordChange> change =
        RecordStore::build_update(r, r["sys_id"].as_string(), values, core_.clock.now(), origin.caller);
    if (!change) return change.error();
    Planned& p = planned.emplace_back(Planned{std::move(change).value(), {}});
    prepare_record(table, RecordOperation::kUpdate, p.change.record, &p.change.previous, p.change.changed, origin.caller,
                   &p.prepared);
    starts += p.prepared.size();
  }
  FLOWRT_RETURN_IF_ERROR(check_queue_room(starts));
  batch->reserve(starts);
  size_t n = 0;
  for (Planned& p : planned) {
    uint64_t position = 0;
    uint32_t row = UINT32_MAX;
    if (!store_.commit_update(table, p.change.record["sys_id"].as_string(), p.change, &position, &row)) {
      // Cannot happen while every write holds the commit lock; if it ever did, say so
      // rather than report a write that was not stored.
      return Error{"internal error: record " + std::string(p.change.record["sys_id"].as_string()) + " of " +
                   std::string(table) + " changed during update_where; " + std::to_string(n) +
                   " records were updated"};
    }
    commit_update_locked(table, p.change, position, row, p.prepared, origin, batch);
    ++n;
  }
  return n;
}

Result<size_t> Dispatcher::remove_where_locked(std::string_view table, const Condition& where, Origin origin,
                                               Batch* batch) {
  RecordQuery q;
  q.table = table;
  q.condition = &where;
  Result<Value> found = store_.find(q);
  if (!found) return found.error();
  // Every start first, so that a full queue refuses the whole delete.
  std::vector<std::vector<Prepared>> prepared(found->size());
  size_t starts = 0;
  for (size_t i = 0; i < found->size(); ++i) {
    prepare_record(table, RecordOperation::kDelete, found->at(i), nullptr, true, origin.caller, &prepared[i]);
    starts += prepared[i].size();
  }
  FLOWRT_RETURN_IF_ERROR(check_queue_room(starts));
  batch->reserve(starts);
  size_t n = 0;
  for (size_t i = 0; i < found->size(); ++i) {
    Value removed;
    if (Status s = commit_remove_locked(table, found->at(i)["sys_id"].as_string(), prepared[i], origin, batch,
                                        &removed);
        !s) {
      return Error{"internal error: " + s.message() + " during remove_where; " + std::to_string(n) +
                   " records were removed"};
    }
    ++n;
  }
  return n;
}

}  // namespace flowrt
