// PostgresStore: a Store in a PostgreSQL database, through libpq (Debian's libpq-dev).
//
// Opened with a libpq connection URL (postgresql://USER@HOST:PORT/DBNAME?...); its tables
// live in the connection's current schema (the first of its search_path, `public` unless
// the URL sets `options=-csearch_path%3DNAME`), so one database can hold several stores,
// one per schema. Messages name it "postgresql database HOST:PORT/DBNAME", never with the
// URL's password.
//
// Same contract as the other stores (store/store.h), kept so:
//  - each write() is one transaction (BEGIN ... COMMIT): its statements are sent through
//    libpq's pipeline mode, a few hundred at a time, and the transaction is committed only
//    once every one has succeeded (a record put where another record stands is refused, as
//    the sqlite store does); anything else rolls it back, so a batch applies whole or not
//    at all, also when the connection drops in the middle (the server rolls back);
//  - load() reads in one REPEATABLE READ transaction: the state as of the last batch;
//  - the SyncMode is the session's synchronous_commit: kFull `on` (the commit waits for
//    the WAL to be flushed, and for synchronous standbys when the server has any: survives
//    a power cut), kNormal `local` (waits for the local flush only), kOff `off` (the commit
//    returns before the flush: a crash of the server, not of flowrt, can lose the last
//    batches, never part of one);
//  - tables: meta (application, schema_version), counters, record_tables, records (by
//    position: insertion order), definitions, definition_versions, contexts (live) and
//    history (ended with their record; not loaded), locks, run_once, recoveries, holder,
//    keyed_writes (made by every writer when missing, as the sqlite store does: a schema
//    without it reads as having none).
//    Values are stored as their JSON text (text columns: `json`/`jsonb` would refuse a
//    \u0000 or reorder keys). A context ending with its record moves to history in one
//    statement, its trigger summarised by the server (ended_trigger, in SQL over json_each
//    in member order).
//
// Schema versions: meta.schema_version says which layout the tables have (kSchemaVersion).
// Opening an empty schema creates every table in one transaction; a newer version is
// refused, nothing changed. Migrations of older versions follow the sqlite store's pattern
// (store/sqlite_schema.cpp: one SQL step per version, all run with the new version in one
// transaction); version 1 is the first, so there are none yet.
//
// One writer: only one engine writes a schema at a time. A writer takes a session-level
// advisory lock (pg_try_advisory_lock, keyed by the schema) before it reads or creates
// anything, held for the store's life, and refuses when another session holds it, naming
// the holder from the `holder` row it wrote (its process, host, since when, its server
// backend). A store that closes lets go of the lock before it disconnects; the server lets
// it go when a session ends any other way, once that session's backend has exited, so a
// writer tries for kLockRetryMs before it refuses. This is
// for now: coordinating several engines over one database comes later and will replace
// it. A read-only store (flowrt inspect) takes no lock and reads while an engine writes.
// A cluster's leader takes no lock either: its lead epoch fences its writes (open()).
//
// Connections: `conn_` (the writer's, also used by load()) and up to kReaders readers,
// through which load_context, list_contexts and load_definition_version read, from any
// thread, also while write() runs: each read is one statement (live and history rows
// merged by the server), so it sees the state as of a whole batch. A read takes the first
// reader no other read holds (opening its connection when it has none), or waits for one:
// as many reads run at once as threads ask, up to kReaders, and a store read one at a
// time keeps one connection.
// Connecting waits at most connect_timeout (10 s unless the URL says otherwise); TCP
// keepalives (and tcp_user_timeout) end a connection to a server that went away instead of
// waiting forever. No statement_timeout is set (a big batch takes as long as it takes); a
// URL can set one (options=-cstatement_timeout%3D...). When the writer's connection is lost
// (the server restarted, the session was ended) the write fails, and the next write()
// connects again and takes the lock again (reconnect_writer): the engine's writer, which
// retries a failed batch, goes on once the server is back. Refused when another writer
// holds the lock meanwhile, or held it and let it go (the holder row is no longer this
// store's): then every later write fails, for the schema is no longer as this store left
// it. A cluster leader's store
// (lead_epoch > 0) does not connect again: it stops, and its node gives the lead up. A lost
// reader connection is reconnected by the next read on it.
//
// Thread-safety: load() and write() are not for concurrent use (the engine's journal
// thread is the one writer, after load()); the readers as above. Owns its connections (and
// so its lock), all let go by the destructor.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "base/thread_annotations.h"
#include "store/postgres_context_places.h"
#include "store/store.h"

struct pg_conn;

namespace flowrt {

namespace postgres_rows {
class Params;
}

class PostgresStore final : public Store {
 public:
  // The schema version this build writes (meta.schema_version).
  // How long a writer tries for the lock a killed writer's session still holds, ms.
  static constexpr int kLockRetryMs = 3000;
  static constexpr int kSchemaVersion = 1;
  // Connections that read at once, at most (each opened when a read first needs it).
  static constexpr size_t kReaders = 4;
  // Statements sent before their results are read, within one write()'s transaction.
  static constexpr size_t kPipelineDepth = 256;
  // Record puts and live context rows go to the server up to this many in one statement.
  static constexpr size_t kPutGroup = 16;

  // Connects to `url` (a libpq connection URI or key=value string) and opens the store in
  // its current schema, creating the tables when there are none (unless read only).
  // With lead_epoch > 0 the store writes for a cluster node that leads with that epoch
  // (store/postgres_cluster.h): no writer's lock; every write() first checks, in its own
  // transaction, that the epoch still leads, and records the batch's applied_op; a write
  // that finds another epoch is refused ("fenced"), and so is every later one.
  // With read_timeout_ms > 0 a read the server has not answered by then is cancelled by
  // it (the readers' statement_timeout): what a reader on a request's thread needs.
  static Result<std::unique_ptr<PostgresStore>> open(const std::string& url, SyncMode sync, bool read_only = false,
                                                     int64_t lead_epoch = 0, int read_timeout_ms = 0);
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  std::string_view kind() const override { return "postgresql"; }
  std::string describe() const override { return "postgresql database " + where_; }
  bool durable() const override { return true; }

  using Store::load;
  Result<StoredState> load(bool with_contexts) override;
  Result<std::optional<StoredContext>> load_context(uint64_t seq) override;
  Result<std::vector<StoredContext>> list_contexts(const ContextQuery& query) override;
  Result<Value> load_definition_version(std::string_view type, std::string_view id,
                                        std::string_view fingerprint) override;
  Status write(const StoreBatch& batch) override { return write_overlapped(batch, {}); }
  // The statements go to the server as they are made, so that it runs the first while the
  // rest are made; `meanwhile` runs once the batch's first statements (BEGIN and up to
  // kPipelineDepth more) are sent, while the server runs them.
  Status write_overlapped(const StoreBatch& batch, const std::function<void()>& meanwhile) override;
  Status set_sync_mode(SyncMode mode) override;

  // The server process of the writer's connection (pg_backend_pid()); for tests.
  int writer_backend_pid() const;
  // How many times the writer connected again after its connection was lost; for tests.
  uint64_t reconnects() const { return reconnects_; }
  // A setting of the writer's session (current_setting), as the server shows it; for tests
  // that check what the session was given. Not while write() runs (it is the writer's
  // connection).
  Result<std::string> writer_setting(std::string_view name);
  // The plan the server chooses for list_contexts(query) now, on a reader's session
  // (EXPLAIN's lines); for diagnosis, and tests that check the plan does not depend on the
  // tables' statistics (ready_reader).
  Result<std::string> explain_list_contexts(const ContextQuery& query);
  // The schema the store's tables are in.
  const std::string& schema() const { return schema_; }

  // "HOST:PORT/DBNAME" of a connection URL, without connecting (and without its password);
  // an error when the URL does not parse.
  static Result<std::string> where_of(const std::string& url);

  // For tests: `hook` (null: none) is called as each statement of a write is begun, on the
  // writer's thread; what it throws leaves write() as a failure to make a statement would
  // (an allocation failing there), so that the connection's state after one can be checked.
  static void set_statement_hook(void (*hook)()) { statement_hook_.store(hook, std::memory_order_release); }

 private:
  static inline std::atomic<void (*)()> statement_hook_{nullptr};
  struct Op;           // one statement of a write
  class Transaction;   // one write's statements, sent as they are made (postgres_store.cpp)
  PostgresStore(std::string url, std::string where, pg_conn* conn, bool read_only);
  // Takes the writer's lock; refuses naming the holder.
  Status take_lock();
  // A writer's session, before it reads the schema: its limits, and the lock (not a
  // leader's: its epoch fences its writes).
  Status start_writer_session();
  // Then, the schema there: write()'s statements prepared, where the context rows are
  // read, the holder noted (not a leader), the session's durability set.
  Status ready_writes(SyncMode sync);
  // After the writer's connection was lost: a new session, set up as open() sets the
  // first up (start_writer_session, ready_writes). An error (the store stays lost) when
  // the server cannot be reached, or another writer holds the lock now.
  Status reconnect_writer();
  // Lets go of the writer's lock (take_lock's) on the live session.
  void let_go_lock();
  // The server backend noted in the holder row when that row is still the one this store
  // wrote (its process, host and time); none when another writer's, or none there.
  std::optional<int64_t> own_holder_backend();
  // Creates the tables in an empty schema, or checks the version of existing ones.
  Status prepare_schema();
  // A writer's tables that need no schema version: keyed_writes, when missing.
  Status prepare_keyed_writes();
  // Prepares the statements write() uses.
  Status prepare_statements();
  // The names of the statements that put n records, and n live context rows
  // (1 <= n <= kPutGroup).
  static const char* put_records_statement(size_t n);
  static const char* put_contexts_statement(size_t n);
  // Reads the highest context seq the tables hold into places_.
  Status read_highest_context();
  Status note_holder();
  // One connection history is read through, and the lock a read holds it by.
  struct Reader {
    Mutex mu;
    pg_conn* conn GUARDED_BY(mu) = nullptr;
  };
  // load_context's statement, prepared on every reader's connection as kLoadContext (one
  // context is what the API reads most: a parse and a plan spared each time).
  static constexpr const char* kLoadContext = "load_context";
  static const std::string& load_context_sql();
  // list_contexts' statement for `query`, its parameters added to *params.
  static std::string list_contexts_sql(const ContextQuery& query, postgres_rows::Params* params);
  // Reader `r`'s connection, connected (again, when the last one was lost), its session's
  // settings made and its statements prepared.
  Status ready_reader(Reader& r) REQUIRES(r.mu);
  // A reader's new session: its settings made and its statements prepared.
  Status set_up_reader(pg_conn* conn);
  // Runs `read` (one statement on the connection it is given; it sets its second argument
  // to the server's message when the server failed it) on a reader (see the class
  // comment), connected first; a read that failed because the connection was lost runs
  // once more on a new one. `what` starts the error's message.
  Status read_on_reader(std::string_view what, const std::function<Status(pg_conn*, std::string*)>& read);
  // An error naming the database: "postgresql database W: WHAT: libpq's message".
  Error error(std::string_view what, pg_conn* conn = nullptr) const;
  Error error_of(std::string_view what, std::string_view message) const;
  // Runs one statement with parameters on `conn` (text results).
  struct Query;

  const std::string url_;
  const std::string where_;
  pg_conn* conn_;
  const bool read_only_;
  std::string schema_;
  bool lost_ = false;  // the writer's connection failed: the next write() connects again (not a leader's)
  uint64_t reconnects_ = 0;  // the writer's
  SyncMode sync_ = SyncMode::kNormal;  // the session's durability (set_sync_mode)
  bool fenced_ = false;  // a write found that lead_epoch_ no longer leads: every later write() fails
  // The writer's lock was taken by this store (not a leader's, which has none): its
  // destructor clears the holder row and lets the lock go only then (a refused open leaves
  // the holder's row alone).
  bool locked_ = false;
  // The holder row this store wrote (its process and when): on connecting again, the row
  // must still be this one, or another writer had the schema meanwhile.
  std::string holder_since_;
  // Connecting again found another writer had the schema (or has it): every later write() fails.
  std::string superseded_;  // why; "" while not
  int64_t lead_epoch_ = 0;  // set by open()
  int read_timeout_ms_ = 0;  // set by open(); 0: none
  std::set<std::string, std::less<>> tables_;  // the record tables the schema has (the writer's)
  ContextPlaces places_;  // where the contexts' rows are (the writer's; set by open())
  std::array<Reader, kReaders> readers_;
  std::atomic<size_t> next_reader_{0};  // which reader a read waits for when none is free
};

}  // namespace flowrt
