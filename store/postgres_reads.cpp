// PostgresStore's reads: load() on the writer's connection in one REPEATABLE READ
// transaction, and history (load_context, list_contexts) and definition versions through
// the reader connection, one statement each (postgres_store.h).
#include <libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

#include "store/postgres_rows.h"
#include "store/postgres_store.h"

namespace flowrt {

using namespace postgres_rows;  // NOLINT: this store's own rows and libpq handles

Result<StoredState> PostgresStore::load(bool with_contexts) {
  if (lost_) return error_of("cannot read it", "the connection was lost: open the store again");
  StoredState state;
  ResultPtr begin(PQexec(conn_, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  if (!result_ok(begin.get())) return error("cannot read it");
  struct End {
    PGconn* c;
    ~End() { ResultPtr r(PQexec(c, "COMMIT")); }
  } end{conn_};
  const std::string where = describe();
  std::string server_error;
  // Runs `sql`, calling `row` for each row; the first error ends it.
  auto query = [&](const char* sql, auto&& row) -> Status {
    Status s = for_each_row(conn_, sql, Params(), &server_error, row);
    if (!s && !server_error.empty()) return error_of("cannot read it", server_error);
    return s;
  };
#define FLOWRT_PG_CHECK(expr)                           \
  do {                                                  \
    const Status query_status = (expr);                 \
    if (!query_status) return query_status.error();     \
  } while (0)

  FLOWRT_PG_CHECK(query(
      "SELECT commit_seq, context_seq, fencing_token, sys_id_seed, sys_id_count, clock FROM counters WHERE id = 1",
      [&](const PGresult* r, int i) -> Status {
        state.fresh = false;
        state.counters.commit_seq = static_cast<uint64_t>(cell_int(r, i, 0));
        state.counters.context_seq = static_cast<uint64_t>(cell_int(r, i, 1));
        state.counters.fencing_token = cell_int(r, i, 2);
        state.counters.sys_id_seed = static_cast<uint64_t>(cell_int(r, i, 3));
        state.counters.sys_id_count = static_cast<uint64_t>(cell_int(r, i, 4));
        state.counters.clock = cell_int(r, i, 5);
        return Status::ok();
      }));
  FLOWRT_PG_CHECK(query("SELECT name FROM record_tables ORDER BY position, name", [&](const PGresult* r, int i) -> Status {
    state.tables.push_back(StoredState::Table{cell_text(r, i, 0), {}, {}});
    return Status::ok();
  }));
  {
    std::map<std::string, StoredState::Table*, std::less<>> by_name;
    for (StoredState::Table& t : state.tables) by_name.emplace(t.name, &t);
    StoredState::Table* table = nullptr;  // the last row's
    FLOWRT_PG_CHECK(query("SELECT tbl, sys_id, body, position FROM records ORDER BY position",
                          [&](const PGresult* r, int i) -> Status {
                            const std::string_view name = cell_view(r, i, 0);
                            if (!table || table->name != name) {
                              auto t = by_name.find(name);
                              table = t == by_name.end() ? nullptr : t->second;
                            }
                            auto what = [&] { return "record " + cell_text(r, i, 1) + " of table " + std::string(name); };
                            if (!table) return stored_rows::damaged_row(where, what() + ": no such table");
                            Value record;
                            FLOWRT_RETURN_IF_ERROR(stored_rows::parse_stored_json(cell_view(r, i, 2), where, what(), &record));
                            if (!record.is_object() || record.size() == 0 || !record.members()[0].value.is_string()) {
                              return stored_rows::damaged_row(where, what());
                            }
                            table->positions.push_back(static_cast<uint64_t>(cell_int(r, i, 3)));
                            table->records.push_back(std::move(record));
                            return Status::ok();
                          }));
  }
  FLOWRT_PG_CHECK(query(
      "SELECT type, id, draft, published, fingerprint, active, activated_at, last_tick FROM definitions ORDER BY type, id",
      [&](const PGresult* r, int i) -> Status {
        StoredDefinition d;
        d.type = cell_text(r, i, 0);
        d.id = cell_text(r, i, 1);
        FLOWRT_RETURN_IF_ERROR(cell_json(r, i, 2, where, "definition " + d.id, &d.draft));
        FLOWRT_RETURN_IF_ERROR(cell_json(r, i, 3, where, "definition " + d.id, &d.published));
        d.published_fingerprint = cell_text(r, i, 4);
        d.active = cell_view(r, i, 5) == "t";
        d.activated_at = cell_int(r, i, 6);
        d.last_tick = cell_int(r, i, 7);
        state.definitions.push_back(std::move(d));
        return Status::ok();
      }));
  if (with_contexts) {
    FLOWRT_PG_CHECK(query((std::string("SELECT ") + stored_rows::kContextColumns + ", checkpoint FROM contexts ORDER BY seq").c_str(),
                          [&](const PGresult* r, int i) -> Status {
                            StoredContext c;
                            FLOWRT_RETURN_IF_ERROR(context_of_row(r, i, where, /*with_record=*/true, &c));
                            state.contexts.push_back(std::move(c));
                            return Status::ok();
                          }));
  }
  FLOWRT_PG_CHECK(query("SELECT name, state FROM locks ORDER BY name", [&](const PGresult* r, int i) -> Status {
    StoredLock l;
    l.name = cell_text(r, i, 0);
    FLOWRT_RETURN_IF_ERROR(cell_json(r, i, 1, where, "lock " + l.name, &l.state));
    state.locks.push_back(std::move(l));
    return Status::ok();
  }));
  FLOWRT_PG_CHECK(query("SELECT tbl, sys_id, flow FROM run_once ORDER BY tbl, sys_id, flow",
                        [&](const PGresult* r, int i) -> Status {
                          state.run_once.push_back(
                              RunOncePut{cell_text(r, i, 0), cell_text(r, i, 1), cell_text(r, i, 2), true});
                          return Status::ok();
                        }));
  FLOWRT_PG_CHECK(query("SELECT at, report FROM recoveries ORDER BY id", [&](const PGresult* r, int i) -> Status {
    RecoveryNote n;
    n.at = cell_int(r, i, 0);
    FLOWRT_RETURN_IF_ERROR(cell_json(r, i, 1, where, "recovery report", &n.report));
    state.recoveries.push_back(std::move(n));
    return Status::ok();
  }));
  // A schema no writer of this version opened has no such table (prepare_keyed_writes).
  bool keyed = false;
  FLOWRT_PG_CHECK(query("SELECT to_regclass('keyed_writes') IS NOT NULL", [&](const PGresult* r, int i) -> Status {
    keyed = cell_view(r, i, 0) == "t";
    return Status::ok();
  }));
  if (keyed) {
    FLOWRT_PG_CHECK(query("SELECT caller, key, request, status, headers, body, at FROM keyed_writes ORDER BY caller, key",
                          [&](const PGresult* r, int i) -> Status {
                            KeyedWritePut k;
                            k.caller = cell_text(r, i, 0);
                            k.key = cell_text(r, i, 1);
                            k.request = cell_text(r, i, 2);
                            k.status = static_cast<int>(cell_int(r, i, 3));
                            k.headers = cell_text(r, i, 4);
                            k.body = cell_text(r, i, 5);
                            k.at = cell_int(r, i, 6);
                            state.keyed_writes.push_back(std::move(k));
                            return Status::ok();
                          }));
  }
#undef FLOWRT_PG_CHECK
  if (!read_only_) {
    for (const StoredState::Table& t : state.tables) tables_.insert(t.name);
  }
  return state;
}

namespace {

// Reads the contexts `sql` selects (stored_rows::kContextColumns and a checkpoint) on `conn`;
// `sql` names a prepared statement when `prepared`.
Status pg_read_contexts(PGconn* conn, const std::string& sql, const Params& params, const std::string& where,
                        bool with_record, std::string* server_error, std::vector<StoredContext>* out,
                        bool prepared = false) {
  return for_each_row(
      conn, sql, params, server_error,
      [&](const PGresult* r, int i) -> Status {
        StoredContext c;
        FLOWRT_RETURN_IF_ERROR(context_of_row(r, i, where, with_record, &c));
        out->push_back(std::move(c));
        return Status::ok();
      },
      prepared);
}

}  // namespace

// (The analysis cannot follow a lock taken by try_lock in a loop: the reader is held from
// here to the end, and let go by `release`.)
Status PostgresStore::read_on_reader(std::string_view what, const std::function<Status(PGconn*, std::string*)>& read)
    NO_THREAD_SAFETY_ANALYSIS {
  // The first reader free, else the next in turn, waited for.
  Reader* reader = nullptr;
  for (Reader& r : readers_) {
    if (r.mu.try_lock()) {
      reader = &r;
      break;
    }
  }
  if (!reader) {
    reader = &readers_[next_reader_.fetch_add(1, std::memory_order_relaxed) % kReaders];
    reader->mu.lock();
  }
  struct Release {
    Reader* r;
    ~Release() NO_THREAD_SAFETY_ANALYSIS { r->mu.unlock(); }
  } release{reader};
  for (int attempt = 0;; ++attempt) {
    FLOWRT_RETURN_IF_ERROR(ready_reader(*reader));
    std::string server_error;
    Status s = read(reader->conn, &server_error);
    if (s || server_error.empty()) return s;
    // A lost connection is connected again, once.
    if (attempt > 0 || PQstatus(reader->conn) == CONNECTION_OK) return error_of(what, server_error);
  }
}

const std::string& PostgresStore::load_context_sql() {
  static const std::string sql = std::string("SELECT ") + stored_rows::kContextColumns +
                                 ", checkpoint FROM contexts WHERE seq = $1 UNION ALL SELECT " +
                                 stored_rows::kContextColumns + ", NULL FROM history WHERE seq = $1";
  return sql;
}

Result<std::optional<StoredContext>> PostgresStore::load_context(uint64_t seq) {
  Params p;
  p.integer(static_cast<int64_t>(std::min<uint64_t>(seq, INT64_MAX)));
  std::vector<StoredContext> rows;
  FLOWRT_RETURN_IF_ERROR(read_on_reader("cannot read a context", [&](PGconn* reader, std::string* server_error) {
    rows.clear();
    return pg_read_contexts(reader, kLoadContext, p, describe(), true, server_error, &rows, /*prepared=*/true);
  }));
  if (rows.empty()) return std::optional<StoredContext>();
  return std::optional<StoredContext>(std::move(rows.front()));
}

std::string PostgresStore::list_contexts_sql(const ContextQuery& q, postgres_rows::Params* params) {
  // One statement: the page of live rows and the page of history rows, merged by seq by the
  // server (one snapshot: a context that moves to history meanwhile is seen once).
  Params& p = *params;
  auto param = [&](auto&& fill) {
    fill(p);
    return "$" + std::to_string(p.size());
  };
  const std::string after =
      param([&](Params& x) { x.integer(static_cast<int64_t>(std::min<uint64_t>(q.after_seq, INT64_MAX))); });
  const std::string up_to =
      param([&](Params& x) { x.integer(static_cast<int64_t>(std::min<uint64_t>(q.up_to_seq, INT64_MAX))); });
  const std::string limit =
      param([&](Params& x) { x.integer(static_cast<int64_t>(std::min<uint64_t>(q.limit, INT64_MAX))); });
  std::string w = " WHERE seq > " + after + "::bigint AND seq <= " + up_to + "::bigint";
  if (!q.flow.empty()) w += " AND flow = " + param([&](Params& x) { x.text(q.flow); }) + "::text";
  if (!q.status.empty()) w += " AND status = " + param([&](Params& x) { x.text(q.status); }) + "::text";
  const std::string order = q.newest_first ? " ORDER BY seq DESC LIMIT " : " ORDER BY seq LIMIT ";
  std::string sql = std::string("(SELECT ") + stored_rows::kContextColumns + ", checkpoint FROM contexts" + w +
                    (q.ended_only ? " AND status IN ('completed', 'cancelled', 'error')" : "") + order + limit +
                    "::bigint)";
  if (!q.loaded_only) {
    // History holds none of what load() gives.
    sql = "SELECT * FROM (" + sql + " UNION ALL (SELECT " + stored_rows::kContextColumns + ", NULL FROM history" + w + order +
          limit + "::bigint)) AS page" + order + limit + "::bigint";
  }
  return sql;
}

Result<std::vector<StoredContext>> PostgresStore::list_contexts(const ContextQuery& q) {
  Params p;
  const std::string sql = list_contexts_sql(q, &p);
  std::vector<StoredContext> rows;
  FLOWRT_RETURN_IF_ERROR(read_on_reader("cannot read its contexts", [&](PGconn* reader, std::string* server_error) {
    rows.clear();
    return pg_read_contexts(reader, sql, p, describe(), q.records_of_checkpointed, server_error, &rows);
  }));
  return rows;
}

Result<std::string> PostgresStore::explain_list_contexts(const ContextQuery& q) {
  Params p;
  const std::string sql = "EXPLAIN " + list_contexts_sql(q, &p);
  std::string plan;
  FLOWRT_RETURN_IF_ERROR(read_on_reader("cannot explain a list of its contexts", [&](PGconn* reader, std::string* server_error) {
    plan.clear();
    return for_each_row(reader, sql, p, server_error, [&](const PGresult* r, int i) -> Status {
      plan += cell_text(r, i, 0);
      plan += '\n';
      return Status::ok();
    });
  }));
  return plan;
}

Result<Value> PostgresStore::load_definition_version(std::string_view type, std::string_view id,
                                                     std::string_view fingerprint) {
  Params p;
  p.text(type);
  p.text(id);
  p.text(fingerprint);
  Value out;
  FLOWRT_RETURN_IF_ERROR(read_on_reader("cannot read a definition version", [&](PGconn* reader, std::string* server_error) {
    out = Value();
    return for_each_row(
        reader,
        "SELECT body FROM definition_versions WHERE type = $1::text AND id = $2::text AND fingerprint = $3::text", p,
        server_error, [&](const PGresult* r, int i) -> Status {
          return cell_json(r, i, 0, describe(),
                           "definition " + std::string(id) + " version " + std::string(fingerprint), &out);
        });
  }));
  return out;
}

}  // namespace flowrt
