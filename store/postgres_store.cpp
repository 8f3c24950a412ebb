// PostgresStore: connecting, the writer's lock, set_sync_mode and write() (the batch as
// one pipelined transaction). The schema is in postgres_schema.cpp, the reads in
// postgres_reads.cpp.
#include "store/postgres_store.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "plans/time.h"
#include "store/postgres_rows.h"

namespace flowrt {

using namespace postgres_rows;  // NOLINT: this store's own rows and libpq handles

namespace {

// What every connection gets unless the URL says otherwise (the URL's values win: it is
// expanded after these).
PGconn* connect_to(const std::string& url) {
  const char* const keys[] = {"connect_timeout", "application_name", "keepalives", "keepalives_idle",
                              "keepalives_interval", "keepalives_count", "tcp_user_timeout", "client_encoding",
                              "dbname", nullptr};
  const char* const values[] = {"10", "flowrt", "1", "30", "10", "3", "60000", "UTF8", url.c_str(), nullptr};
  return PQconnectdbParams(keys, values, /*expand_dbname=*/1);
}

std::string pg_now_text() {
  const auto now = std::chrono::system_clock::now();
  return format_time(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
}

std::string pg_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

int64_t pg_clamp64(uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); }

}  // namespace

// One statement of a write: a prepared statement's name and its parameters; a put_records
// statement must write every one of `puts` (a position it does not return has another
// record standing there).
struct PostgresStore::Op {
  const char* statement;
  Params params;
  std::vector<const RecordPut*> puts;
};

Result<std::string> PostgresStore::where_of(const std::string& url) {
  char* message = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &message);
  if (!options) {
    std::string m = message ? one_line(message) : "out of memory";
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

Result<std::unique_ptr<PostgresStore>> PostgresStore::open(const std::string& url, SyncMode sync, bool read_only) {
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
      return store->error_of("cannot open", "no schema to keep its tables in (the search_path names none that exists)");
    }
    store->schema_ = cell_text(r.get(), 0, 0);
  }
  if (read_only) {
    ResultPtr r(PQexec(store->conn_, "SET default_transaction_read_only = on"));
    if (!result_ok(r.get())) return store->error("cannot start a read-only session");
  } else {
    FLOWRT_RETURN_IF_ERROR(store->take_lock());
  }
  FLOWRT_RETURN_IF_ERROR(store->prepare_schema());
  if (!read_only) {
    FLOWRT_RETURN_IF_ERROR(store->prepare_statements());
    FLOWRT_RETURN_IF_ERROR(store->note_holder());
    FLOWRT_RETURN_IF_ERROR(store->set_sync_mode(sync));
  }
  {
    MutexLock lock(store->read_mu_);
    FLOWRT_RETURN_IF_ERROR(store->ready_reader());
  }
  return store;
}

PostgresStore::PostgresStore(std::string url, std::string where, pg_conn* conn, bool read_only)
    : url_(std::move(url)), where_(std::move(where)), conn_(conn), read_only_(read_only) {}

PostgresStore::~PostgresStore() {
  if (!read_only_ && !lost_ && PQstatus(conn_) == CONNECTION_OK) {
    ResultPtr r(PQexec(conn_, "DELETE FROM holder"));  // no one holds it now
  }
  PQfinish(conn_);  // the session ends: the server lets go of the lock
  MutexLock lock(read_mu_);
  if (reader_) PQfinish(reader_);
}

int PostgresStore::writer_backend_pid() const { return PQbackendPID(conn_); }

Error PostgresStore::error_of(std::string_view what, std::string_view message) const {
  return Error{"postgresql database " + where_ + ": " + std::string(what) + ": " + std::string(message)};
}

Error PostgresStore::error(std::string_view what, pg_conn* conn) const {
  return error_of(what, one_line(PQerrorMessage(conn ? conn : conn_)));
}

Status PostgresStore::ready_reader() {
  if (reader_ && PQstatus(reader_) == CONNECTION_OK) return Status::ok();
  if (reader_) {
    PQreset(reader_);  // the same parameters, a new session
  } else {
    reader_ = connect_to(url_);
    if (!reader_) return error_of("cannot open a connection to read it", "out of memory");
  }
  if (PQstatus(reader_) != CONNECTION_OK) return error("cannot open a connection to read it", reader_);
  ResultPtr r(exec_params(reader_, "SELECT set_config('search_path', $1::text, false)", [&] {
    Params p;  // the writer's schema, whatever the URL's search_path
    std::string quoted;  // an identifier: its double quotes doubled
    for (char ch : schema_) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    p.text("\"" + quoted + "\"");
    return p;
  }()));
  if (!result_ok(r.get())) return error("cannot open a connection to read it", reader_);
  ResultPtr ro(PQexec(reader_, "SET default_transaction_read_only = on"));
  if (!result_ok(ro.get())) return error("cannot open a connection to read it", reader_);
  return Status::ok();
}

Status PostgresStore::take_lock() {
  Params p;
  p.text(schema_);
  ResultPtr r(exec_params(conn_, "SELECT pg_try_advisory_lock(hashtext('flowrt'), hashtext($1::text))", p));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot take the writer's lock");
  if (cell_view(r.get(), 0, 0) == "t") return Status::ok();
  // Who holds it: the row its holder wrote (none yet while it creates the tables).
  std::string holder;
  ResultPtr h(PQexec(conn_, "SELECT pid, host, since, backend_pid FROM holder WHERE id = 1"));
  if (result_ok(h.get()) && PQntuples(h.get()) == 1) {
    holder = "process " + cell_text(h.get(), 0, 0) + " on " + cell_text(h.get(), 0, 1) + " since " +
             cell_text(h.get(), 0, 2) + ", server backend " + cell_text(h.get(), 0, 3);
  }
  return Error{"postgresql database " + where_ + ": schema " + schema_ + " is in use by another engine (" +
               (holder.empty() ? std::string("another flowrt session") : holder) +
               "); only one may write it at a time (flowrt inspect can read it meanwhile)"};
}

Status PostgresStore::note_holder() {
  Params p;
  p.integer(static_cast<int64_t>(::getpid()));
  p.text(pg_host_name());
  p.text(pg_now_text());
  ResultPtr r(exec_params(conn_,
                          "INSERT INTO holder(id, pid, host, since, backend_pid) VALUES(1, $1::bigint, $2::text, "
                          "$3::text, pg_backend_pid()) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, "
                          "host = excluded.host, since = excluded.since, backend_pid = excluded.backend_pid",
                          p));
  if (!result_ok(r.get())) return error("cannot note who holds it");
  return Status::ok();
}

Status PostgresStore::set_sync_mode(SyncMode mode) {
  if (read_only_) return Status::ok();
  if (lost_) return error_of("cannot set its durability", "the connection was lost: open the store again");
  Params p;
  p.text(mode == SyncMode::kFull ? "on" : mode == SyncMode::kNormal ? "local" : "off");
  ResultPtr r(exec_params(conn_, "SELECT set_config('synchronous_commit', $1::text, false)", p));
  if (!result_ok(r.get())) return error("cannot set its durability");
  return Status::ok();
}

// The batch becomes far fewer statements than changes. Changes of different tables commute
// (records, contexts and history, locks: no statement reads another's tables), so each of
// these keeps a run of its own, in batch order: consecutive changes of one kind with no key
// repeated (a record's position, a context's seq, a lock's name) are one multi-row statement
// (or two or three, over different keys), which leaves the rows as applying them one by one
// does. A change that cannot join its run (another kind, or a key already in it) sends the
// run first; a put of the very record a run already puts (same table, sys_id and position)
// replaces it there, as it would replace it in the row. The rarer changes (definitions,
// ticks, run once, recovery notes, history pruning) stay one statement each, in order with
// their tables' runs.
Status PostgresStore::write(const StoreBatch& batch) {
  if (read_only_) return error_of("cannot write", "opened read only");
  std::vector<Op> ops;
  std::vector<std::string> new_tables;
  auto op = [&](const char* statement) -> Params& {
    ops.push_back(Op{statement, {}, {}});
    return ops.back().params;
  };

  // Records: puts or removes.
  std::vector<const RecordPut*> record_puts;
  std::unordered_map<uint64_t, size_t> put_at;  // position -> index in record_puts
  std::vector<const RecordRemove*> record_removes;
  auto flush_records = [&] {
    if (!record_puts.empty()) {
      PgArray tbl(kTextOid), sys_id(kTextOid), position(kInt8Oid), body(kTextOid);
      for (const RecordPut* c : record_puts) {
        tbl.text(c->table);
        sys_id.text(c->record.members()[0].value.as_string());
        position.integer(pg_clamp64(c->position));
        body.json(c->record);
      }
      Params& p = op("put_records");
      for (PgArray* a : {&tbl, &sys_id, &position, &body}) p.binary(a->bytes());
      ops.back().puts = std::move(record_puts);
      record_puts.clear();
      put_at.clear();
    }
    if (!record_removes.empty()) {
      PgArray tbl(kTextOid), sys_id(kTextOid), position(kInt8Oid);
      for (const RecordRemove* c : record_removes) {
        tbl.text(c->table);
        sys_id.text(c->sys_id);
        position.integer(pg_clamp64(c->position));
      }
      Params& p = op("remove_records");
      for (PgArray* a : {&tbl, &sys_id, &position}) p.binary(a->bytes());
      record_removes.clear();
    }
  };

  // Contexts and history: puts or updates, one per seq (the journal coalesces them, so a
  // seq seldom repeats in a batch); history pruning sends the run first.
  std::vector<const ContextPut*> context_puts;
  std::vector<const ContextUpdate*> context_updates;
  std::unordered_set<uint64_t> context_seqs;
  auto flush_contexts = [&] {
    if (!context_puts.empty()) {
      // In history once it ended with its record, live until then; never in both.
      auto to_history = [](const StoredContext& x) { return is_final_context_status(x.status) && !x.record.is_null(); };
      for (const bool history : {false, true}) {
        std::vector<PgArray> a;
        for (const char ch : std::string_view("btttbttttbbtt")) a.emplace_back(ch == 'b' ? kInt8Oid : kTextOid);
        if (history) a.pop_back();  // no checkpoint
        for (const ContextPut* c : context_puts) {
          const StoredContext& x = c->context;
          if (to_history(x) != history) continue;
          a[0].integer(pg_clamp64(x.seq));
          a[1].text(x.id);
          a[2].text(x.flow);
          a[3].text(x.status);
          a[4].integer(pg_clamp64(x.commit_seq));
          a[5].json(history ? ended_trigger(x.trigger) : x.trigger);
          a[6].json(x.inputs);
          a[7].json(x.cause);
          a[8].json(x.run_key);
          a[9].integer(x.started);
          a[10].integer(x.ended);
          a[11].json(x.record);
          if (!history) a[12].json(x.checkpoint);
        }
        if (a[0].count() == 0) continue;
        if (history) op("remove_contexts").binary(a[0].bytes());
        Params& p = op(history ? "put_histories" : "put_contexts");
        for (const PgArray& x : a) p.binary(x.bytes());
      }
      context_puts.clear();
    }
    if (!context_updates.empty()) {
      // A live context ending with its record moves to history; else its live row changes
      // (an ended one without its record stays there), or else its history row (an ended
      // context whose record changes). It is in one table only, so at most one of these
      // finds it.
      auto arrays = [&](bool finals_only, bool with_checkpoint, Params& p) {
        PgArray seq(kInt8Oid), status(kTextOid), started(kInt8Oid), ended(kInt8Oid), record(kTextOid),
            checkpoint(kTextOid);
        for (const ContextUpdate* c : context_updates) {
          if (finals_only && !is_final_context_status(c->status)) continue;
          seq.integer(pg_clamp64(c->seq));
          status.text(c->status);
          started.integer(c->started);
          ended.integer(c->ended);
          record.json(c->record);
          checkpoint.json(c->checkpoint);
        }
        for (PgArray* a : {&seq, &status, &started, &ended, &record}) p.binary(a->bytes());
        if (with_checkpoint) p.binary(checkpoint.bytes());
      };
      if (std::any_of(context_updates.begin(), context_updates.end(),
                      [](const ContextUpdate* c) { return is_final_context_status(c->status); })) {
        arrays(true, false, op("move_to_history"));
      }
      arrays(false, true, op("update_contexts"));
      arrays(false, false, op("update_histories"));
      context_updates.clear();
    }
    context_seqs.clear();
  };

  // Locks: each name's state now, or forgotten.
  std::vector<const LockPut*> locks;
  std::unordered_set<std::string_view> lock_names;
  auto flush_locks = [&] {
    if (locks.empty()) return;
    PgArray put_name(kTextOid), put_state(kTextOid), removed(kTextOid);
    for (const LockPut* c : locks) {
      if (c->state.is_null()) {
        removed.text(c->name);
      } else {
        put_name.text(c->name);
        put_state.json(c->state);
      }
    }
    if (put_name.count() > 0) {
      Params& p = op("put_locks");
      p.binary(put_name.bytes());
      p.binary(put_state.bytes());
    }
    if (removed.count() > 0) op("remove_locks").binary(removed.bytes());
    locks.clear();
    lock_names.clear();
  };

  for (const StoreChange& change : batch.changes) {
    std::visit(
        [&](const auto& c) {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, RecordPut>) {
            if (!tables_.count(c.table) &&
                std::find(new_tables.begin(), new_tables.end(), c.table) == new_tables.end()) {
              Params& t = op("put_table");  // record_tables: no run reads it
              t.text(c.table);
              t.integer(pg_clamp64(c.position));
              new_tables.push_back(c.table);
            }
            if (!record_removes.empty()) flush_records();
            auto at = put_at.find(c.position);
            if (at != put_at.end()) {
              const RecordPut& before = *record_puts[at->second];
              if (before.table == c.table && before.record.members()[0].value.as_string() ==
                                                 c.record.members()[0].value.as_string()) {
                record_puts[at->second] = &c;  // the same record again: the later body stands
                return;
              }
              flush_records();
            }
            put_at.emplace(c.position, record_puts.size());
            record_puts.push_back(&c);
          } else if constexpr (std::is_same_v<T, RecordRemove>) {
            if (!record_puts.empty()) flush_records();
            record_removes.push_back(&c);  // removing twice removes once
          } else if constexpr (std::is_same_v<T, ContextPut> || std::is_same_v<T, ContextUpdate>) {
            uint64_t seq;
            if constexpr (std::is_same_v<T, ContextPut>) {
              seq = c.context.seq;
              if (!context_updates.empty()) flush_contexts();
            } else {
              seq = c.seq;
              if (!context_puts.empty()) flush_contexts();
            }
            if (!context_seqs.insert(seq).second) {
              flush_contexts();
              context_seqs.insert(seq);
            }
            if constexpr (std::is_same_v<T, ContextPut>) {
              context_puts.push_back(&c);
            } else {
              context_updates.push_back(&c);
            }
          } else if constexpr (std::is_same_v<T, LockPut>) {
            if (!lock_names.insert(c.name).second) {
              flush_locks();
              lock_names.insert(c.name);
            }
            locks.push_back(&c);
          } else if constexpr (std::is_same_v<T, HistoryPrune>) {
            flush_contexts();  // it deletes history rows the run may write
            if (c.ended_before >= 0) op("prune_age").integer(c.ended_before);
            if (c.keep > 0) op("prune_count").integer(pg_clamp64(c.keep));
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
          } else if constexpr (std::is_same_v<T, RunOncePut>) {
            Params& p = op(c.flow.empty() ? "run_once_clear" : c.ran ? "run_once_add" : "run_once_remove");
            p.text(c.table);
            p.text(c.sys_id);
            if (!c.flow.empty()) p.text(c.flow);
          } else if constexpr (std::is_same_v<T, RecoveryNote>) {
            Params& p = op("add_recovery");
            p.integer(c.at);
            p.json(c.report);
          }
        },
        change);
  }
  flush_records();
  flush_contexts();
  flush_locks();
  const StoreCounters& k = batch.counters;
  Params& p = op("put_counters");
  p.integer(pg_clamp64(k.commit_seq));
  p.integer(pg_clamp64(k.context_seq));
  p.integer(k.fencing_token);
  p.integer(pg_clamp64(k.sys_id_seed));
  p.integer(pg_clamp64(k.sys_id_count));
  p.integer(k.clock);
  Status written = run_ops(ops, batch.changes.size());
  if (written) tables_.insert(new_tables.begin(), new_tables.end());
  return written;
}

Status PostgresStore::run_ops(const std::vector<Op>& ops, size_t changes) {
  const std::string what = "cannot write a batch of " + std::to_string(changes) + " changes";
  if (lost_) return error_of(what, "the connection was lost: open the store again");
  PGconn* const c = conn_;
  if (PQenterPipelineMode(c) != 1) return error(what);
  std::optional<Error> failure;
  bool lost = false;
  auto fail = [&](Error e) {
    if (!failure) failure = std::move(e);
  };
  // What was sent since the last sync: an op, or a plain statement and the command tag
  // that says it did what it should.
  struct Sent {
    const Op* op;
    const char* tag;
  };
  std::vector<Sent> sent;
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  auto send_plain = [&](const char* sql, const char* tag) {
    if (PQsendQueryParams(c, sql, 0, nullptr, nullptr, nullptr, nullptr, 0) != 1) lost = true;
    sent.push_back(Sent{nullptr, tag});
  };
  auto send_op = [&](const Op& o) {
    o.params.arrays(&values, &lengths, &formats);
    if (PQsendQueryPrepared(c, o.statement, o.params.size(), values.data(), lengths.data(), formats.data(), 0) != 1) {
      lost = true;
    }
    sent.push_back(Sent{&o, nullptr});
  };
  // Syncs, then reads the results of what was sent and the sync's.
  auto sync_and_read = [&] {
    if (!lost && PQpipelineSync(c) != 1) lost = true;
    for (const Sent& x : sent) {
      if (lost) break;
      ResultPtr r(PQgetResult(c));
      if (!r) {
        lost = true;
        break;
      }
      const ExecStatusType s = PQresultStatus(r.get());
      if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) {
        if (x.op && !x.op->puts.empty() && static_cast<size_t>(PQntuples(r.get())) != x.op->puts.size()) {
          // The first put whose position it did not return: another record stands there.
          std::unordered_set<std::string_view> written;
          for (int i = 0; i < PQntuples(r.get()); ++i) written.insert(cell_view(r.get(), i, 0));
          for (const RecordPut* put : x.op->puts) {
            if (written.count(std::to_string(pg_clamp64(put->position)))) continue;
            fail(error_of(what, "record " + std::string(put->record.members()[0].value.as_string()) + " of table " +
                                    put->table + " at position " + std::to_string(put->position) +
                                    ": another record is there"));
            break;
          }
          fail(error_of(what, "the server wrote fewer records than it was given"));
        }
        if (x.tag && std::string_view(PQcmdStatus(r.get())) != x.tag) {
          fail(error_of(what, std::string("the server answered ") + PQcmdStatus(r.get()) + " to " + x.tag));
        }
      } else if (s != PGRES_PIPELINE_ABORTED) {
        fail(error_of(what, one_line(PQresultErrorMessage(r.get()))));
      }
      ResultPtr end(PQgetResult(c));  // the null that ends its results
      if (PQstatus(c) == CONNECTION_BAD) lost = true;
    }
    sent.clear();
    if (lost) return;
    ResultPtr sync(PQgetResult(c));
    if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) lost = true;
  };

  // The statements go in chunks of kPipelineDepth, each followed by a sync whose results
  // are read before the next chunk is sent (so neither side's buffers fill up), BEGIN with
  // the first. A sync inside BEGIN ... COMMIT does not end the transaction: COMMIT goes
  // only once every statement succeeded, else ROLLBACK.
  send_plain("BEGIN", "BEGIN");
  for (const Op& o : ops) {
    if (lost || failure) break;
    send_op(o);
    if (sent.size() >= kPipelineDepth) sync_and_read();
  }
  // Record puts are checked by the positions they return, which only their result tells: such a chunk
  // is read before COMMIT is sent. Any other failure aborts the transaction on the server,
  // and a COMMIT sent with it answers ROLLBACK (a failure too).
  if (!lost && !failure && std::any_of(sent.begin(), sent.end(), [](const Sent& x) { return x.op && !x.op->puts.empty(); })) {
    sync_and_read();
  }
  if (!lost && !failure) {
    send_plain("COMMIT", "COMMIT");
    sync_and_read();
  }
  if (!lost && failure) {
    sync_and_read();  // what is still unread
    send_plain("ROLLBACK", nullptr);
    sync_and_read();
  }
  if (!lost) PQexitPipelineMode(c);
  if (lost || PQstatus(c) == CONNECTION_BAD) {
    // The server rolls back a transaction whose session ends; the store stops here.
    lost_ = true;
    std::string message = one_line(PQerrorMessage(c));
    if (message.empty()) message = "the connection was lost";
    if (failure) return *failure;
    return error_of(what, message + " (the connection is lost: open the store again)");
  }
  if (failure) return *failure;
  return Status::ok();
}

}  // namespace flowrt
