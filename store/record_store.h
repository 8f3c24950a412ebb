// RecordStore: the tables of records (SPEC section 2).
//
// Records are immutable Values: an update makes a new version and shares the unchanged
// fields, so a context record that captured an earlier version keeps it cheaply. Tables
// need no declaration and list records in insertion order. Equality lookups build a field
// index on first use and keep it current.
//
// Thread-safety: reads (get, find, records, table_names) may run on any thread at any
// time; each table has a reader-writer lock, so reading one table never waits for writes
// to another. Writes (insert, update, commit_*, remove) must be serialized by the caller:
// the Dispatcher makes every one of them under its commit lock (the one commit path),
// which it always takes before a table's; build_insert and build_update read no table
// and run before it.
//
// Generated sys_ids follow commit order: the N-th generated id committed is a function of
// the seed and N alone, so the same operations in the same commit order give the same ids.
// build_insert numbers a generated id optimistically (the next number not yet committed);
// commit_insert takes that number only if it is still the next one, and otherwise asks the
// caller to build again, so no id is ever numbered out of commit order.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actions/action.h"
#include "plans/result.h"
#include "plans/time.h"
#include "plans/value.h"
#include "store/field_index.h"
#include "store/id_index.h"
#include "base/thread_annotations.h"

namespace flowrt {

struct RecordChange {
  Value record;    // after
  Value previous;  // before
  bool changed;    // did any value change (engine fields aside)
  // Where `previous` was read (RecordStore::get's `row`): commit_update looks there first.
  // Only a hint: a row that no longer holds `previous` is found again by sys_id.
  uint32_t row_hint = UINT32_MAX;
};

// Where a caller saw a record last: `row` of its table, holding `version`. Only a hint:
// get() reads that row when it still holds that very version of the record with the
// sys_id asked for, and looks the sys_id up otherwise, so the answer is the same either
// way. A context carries one for its trigger record (Context::trigger_row).
struct RowHint {
  uint32_t row = UINT32_MAX;
  const Value* version = nullptr;
};

class RecordStore {
 public:
  explicit RecordStore(uint64_t seed = 0);

  // Adds a record; `values` may carry sys_id. Engine fields are set here. REQUIRES: writes
  // serialized (see the top).
  Result<Value> insert(std::string_view table, const Value& values, TimeMs now);
  // Merges `patch` into the record. An update that changes nothing still counts.
  Result<RecordChange> update(std::string_view table, std::string_view sys_id, const Value& patch, TimeMs now);

  // The two halves of insert and update, so that the expensive half can run without the
  // store's guard. build_* read no table and may run on any thread at any time.
  // build_insert sets *id_number to the number of the sys_id it generated (0: the values
  // gave one); commit_insert needs it back. `by` (a string: the caller of an API write)
  // is written as sys_created_by and sys_updated_by; a write without one has neither, and
  // an update without one keeps sys_created_by and drops sys_updated_by.
  Result<Value> build_insert(const Value& values, TimeMs now, uint64_t* id_number = nullptr, const Value& by = Value());
  // Installs a record built by build_insert at `position` (its place in the store: the
  // insert's commit seq). False (nothing installed) when its generated
  // id is no longer the next one, or a record given that id took it meanwhile: build it
  // again (the taken number is then skipped). An error when a given sys_id is taken.
  // *row (when given) receives the row it was installed at (a RowHint for later reads).
  Result<bool> commit_insert(std::string_view table, const Value& record, uint64_t id_number, uint64_t position = 0,
                             uint32_t* row = nullptr);
  static Result<RecordChange> build_update(const Value& current, std::string_view sys_id, const Value& patch,
                                           TimeMs now, const Value& by = Value());
  // Installs change.record if the record is still change.previous; false when another
  // update came first (build again from the new version). *position (when given) receives
  // the record's position, *row (when given) its row.
  bool commit_update(std::string_view table, std::string_view sys_id, const RecordChange& change,
                     uint64_t* position = nullptr, uint32_t* row = nullptr);
  // Removes the record and returns it as it was; *position (when given) receives where it was.
  Result<Value> remove(std::string_view table, std::string_view sys_id, uint64_t* position = nullptr);

  // The max_record_value_bytes budget: an error naming the first field of `values` (an
  // object) whose value is larger than `max_bytes` (a string counts its bytes, any other
  // value its compact JSON). Stops measuring a value once it is past the limit.
  static Status check_value_sizes(const Value& values, size_t max_bytes);

  // The record, or null; `row`, when given, receives where it was (RecordChange::row_hint).
  // `hint` (see RowHint) may save the lookup by sys_id; it never changes the answer.
  Value get(std::string_view table, std::string_view sys_id, uint32_t* row = nullptr, RowHint hint = {}) const;
  // Records matching the query, as an array (see RecordQuery).
  Result<Value> find(const RecordQuery& query);

  std::vector<std::string> table_names() const;  // in the order tables were first written
  std::vector<Value> records(std::string_view table) const;
  size_t record_count() const { return total_.load(std::memory_order_relaxed); }

  // ---- the state a Store keeps (store/store.h) ----
  // The sys_id generator: its seed and how many sys_ids it made.
  uint64_t sys_id_seed() const { return seed_; }
  uint64_t sys_ids_generated() const { return ids_.load(std::memory_order_relaxed); }
  // A table as a Store gives it back: its records in insertion order, each with its
  // position (parallel to records; empty: 1, 2, ...).
  struct RestoredTable {
    std::string name;
    std::vector<Value> records;
    std::vector<uint64_t> positions;
  };
  // Before any other use: the generator goes on from a stored state, and the tables are
  // filled again in the order given, each with its records in insertion order.
  void restore(uint64_t seed, uint64_t generated, std::vector<RestoredTable> tables);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Tables are never removed: a Table* stays valid for the store's life.
  struct Table {
    Table() : by_id([this](uint32_t row) NO_THREAD_SAFETY_ANALYSIS { return rows[row].members()[0].value.as_string(); }) {}
    std::string name;  // read by every find_table: not on the line of the lock's word
    alignas(64) mutable SharedMutex mu;
    // Null where deleted; sys_id is every record's first member. A deque: growing never
    // moves the rows already there (no pause to copy a million of them).
    std::deque<Value> rows GUARDED_BY(mu);
    // Each row's position in the store (parallel to rows): what a durable store finds the
    // record by when it is updated or removed.
    std::deque<uint64_t> positions GUARDED_BY(mu);
    IdIndex by_id GUARDED_BY(mu);
    std::unordered_map<std::string, FieldIndex, Hash, std::equal_to<>> indexes GUARDED_BY(mu);
    size_t live GUARDED_BY(mu) = 0;
  };

  Table& table(std::string_view name) EXCLUDES(tables_mu_);
  Table* find_table(std::string_view name) const EXCLUDES(tables_mu_);
  // The sys_id numbered `n` (1, 2, ...): two splitmix64 draws from the seed and n.
  Value sys_id_number(uint64_t n) const;
  static Value time_value(TimeMs t);
  FieldIndex& index(Table& t, std::string_view field) REQUIRES(t.mu);
  // Makes sure `field` of `t` is indexed; takes the table's lock exclusively if not yet.
  void ensure_index(Table& t, std::string_view field) EXCLUDES(t.mu);
  void index_row(Table& t, const Value* before, const Value* after, uint32_t row) REQUIRES(t.mu);
  void compact(Table& t) REQUIRES(t.mu);
  // find's scan: the rows of `index`'s bucket for `eq_value` (every row when null) that
  // meet the query, in insertion order, then ordered and limited as it asks.
  static Result<Value> matching(const Table& t, const RecordQuery& q, const Value& eq_value, Scope scope,
                                const FieldIndex* index) REQUIRES_SHARED(t.mu);

  uint64_t seed_;
  const uint64_t instance_;  // tells stores apart in per-thread caches
  // Generated ids committed so far: written by commit_insert (writes are serialized), read
  // by build_insert on any thread. On a line of their own, apart from what every lookup reads.
  alignas(64) std::atomic<uint64_t> ids_{0};
  std::atomic<size_t> total_{0};
  alignas(64) mutable SharedMutex tables_mu_;
  std::unordered_map<std::string, std::unique_ptr<Table>, Hash, std::equal_to<>> tables_ GUARDED_BY(tables_mu_);
  std::vector<Table*> order_ GUARDED_BY(tables_mu_);
};

// A total order over values for sorting: null < booleans < numbers < strings < arrays < objects.
int order_values(const Value& a, const Value& b);

}  // namespace flowrt
