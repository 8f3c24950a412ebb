// PostgresStore: connecting, the readers' sessions, set_sync_mode and write() (the batch as
// one pipelined transaction). The writer's session and its lock are in
// postgres_writer_lock.cpp, the schema in postgres_schema.cpp, the reads in
// postgres_reads.cpp.
#include "store/postgres_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <optional>
#include <string>
#include <type_traits>

#include "store/postgres_rows.h"

namespace flowrt {

using namespace postgres_rows;  // NOLINT: this store's own rows and libpq handles

namespace {

int64_t pg_clamp64(uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); }

// Why a session has no current schema: PostgreSQL gives none when no schema its
// search_path names is there and usable by its role. Says which of the two it is for each
// ("priv is there, but role app may not use it (GRANT USAGE ON SCHEMA priv TO app)");
// "" when that cannot be read.
std::string why_no_schema(PGconn* c) {
  ResultPtr r(PQexec(c,
                     "SELECT m.name, n.oid IS NOT NULL, COALESCE(has_schema_privilege(n.oid, 'USAGE'), false), "
                     "current_user::text FROM unnest(string_to_array(current_setting('search_path'), ',')) AS x(raw) "
                     "CROSS JOIN LATERAL (SELECT CASE WHEN btrim(x.raw) IN ('$user', '\"$user\"') THEN current_user::text "
                     "ELSE btrim(btrim(x.raw), '\"') END AS name) m LEFT JOIN pg_namespace n ON n.nspname = m.name"));
  if (!result_ok(r.get())) return "";
  std::string out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    const std::string name(cell_view(r.get(), i, 0));
    const std::string role(cell_view(r.get(), i, 3));
    if (name.empty()) continue;
    if (!out.empty()) out += "; ";
    if (cell_view(r.get(), i, 1) != "t") {
      out += name + " is not there";
    } else if (cell_view(r.get(), i, 2) != "t") {
      out += name + " is there, but role " + role + " may not use it (GRANT USAGE ON SCHEMA " + name + " TO " + role + ")";
    } else {
      out += name + " is there";  // not expected: such a schema would be the current one
    }
  }
  return out;
}

}  // namespace

// One statement of a write: a prepared statement's name and its parameters; a record put
// must change exactly one row (else another record stands at its position).
struct PostgresStore::Op {
  const char* statement;
  Params params;
  std::vector<const RecordPut*> puts;  // put_records_N: each must be written
  bool fence = false;  // the lead check: must touch its one row, else this node no longer leads
};

Result<std::string> PostgresStore::where_of(const std::string& url) {
  char* message = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &message);
  if (!options) {
    std::string m = message ? hide_url_passwords(one_line(message), url) : "out of memory";
    PQfreemem(message);
    return Error{"postgresql store: not a connection URL (" + m + ")"};
  }
  std::string host, port, dbname, user;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    const std::string_view k = o->keyword;
    const std::string v = o->val ? o->val : "";
    if (k == "host" && !v.empty()) host = v;
    else if (k == "hostaddr" && host.empty() && !v.empty()) host = v;
    else if (k == "port") port = v;
    else if (k == "dbname") dbname = v;
    else if (k == "user") user = v;
  }
  PQconninfoFree(options);
  if (host.empty()) host = "localhost";
  if (port.empty()) port = "5432";
  if (dbname.empty()) dbname = user.empty() ? "(the user's database)" : user;
  return host + ":" + port + "/" + dbname;
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::open(const std::string& url, SyncMode sync, bool read_only,
                                                          int64_t lead_epoch, int read_timeout_ms) {
  if (url.empty()) return Error{"the postgresql store needs a connection URL (postgresql://USER@HOST:PORT/DBNAME)"};
  Result<std::string> where = where_of(url);
  if (!where) return where.error();
  ConnPtr conn(connect_to(url));
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    return Error{"postgresql database " + *where + ": cannot connect: " +
                 (conn ? one_line(PQerrorMessage(conn.get())) : std::string("out of memory"))};
  }
  // Named as the server knows it, now that it answered.
  const std::string exact = std::string(PQhost(conn.get())) + ":" + PQport(conn.get()) + "/" + PQdb(conn.get());
  std::unique_ptr<PostgresStore> store(new PostgresStore(url, exact, conn.release(), read_only));
  {
    ResultPtr r(PQexec(store->conn_, "SELECT current_schema()"));
    if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return store->error("cannot read its schema");
    if (cell_null(r.get(), 0, 0)) {
      const std::string why = why_no_schema(store->conn_);
      return store->error_of("cannot open", "no schema to keep its tables in (the search_path names none that exists and "
                                            "this role may use" + (why.empty() ? std::string() : ": " + why) + ")");
    }
    store->schema_ = cell_text(r.get(), 0, 0);
  }
  store->lead_epoch_ = read_only ? 0 : lead_epoch;
  store->read_timeout_ms_ = read_timeout_ms;
  if (read_only) {
    ResultPtr r(PQexec(store->conn_, "SET default_transaction_read_only = on"));
    if (!result_ok(r.get())) return store->error("cannot start a read-only session");
  } else {
    FLOWRT_RETURN_IF_ERROR(store->start_writer_session());
  }
  FLOWRT_RETURN_IF_ERROR(store->prepare_schema());
  if (!read_only) {
    FLOWRT_RETURN_IF_ERROR(store->prepare_keyed_writes());
    FLOWRT_RETURN_IF_ERROR(store->ready_writes(sync));
  }
  {
    MutexLock lock(store->readers_[0].mu);
    FLOWRT_RETURN_IF_ERROR(store->ready_reader(store->readers_[0]));
  }
  return store;
}

PostgresStore::PostgresStore(std::string url, std::string where, pg_conn* conn, bool read_only)
    : url_(std::move(url)), where_(std::move(where)), conn_(conn), read_only_(read_only) {}

PostgresStore::~PostgresStore() {
  if (locked_ && !lost_ && PQstatus(conn_) == CONNECTION_OK) {
    ResultPtr r(PQexec(conn_, "DELETE FROM holder"));  // no one holds it now
    // Let go of the lock now, not when the server's backend has finished exiting after the
    // session ends (a moment later): an engine opened right after this one must find it free.
    let_go_lock();
  }
  PQfinish(conn_);  // the session ends (and with it the lock, if the unlock did not run)
  for (Reader& r : readers_) {
    MutexLock lock(r.mu);
    if (r.conn) PQfinish(r.conn);
  }
}

Status PostgresStore::read_highest_context() {
  // A leader opens its store after taking the lead: every batch of the node before it
  // that committed is seen here, and any later one is fenced.
  ResultPtr r(PQexec(conn_,
                     "SELECT GREATEST((SELECT COALESCE(max(seq), 0) FROM contexts), "
                     "(SELECT COALESCE(max(seq), 0) FROM history))"));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot read its highest context");
  places_ = ContextPlaces(std::strtoull(PQgetvalue(r.get(), 0, 0), nullptr, 10));
  return Status::ok();
}

int PostgresStore::writer_backend_pid() const { return PQbackendPID(conn_); }

Result<std::string> PostgresStore::writer_setting(std::string_view name) {
  Params p;
  p.text(name);
  ResultPtr r(exec_params(conn_, "SELECT current_setting($1)", p));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot read a setting", conn_);
  return cell_text(r.get(), 0, 0);
}

Error PostgresStore::error_of(std::string_view what, std::string_view message) const {
  return Error{"postgresql database " + where_ + ": " + std::string(what) + ": " + std::string(message)};
}

Error PostgresStore::error(std::string_view what, pg_conn* conn) const {
  return error_of(what, one_line(PQerrorMessage(conn ? conn : conn_)));
}

Status PostgresStore::ready_reader(Reader& reader) {
  if (reader.conn && PQstatus(reader.conn) == CONNECTION_OK) return Status::ok();
  if (reader.conn) {
    PQreset(reader.conn);  // the same parameters, a new session
  } else {
    reader.conn = connect_to(url_);
    if (!reader.conn) return error_of("cannot open a connection to read it", "out of memory");
  }
  Status set = PQstatus(reader.conn) == CONNECTION_OK ? set_up_reader(reader.conn)
                                                       : error("cannot open a connection to read it", reader.conn);
  if (!set.is_ok()) {
    // A session half set up (its statement not prepared) would pass for a ready one:
    // the next read connects afresh.
    PQfinish(reader.conn);
    reader.conn = nullptr;
  }
  return set;
}

Status PostgresStore::set_up_reader(pg_conn* conn) {
  ResultPtr r(exec_params(conn, "SELECT set_config('search_path', $1::text, false)", [&] {
    Params p;  // the writer's schema, whatever the URL's search_path
    std::string quoted;  // an identifier: its double quotes doubled
    for (char ch : schema_) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    p.text("\"" + quoted + "\"");
    return p;
  }()));
  if (!result_ok(r.get())) return error("cannot open a connection to read it", conn);
  // Bitmap scans off: a list (list_contexts) reads a page in seq order, which an index
  // scan of (flow or status, seq) or of the key gives directly; with a bitmap scan the
  // server reads every matching row and sorts them for the page. It takes the bitmap scan
  // when the tables' statistics say they are small, and they say so until autovacuum's
  // next analyze after a burst of inserts (docs/SCALING.md, "Limits, as built"). Reads by
  // key are not affected.
  std::string settings = "SET default_transaction_read_only = on; SET enable_bitmapscan = off";
  if (read_timeout_ms_ > 0) settings += "; SET statement_timeout = " + std::to_string(read_timeout_ms_);
  ResultPtr ro(PQexec(conn, settings.c_str()));
  if (!result_ok(ro.get())) return error("cannot open a connection to read it", conn);
  const Oid seq_type = kInt8Oid;
  ResultPtr prepared(PQprepare(conn, kLoadContext, load_context_sql().c_str(), 1, &seq_type));
  if (!result_ok(prepared.get())) return error("cannot open a connection to read it", conn);
  return Status::ok();
}

Status PostgresStore::set_sync_mode(SyncMode mode) {
  if (read_only_) return Status::ok();
  sync_ = mode;  // a reconnected session is given it too
  if (lost_) return Status::ok();
  Params p;
  p.text(mode == SyncMode::kFull ? "on" : mode == SyncMode::kNormal ? "local" : "off");
  ResultPtr r(exec_params(conn_, "SELECT set_config('synchronous_commit', $1::text, false)", p));
  if (!result_ok(r.get())) return error("cannot set its durability");
  return Status::ok();
}

Status PostgresStore::ready_writes(SyncMode sync) {
  FLOWRT_RETURN_IF_ERROR(prepare_statements());
  FLOWRT_RETURN_IF_ERROR(read_highest_context());
  if (lead_epoch_ == 0) FLOWRT_RETURN_IF_ERROR(note_holder());
  return set_sync_mode(sync);
}

// One write()'s transaction, sent through libpq's pipeline mode while write_overlapped()
// makes its statements: BEGIN at once, then each statement once the next is begun (its
// parameters complete), so that the server runs the first statements while the rest are
// made. The statements go in chunks of kPipelineDepth, each followed by a sync whose
// results are read before the next chunk is sent (so neither side's buffers fill up). A
// sync inside BEGIN ... COMMIT does not end the transaction: COMMIT goes only once every
// statement succeeded, else ROLLBACK. The store's writer thread only; it borrows the
// store's connection for its life and keeps every statement until its result is read.
class PostgresStore::Transaction {
 public:
  // `meanwhile` (when set) runs once, at the first sync, while the server works.
  Transaction(PostgresStore& store, size_t changes, const std::function<void()>& meanwhile)
      : store_(store),
        c_(store.conn_),
        what_("cannot write a batch of " + std::to_string(changes) + " changes"),
        meanwhile_(meanwhile) {
    if (store_.fenced_) {
      fail(store_.error_of(what_, "fenced: this node no longer leads the cluster"));
    } else if (store_.lost_) {
      fail(store_.error_of(what_, "the connection was lost: open the store again"));
    } else if (PQenterPipelineMode(c_) != 1) {
      fail(store_.error(what_));
    } else {
      piped_ = true;
      send_plain("BEGIN", "BEGIN");
    }
  }
  // Unfinished (the making of a statement threw): what was sent is rolled back, so that
  // the connection is ready for the next write; should that fail too, the connection is
  // given up as lost.
  ~Transaction() {
    if (finished_ || !piped_) return;
    try {
      meanwhile_called_ = true;  // not now: the caller is unwinding
      begun_ = false;
      fail(Error{what_});
      (void)finish();  // the caller is told by its exception
    } catch (...) {
      store_.lost_ = true;
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // A new statement, its parameters filled by the caller; the one begun before is sent.
  Op& begin(const char* statement) {
    send_begun();
    if (auto* hook = statement_hook_.load(std::memory_order_acquire)) hook();
    ops_.push_back(Op{statement, {}, {}});
    begun_ = true;
    return ops_.back();
  }
  // Sends what is still to send, then COMMIT (or ROLLBACK after a failure).
  Status finish() {
    finished_ = true;
    send_begun();
    if (!piped_) return *failure_;
    // A record put is checked by its row count, which only its result tells: such a chunk
    // is read before COMMIT is sent. Any other failure aborts the transaction on the
    // server, and a COMMIT sent with it answers ROLLBACK (a failure too).
    const auto read_first = [](const Sent& x) { return x.op && (!x.op->puts.empty() || x.op->fence); };
    if (!lost_ && !failure_ && std::any_of(sent_.begin(), sent_.end(), read_first)) {
      sync_and_read();
    }
    if (!lost_ && !failure_) {
      send_plain("COMMIT", "COMMIT");
      sync_and_read();
    }
    if (!lost_ && failure_) {
      sync_and_read();  // what is still unread
      send_plain("ROLLBACK", nullptr);
      sync_and_read();
    }
    if (store_.fenced_) store_.lost_ = true;  // a fenced store writes nothing more
    if (!lost_) PQexitPipelineMode(c_);
    if (lost_ || PQstatus(c_) == CONNECTION_BAD) {
      // The server rolls back a transaction whose session ends, unless its COMMIT had gone
      // through: the next write connects again (a cluster leader's store does not: it stops
      // here, and its node gives the lead up), and the batch written again lands once
      // whichever it was (every statement puts a row's values or removes it, and a
      // recovery's note equal to one there is not added again).
      store_.lost_ = true;
      const char* next = store_.lead_epoch_ == 0 ? " (the connection is lost: the next write connects again)"
                                                 : " (the connection is lost: open the store again)";
      if (failure_) return Error{failure_->message + next};
      std::string message = one_line(PQerrorMessage(c_));
      if (message.empty()) message = "the connection was lost";
      return store_.error_of(what_, message + next);
    }
    if (failure_) return *failure_;
    return Status::ok();
  }

 private:
  // What was sent since the last sync: an op, or a plain statement and the command tag
  // that says it did what it should.
  struct Sent {
    const Op* op;
    const char* tag;
  };
  // Statements go to the server every this many, not only when libpq's buffer fills.
  static constexpr size_t kFlushEvery = 16;

  void fail(Error e) {
    if (!failure_) failure_ = std::move(e);
  }
  void send_plain(const char* sql, const char* tag) {
    if (PQsendQueryParams(c_, sql, 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) lost_ = true;
    sent_.push_back(Sent{nullptr, tag});
  }
  void send_begun() {
    if (!begun_) return;
    begun_ = false;
    if (!piped_ || lost_ || failure_) return;
    const Op& o = ops_.back();
    o.params.arrays(&values_, &lengths_, &formats_);
    if (PQsendQueryPrepared(c_, o.statement, o.params.size(), values_.data(), lengths_.data(), formats_.data(), 0) !=
        1) {
      lost_ = true;
    }
    sent_.push_back(Sent{&o, nullptr});
    if (sent_.size() >= kPipelineDepth) {
      sync_and_read();
    } else if (sent_.size() % kFlushEvery == 0 && PQflush(c_) != 0) {
      lost_ = true;
    }
  }
  // Syncs, then reads the results of what was sent and the sync's; the first time, once
  // sent, calls `meanwhile` while the server works.
  void sync_and_read() {
    if (!lost_ && PQpipelineSync(c_) != 1) lost_ = true;
    if (!lost_ && !meanwhile_called_) {
      meanwhile_called_ = true;
      if (meanwhile_) meanwhile_();
    }
    for (const Sent& x : sent_) {
      if (lost_) break;
      ResultPtr r(PQgetResult(c_));
      if (!r) {
        lost_ = true;
        break;
      }
      const ExecStatusType s = PQresultStatus(r.get());
      if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        check(x, r.get());
      } else if (s != PGRES_PIPELINE_ABORTED) {
        fail(store_.error_of(what_, one_line(PQresultErrorMessage(r.get()))));
      }
      ResultPtr end(PQgetResult(c_));  // the null that ends its results
      if (PQstatus(c_) == CONNECTION_BAD) lost_ = true;
    }
    sent_.clear();
    if (lost_) return;
    ResultPtr sync(PQgetResult(c_));
    if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) lost_ = true;
  }
  // A statement's result that the server took: the fence must have found its row, each
  // record put must come back, a plain statement must answer its tag.
  void check(const Sent& x, PGresult* r) {
    if (x.op && x.op->fence && std::string_view(PQcmdTuples(r)) != "1") {
      store_.fenced_ = true;
      fail(store_.error_of(what_, "fenced: this node no longer leads the cluster (its lead epoch " +
                               std::to_string(store_.lead_epoch_) + " was taken over by another node)"));
    }
    if (x.op && !x.op->puts.empty()) {
      // Each put's position comes back (RETURNING) when it was written.
      std::vector<int64_t> written;
      for (int row = 0; row < PQntuples(r); ++row) written.push_back(cell_int(r, row, 0));
      for (const RecordPut* put : x.op->puts) {
        if (std::find(written.begin(), written.end(), pg_clamp64(put->position)) != written.end()) continue;
        fail(store_.error_of(what_, "record " + std::string(put->record.members()[0].value.as_string()) + " of table " +
                                 put->table + " at position " + std::to_string(put->position) +
                                 ": another record is there"));
        break;
      }
    }
    if (x.tag && std::string_view(PQcmdStatus(r)) != x.tag) {
      fail(store_.error_of(what_, std::string("the server answered ") + PQcmdStatus(r) + " to " + x.tag));
    }
  }

  PostgresStore& store_;
  PGconn* const c_;
  const std::string what_;
  std::deque<Op> ops_;  // every statement begun; a deque, so that sent_ may point into it
  bool begun_ = false;  // ops_.back() is begun and not sent yet
  bool piped_ = false;  // in pipeline mode, BEGIN sent
  bool lost_ = false;
  std::optional<Error> failure_;
  std::vector<Sent> sent_;
  std::vector<const char*> values_;
  std::vector<int> lengths_, formats_;
  const std::function<void()>& meanwhile_;
  bool meanwhile_called_ = false;
  bool finished_ = false;
};

Status PostgresStore::write_overlapped(const StoreBatch& batch, const std::function<void()>& meanwhile) {
  using Place = ContextPlaces::Place;
  if (read_only_) return error_of("cannot write", "opened read only");
  if (!superseded_.empty()) {
    return error_of("cannot write a batch of " + std::to_string(batch.changes.size()) + " changes", superseded_);
  }
  if (lost_ && !fenced_ && lead_epoch_ == 0) {
    if (Status again = reconnect_writer(); !again) {
      return error_of("cannot write a batch of " + std::to_string(batch.changes.size()) + " changes",
                      "its connection was lost, and connecting again failed: " + again.message());
    }
    ++reconnects_;
  }
  places_.discard();  // nothing pending from a batch that threw
  Transaction transaction(*this, batch.changes.size(), meanwhile);
  std::vector<std::string> new_tables;
  auto op = [&](const char* statement) -> Params& { return transaction.begin(statement).params; };
  // Record puts wait in a group and go as one statement (put_records_N, N <= kPutGroup).
  // Rows of other tables commute with them within the transaction; a remove, or a put at a
  // position already in the group, sends the group first, so each position's changes keep
  // their order.
  std::vector<const RecordPut*> group;
  auto send_group = [&] {
    if (group.empty()) return;
    Op& o = transaction.begin(put_records_statement(group.size()));
    for (const RecordPut* c : group) {
      o.params.text(c->table);
      o.params.text(c->record.members()[0].value.as_string());
      o.params.integer(pg_clamp64(c->position));
      o.params.json(c->record);
    }
    o.puts = std::move(group);
    group.clear();
  };
  // Live context rows (put_context) likewise; any other change of a row in the group sends
  // the group first.
  std::vector<const StoredContext*> live_group;
  auto send_live_group = [&] {
    if (live_group.empty()) return;
    Params& p = op(put_contexts_statement(live_group.size()));
    for (const StoredContext* x : live_group) {
      p.integer(pg_clamp64(x->seq));
      p.text(x->id);
      p.text(x->flow);
      p.text(x->status);
      p.integer(pg_clamp64(x->commit_seq));
      p.json(x->trigger);
      p.json(x->inputs);
      p.json(x->cause);
      p.json(x->run_key);
      p.integer(x->started);
      p.integer(x->ended);
      p.json(x->record);
      p.json(x->checkpoint);
    }
    live_group.clear();
  };
  auto touch_context = [&](uint64_t seq) {
    if (std::any_of(live_group.begin(), live_group.end(), [&](const StoredContext* x) { return x->seq == seq; })) {
      send_live_group();
    }
  };
  if (lead_epoch_ > 0) {
    // First, so that the lead row is locked for the whole transaction: a takeover (which
    // updates that row) waits for this batch, or this batch finds the new epoch and fails.
    Op& f = transaction.begin("fence");
    f.fence = true;
    f.params.integer(lead_epoch_);
    f.params.integer(pg_clamp64(batch.applied_op));
    for (const auto& [operation, context_id] : batch.operations_started) {
      Params& s = op("operation_started");
      s.integer(pg_clamp64(operation));
      s.text(context_id);
    }
  }
  for (const StoreChange& change : batch.changes) {
    std::visit(
        [&](const auto& c) {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, RecordPut>) {
            if (!tables_.count(c.table) &&
                std::find(new_tables.begin(), new_tables.end(), c.table) == new_tables.end()) {
              Params& t = op("put_table");
              t.text(c.table);
              t.integer(pg_clamp64(c.position));
              new_tables.push_back(c.table);
            }
            const bool repeated = std::any_of(group.begin(), group.end(),
                                              [&](const RecordPut* g) { return g->position == c.position; });
            if (repeated) send_group();
            group.push_back(&c);
            if (group.size() == kPutGroup) send_group();
          } else if constexpr (std::is_same_v<T, RecordRemove>) {
            send_group();
            Params& r = op("remove_record");
            r.text(c.table);
            r.text(c.sys_id);
            r.integer(pg_clamp64(c.position));
          } else if constexpr (std::is_same_v<T, DefinitionPut>) {
            const StoredDefinition& d = c.definition;
            Params& p = op("put_definition");
            p.text(d.type);
            p.text(d.id);
            p.json(d.draft);
            p.json(d.published);
            p.text(d.published_fingerprint);
            p.boolean(d.active);
            p.integer(d.activated_at);
            p.integer(d.last_tick);
            if (d.published.is_null()) return;
            Params& v = op("put_definition_version");
            v.text(d.type);
            v.text(d.id);
            v.text(d.published_fingerprint);
            v.json(d.published);
          } else if constexpr (std::is_same_v<T, ScheduleTick>) {
            Params& p = op("schedule_tick");
            p.text(c.flow);
            p.integer(c.at);
          } else if constexpr (std::is_same_v<T, ContextPut>) {
            const StoredContext& x = c.context;
            touch_context(x.seq);
            // In history once it ended with its record, live until then; never in both.
            const bool to_history = is_final_context_status(x.status) && !x.record.is_null();
            if (!to_history) {
              std::string ended;  // none when the cap is reached: the move has the server make it
              if (!places_.full()) write_json(ended_trigger(x.trigger), ended);
              places_.note(x.seq, Place::kLive, std::move(ended));
              live_group.push_back(&x);
              if (live_group.size() == kPutGroup) send_live_group();
              return;
            }
            if (places_.place(x.seq) != Place::kNotLive) op("remove_context").integer(pg_clamp64(x.seq));
            places_.note(x.seq, Place::kNotLive);
            Params& p = op("put_history");
            p.integer(pg_clamp64(x.seq));
            p.text(x.id);
            p.text(x.flow);
            p.text(x.status);
            p.integer(pg_clamp64(x.commit_seq));
            p.json(ended_trigger(x.trigger));
            p.json(x.inputs);
            p.json(x.cause);
            p.json(x.run_key);
            p.integer(x.started);
            p.integer(x.ended);
            p.json(x.record);
          } else if constexpr (std::is_same_v<T, ContextUpdate>) {
            touch_context(c.seq);
            auto fill = [&](Params& u) {
              u.integer(pg_clamp64(c.seq));
              u.text(c.status);
              u.integer(c.started);
              u.integer(c.ended);
              u.json(c.record);
            };
            // A live context ending with its record moves to history; else its live row
            // changes (an ended one without its record stays there), or else its history
            // row (an ended context whose record changes). It is in one table only, so at
            // most one of these finds it; where the writer knows which (places_), only
            // that one is sent.
            const bool final = is_final_context_status(c.status);
            const Place place = places_.place(c.seq);
            if (place == Place::kNotLive) {
              fill(op("update_history"));
              return;
            }
            const std::string* given = final && place == Place::kLive && !c.record.is_null() ? places_.ended_trigger(c.seq) : nullptr;
            if (given) {
              Params& m = op("move_to_history_given");
              fill(m);
              m.text(*given);
            } else if (final) {
              fill(op("move_to_history"));
            }
            if (place == Place::kLive && final && !c.record.is_null()) {
              places_.note(c.seq, Place::kNotLive);  // moved, as its record is given
              return;
            }
            Params& u = op("update_context");
            fill(u);
            u.json(c.checkpoint);
            if (place == Place::kLive) {
              // Still live; or, ended without a record given, moved only if its row had one.
              if (final) places_.note(c.seq, Place::kUnknown);
              return;
            }
            fill(op("update_history"));
            if (final && !c.record.is_null()) places_.note(c.seq, Place::kNotLive);
          } else if constexpr (std::is_same_v<T, LockPut>) {
            if (c.state.is_null()) {
              op("remove_lock").text(c.name);
            } else {
              Params& p = op("put_lock");
              p.text(c.name);
              p.json(c.state);
            }
          } else if constexpr (std::is_same_v<T, RunOncePut>) {
            Params& p = op(c.flow.empty() ? "run_once_clear" : c.ran ? "run_once_add" : "run_once_remove");
            p.text(c.table);
            p.text(c.sys_id);
            if (!c.flow.empty()) p.text(c.flow);
          } else if constexpr (std::is_same_v<T, KeyedWritePut>) {
            Params& p = op("put_keyed_write");
            p.text(c.caller);
            p.text(c.key);
            p.text(c.request);
            p.integer(c.status);
            p.text(c.headers);
            p.text(c.body);
            p.integer(c.at);
          } else if constexpr (std::is_same_v<T, KeyedWritePrune>) {
            op("prune_keyed_writes").integer(c.before);
          } else if constexpr (std::is_same_v<T, RecoveryNote>) {
            Params& p = op("add_recovery");
            p.integer(c.at);
            p.json(c.report);
          } else if constexpr (std::is_same_v<T, HistoryPrune>) {
            if (c.ended_before >= 0) op("prune_age").integer(c.ended_before);
            if (c.keep > 0) op("prune_count").integer(pg_clamp64(c.keep));
          }
        },
        change);
  }
  send_group();
  send_live_group();
  const StoreCounters& k = batch.counters;
  Params& p = op("put_counters");
  p.integer(pg_clamp64(k.commit_seq));
  p.integer(pg_clamp64(k.context_seq));
  p.integer(k.fencing_token);
  p.integer(pg_clamp64(k.sys_id_seed));
  p.integer(pg_clamp64(k.sys_id_count));
  p.integer(k.clock);
  Status written = transaction.finish();
  if (written) {
    tables_.insert(new_tables.begin(), new_tables.end());
    places_.commit();
  } else {
    places_.discard();
  }
  return written;
}

}  // namespace flowrt
