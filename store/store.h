// Store: where the engine's state outlives the engine (docs/DURABILITY.md).
//
// The engine keeps its working state in memory (the RecordStore, the flow registry, the
// contexts); a Store receives every change of that state as StoreBatches, in the order of
// the one commit path (commit sequence order), and gives it all back when an engine opens
// it again. Implementations: MemoryStore (store/memory_store.h: in this process only, the
// default), SqliteStore (store/sqlite_store.h: a SQLite file in WAL mode) and PostgresStore
// (store/postgres_store.h: a PostgreSQL database). One conformance suite
// (tests/store/store_conformance_test.cpp) runs over all three.
//
// The batch carries plain data only (Values, strings, numbers): the store knows nothing of
// the engine's classes, and store/ never includes runtime/. Contracts every implementation
// keeps:
//  - write() applies a whole batch or none of it (one transaction), and batches in the order
//    they are written; once write() returns OK the batch is as durable as the store's
//    SyncMode says (SqliteStore: kFull survives a power cut, kNormal a crash of the
//    process, kOff a crash of the process once the OS has the pages);
//  - load() returns the state as of the last batch written: counters, tables in the order
//    first written and their records in insertion order, definitions, the contexts that
//    have not ended (and any ended one whose record is missing) by seq, locks, run-once
//    marks, recovery reports, keyed writes. Ended contexts (history) are not loaded: load_context and
//    list_contexts read them when asked, so an engine's memory does not grow with them;
//    load(false) leaves out the rest of the contexts too, for a reader that pages through
//    them (ContextQuery::loaded_only);
//  - records carry their position (RecordPut::position): an update or remove names the
//    record by it as well as by sys_id (the sqlite store finds records by it, and refuses
//    a put where another record stands);
//  - an ended context with its record keeps its trigger without the record copies
//    (ended_trigger);
//  - a HistoryPrune in a batch deletes ended contexts past an age or a count, never one
//    that has not ended.
//  - a KeyedWritePut replaces what was kept for its (caller, key); a KeyedWritePrune
//    forgets the keyed writes applied or answered before its time.
// Thread-safety: one writer at a time (the engine's journal thread), loads before writes;
// load_context and list_contexts may be called from any thread at any time, also while a
// batch is written, and see the state as of a batch written whole (never half of one).
// Ownership: the engine owns its store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "plans/result.h"
#include "plans/time.h"
#include "plans/value.h"
#include "store/json_doc.h"

namespace flowrt {

// How a store makes a batch durable (the `durability` property: full | normal | off).
enum class SyncMode : uint8_t {
  kFull,    // synced to disk with every batch: survives a power cut
  kNormal,  // written with every batch, synced at checkpoints: survives a crash of the process
  kOff,     // written with every batch, never synced: survives a crash of the process
};
std::string_view sync_mode_name(SyncMode m);
bool parse_sync_mode(std::string_view name, SyncMode* out);

// The engine's counters. Each only grows; a batch carries them as of its last change.
struct StoreCounters {
  uint64_t commit_seq = 0;     // the last commit sequence number taken
  uint64_t context_seq = 0;    // the last context seq given
  int64_t fencing_token = 0;   // the last fencing token issued
  uint64_t sys_id_seed = 0;    // the seed of generated sys_ids
  uint64_t sys_id_count = 0;   // sys_ids generated so far with that seed
  TimeMs clock = -1;           // the engine clock when the batch was made (-1: not known)
};

// One definition id: its draft and published version, and its flow's lifecycle.
struct StoredDefinition {
  std::string type;            // "flow", "subflow", "action"
  std::string id;
  Value draft;                 // the draft as written (JSON object), or null
  Value published;             // the published version as written, or null
  std::string published_fingerprint;  // of `published`, "" when none
  bool active = false;         // flows: active (its triggers start it)
  TimeMs activated_at = 0;     // flows: when it became active (schedules count from it)
  TimeMs last_tick = -1;       // flows with a schedule: the last occurrence fired
};

// Context statuses as stored: "queued" (its trigger event committed, not started yet), then
// the record's statuses: "in_progress", "waiting", "completed", "cancelled", "error".
inline constexpr std::string_view kQueuedStatus = "queued";
bool is_final_context_status(std::string_view status);
// The seq of a context id ("ctx-N": N, its seq); nothing when `id` is not one.
std::optional<uint64_t> context_seq_of(std::string_view id);
// What a context that ended with its record keeps of its trigger event: all but the copies
// of the triggering record ("record", "previous": the record as it was then, and before)
// and a test run's definition ("test": the version it ran, runtime/stored_context.h); the
// sys_id names the record, the record's plan_version the version, and the context's record
// shows what the flow read and did. Keeps the history of a typical flow within half a
// database page per context.
Value ended_trigger(const Value& trigger);

// One context: its identity from the start, its record as last written.
struct StoredContext {
  uint64_t seq = 0;
  std::string id;              // "ctx-<seq>"
  std::string flow;
  std::string status;          // kQueuedStatus or a record status
  uint64_t commit_seq = 0;     // the commit that queued it
  // The trigger event, as in a record's "trigger"; once the context ended with its record,
  // without the copies of the triggering record (ended_trigger).
  Value trigger;
  Value inputs;                // API inputs (object) or null
  Value cause;                 // {"context", "flow", "chain": [...]} or null
  Value run_key;               // the run-options key it counts under, or null
  TimeMs started = -1;
  TimeMs ended = -1;
  JsonDoc record;              // the context record (SPEC section 10) as last written, or null
  // A live context's checkpoint (runtime/checkpoint.h: where it is, its data, what it waits
  // for), as of its last durable step; null once it ended or before its first checkpoint.
  // One that cannot be read back loads as {"unreadable": "why"}.
  Value checkpoint;
};

// A lock as the engine shows it (Engine::locks): {"name", "limit", "held", "last_token",
// "holders", "waiters"}.
struct StoredLock {
  std::string name;
  Value state;
};

// ---- the changes a batch carries ----
struct RecordPut {             // an insert or update: the record as it now is
  std::string table;
  Value record;                // sys_id is its first member
  // The record's place among all records: its insert's commit seq (so insertion order, and
  // no two records share one); an update carries the position of the record it changes.
  uint64_t position = 0;
};
struct RecordRemove {
  std::string table;
  std::string sys_id;
  uint64_t position = 0;       // the removed record's (RecordPut::position)
};
struct DefinitionPut {         // the definition id's state, replacing what was stored (but for
  StoredDefinition definition;  // last_tick: a stored one is kept; ScheduleTick moves it)
};
struct ScheduleTick {          // a schedule occurrence fired
  std::string flow;
  TimeMs at = 0;
};
struct ContextPut {            // a context queued: its whole row
  StoredContext context;
};
struct ContextUpdate {         // a context moved on: its status, times and (when not null) record
  uint64_t seq = 0;
  std::string status;
  TimeMs started = -1;         // -1: unchanged
  TimeMs ended = -1;           // -1: unchanged
  JsonDoc record;              // null: unchanged
  Value checkpoint;            // null: unchanged; a final status forgets the stored one
};
struct LockPut {               // a lock's state now; null state: the lock is free and forgotten
  std::string name;
  Value state;
};
struct RunOncePut {            // run options: whether `flow` ran for the record (run: once)
  std::string table;
  std::string sys_id;
  std::string flow;            // "": every flow (a delete forgets them all)
  bool ran = false;
};
struct RecoveryNote {          // what an engine did when it opened the store
  TimeMs at = 0;
  Value report;
};
struct HistoryPrune {          // history_retention: deletes ended contexts (completed, cancelled,
  TimeMs ended_before = -1;    // error) that ended before this (-1: none by age), and
  uint64_t keep = 0;           // all but the `keep` newest by seq (0: none by count)
};
// A write sent with an idempotency key, as a single server keeps it (runtime/keyed_writes.h):
// what the same write sent again must get. Replaces what was kept for (caller, key).
struct KeyedWritePut {
  std::string caller;          // who sent it (the token's name)
  std::string key;             // the client's Idempotency-Key
  std::string request;         // what was sent (a digest of method, target and body)
  int status = 0;              // the answer's status; 0: applied, but not answered (yet)
  std::string headers;         // the answer's headers that matter, as a JSON object
  std::string body;            // the answer's
  TimeMs at = 0;               // when it was applied or answered
};
struct KeyedWritePrune {       // forgets the keyed writes whose `at` is before this
  TimeMs before = 0;
};
using StoreChange = std::variant<RecordPut, RecordRemove, DefinitionPut, ScheduleTick, ContextPut, ContextUpdate,
                                 LockPut, RunOncePut, RecoveryNote, HistoryPrune, KeyedWritePut, KeyedWritePrune>;

// What write() applies in one transaction.
struct StoreBatch {
  std::vector<StoreChange> changes;  // in commit order
  StoreCounters counters;            // as of the last change
  // The highest operation number (OperationTag, runtime/commit.h) among the batch's
  // commits, 0 when none has one: a cluster's leader applies the operations other nodes
  // forwarded under their inbox number, and the postgresql store records it in the same
  // transaction as their effects (store/postgres_cluster.h), so that a new leader applies
  // each exactly once. The other stores ignore it.
  uint64_t applied_op = 0;
  // The operations among them that started a context (a call or a test run), with its id,
  // in commit order: the postgresql store keeps each with its inbox entry, so that a new
  // leader answering the operation without applying it again names the context. The other
  // stores ignore them.
  std::vector<std::pair<uint64_t, std::string>> operations_started;
};

// Everything a store holds, as load() returns it.
struct StoredState {
  bool fresh = true;                 // nothing was ever written (a new store)
  StoreCounters counters;
  struct Table {
    std::string name;
    std::vector<Value> records;      // in insertion order
    std::vector<uint64_t> positions; // each record's (RecordPut::position), parallel to records
  };
  std::vector<Table> tables;         // in the order first written
  std::vector<StoredDefinition> definitions;  // by (type, id)
  std::vector<StoredContext> contexts;        // not ended (and ended without a record), by seq
  std::vector<StoredLock> locks;              // by name
  std::vector<RunOncePut> run_once;           // every (record, flow) that ran (ran = true)
  std::vector<RecoveryNote> recoveries;       // oldest first
  std::vector<KeyedWritePut> keyed_writes;    // by (caller, key)
};

// Which contexts list_contexts returns: those matching every field given, in seq order.
struct ContextQuery {
  std::string flow;            // "": every flow
  std::string status;          // "": any status
  bool ended_only = false;     // only ended ones (completed, cancelled, error)
  // Only those load() gives: not ended, or ended without their record.
  bool loaded_only = false;
  uint64_t after_seq = 0;      // only seqs above this (the last seq of the previous page)
  uint64_t up_to_seq = UINT64_MAX;  // only seqs up to this
  size_t limit = 1000;         // at most this many (a page)
  // Newest first: the page is the highest seqs in the range, in descending order.
  bool newest_first = false;
  // false: a context returned with its checkpoint comes without its record (null), which
  // its checkpoint holds as far as it got; load_context gives the whole row. Recovery reads
  // so, since it rebuilds a context from its checkpoint and needs the record only when it
  // ends one that cannot resume.
  bool records_of_checkpointed = true;
};

// One page of a list of ended contexts, newest first: those of `flow` ("": every flow)
// with `status` ("": any ended one), of seqs below `before_seq` (> 1), at most `limit`.
// The engine's list reads history so (runtime/context_reads.cpp), and a cluster follower
// the same page (server/history_reader.h).
ContextQuery newest_ended_page(std::string_view flow, std::string_view status, uint64_t before_seq, size_t limit);

// How a store's background work is going: SQLite's checkpoints, which run on a thread of
// their own (store/sqlite_checkpointer.h). Zero for a store that has none.
struct StoreHealth {
  uint64_t checkpoints = 0;          // done so far
  uint64_t checkpoint_failures = 0;  // failed so far (each is tried again)
};

// Where a store's background work tells an operator what went wrong, and when it works
// again: called on that work's thread, once per change (not once per failure), with a
// message naming the file. Empty: not told.
using StoreReport = std::function<void(const std::string& message)>;

class Store {
 public:
  virtual ~Store() = default;

  // "memory", "sqlite" or "postgresql".
  virtual std::string_view kind() const = 0;
  // What it is, for messages: "memory", "sqlite file data/flowrt.db",
  // "postgresql database HOST:PORT/DBNAME" (never a password).
  virtual std::string describe() const = 0;
  // Whether its state outlives the process. The engine sends batches only to a durable
  // store; a memory store's state lives in the engine itself.
  virtual bool durable() const = 0;
  // What opening it did that is worth telling (a migration of an older file); "" if nothing.
  virtual std::string open_note() const { return ""; }

  // Everything stored; without the contexts (StoredState::contexts empty) when
  // `with_contexts` is false: a reader that pages through them with list_contexts
  // (ContextQuery::loaded_only) never holds them all at once.
  virtual Result<StoredState> load(bool with_contexts) = 0;
  Result<StoredState> load() { return load(true); }
  // The context with `seq`, or nullopt when the store has none (never had, or pruned).
  virtual Result<std::optional<StoredContext>> load_context(uint64_t seq) = 0;
  // One page of the contexts `query` matches, in seq order; the next page starts after the
  // last seq of this one. An empty page: no more.
  virtual Result<std::vector<StoredContext>> list_contexts(const ContextQuery& query) = 0;
  // A published version of definition (type, id) by its fingerprint, as written: every
  // version ever published is kept (a context waiting on an old plan resumes on it). Null
  // when there is no such version. From any thread, like load_context.
  virtual Result<Value> load_definition_version(std::string_view type, std::string_view id,
                                                std::string_view fingerprint) = 0;
  // Applies `batch` atomically; see the contract above.
  virtual Status write(const StoreBatch& batch) = 0;
  // The same, with the caller's work overlapping the database's: `meanwhile` (when set) is
  // called once, on this thread, while the batch is in the database's hands — sent, its
  // outcome not known yet — or, by a store that cannot overlap, before the batch is
  // written (this default). It may not call the store. A store that fails before it could
  // send the batch does not call it.
  virtual Status write_overlapped(const StoreBatch& batch, const std::function<void()>& meanwhile) {
    if (meanwhile) meanwhile();
    return write(batch);
  }
  // How later batches are made durable.
  virtual Status set_sync_mode(SyncMode mode) = 0;
  // From any thread.
  virtual StoreHealth health() const { return {}; }
};

// Where a store is and how it opens.
struct StoreOptions {
  std::string kind = "memory";       // "memory" | "sqlite" | "postgresql"
  std::string path;                  // sqlite: the file (created when missing)
  std::string url;                   // postgresql: the libpq connection URL (postgresql://...)
  SyncMode sync = SyncMode::kNormal;
  bool read_only = false;            // sqlite, postgresql: read only (flowrt inspect); no lock is taken
  std::string vfs;                   // sqlite: the name of a registered SQLite VFS to open the file
                                     // with ("": SQLite's default); tests use a fault-injecting one
  // postgresql: the lead epoch of a cluster node that leads (store/postgres_cluster.h):
  // every write checks it in its own transaction instead of the single writer's lock;
  // 0: not in a cluster.
  int64_t lead_epoch = 0;
  // sqlite: where its checkpointer reports failed checkpoints (see StoreReport).
  StoreReport report;
};

// Opens the store `options` names. Errors name the file (or database) and say what is wrong.
Result<std::unique_ptr<Store>> open_store(const StoreOptions& options);

// Whether a --data value names a PostgreSQL database (postgresql:// or postgres://) rather
// than a SQLite file.
bool is_postgres_url(std::string_view data);

// What the postgresql store's messages call the database `url` names, before it is open:
// "postgresql database HOST:PORT/DBNAME" (PostgresStore::describe); for a URL that does
// not parse, the URL as data_for_display shows it.
std::string postgres_store_name(const std::string& url);

// A --data value as it may be shown (flowrt inspect names what it read): a PostgreSQL URL
// with its password, in its user part or a `password` parameter, as "***"; anything else
// as it is.
std::string data_for_display(std::string_view data);

// `message` (libpq's about the PostgreSQL URL `url`, which quotes the parts it cannot read)
// with the URL's passwords in its quoted parts as "***".
std::string hide_url_passwords(std::string message, std::string_view url);

}  // namespace flowrt
