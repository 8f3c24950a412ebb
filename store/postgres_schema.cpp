// PostgresStore's schema: the tables of a new store, the check of an existing one's version
// (postgres_store.h says what the tables hold, and how later versions migrate), and the
// statements write() prepares on the writer's connection.
#include <libpq-fe.h>

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "store/postgres_rows.h"
#include "store/postgres_store.h"

namespace flowrt {

using namespace postgres_rows;  // NOLINT: this store's own rows and libpq handles

namespace {

// Names and keys compare as bytes (COLLATE "C"), as in the sqlite store: load() orders by them.
const char* const kPgSchema = R"sql(
CREATE TABLE meta(key text COLLATE "C" PRIMARY KEY, value text NOT NULL);
CREATE TABLE counters(id integer PRIMARY KEY CHECK (id = 1), commit_seq bigint NOT NULL,
  context_seq bigint NOT NULL, fencing_token bigint NOT NULL, sys_id_seed bigint NOT NULL,
  sys_id_count bigint NOT NULL, clock bigint NOT NULL);
CREATE TABLE record_tables(name text COLLATE "C" PRIMARY KEY, position bigint NOT NULL);
CREATE TABLE records(position bigint PRIMARY KEY, tbl text COLLATE "C" NOT NULL, sys_id text COLLATE "C" NOT NULL,
  body text NOT NULL);
CREATE TABLE definitions(type text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, draft text, published text,
  fingerprint text, active boolean NOT NULL, activated_at bigint NOT NULL, last_tick bigint NOT NULL,
  PRIMARY KEY (type, id));
CREATE TABLE definition_versions(type text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL,
  fingerprint text COLLATE "C" NOT NULL, body text NOT NULL, PRIMARY KEY (type, id, fingerprint));
CREATE TABLE contexts(seq bigint PRIMARY KEY, id text NOT NULL, flow text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL, commit_seq bigint NOT NULL, trigger text, inputs text, cause text, run_key text,
  started bigint NOT NULL, ended bigint NOT NULL, record text, checkpoint text);
CREATE TABLE history(seq bigint PRIMARY KEY, id text NOT NULL, flow text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL, commit_seq bigint NOT NULL, trigger text, inputs text, cause text, run_key text,
  started bigint NOT NULL, ended bigint NOT NULL, record text NOT NULL);
CREATE INDEX history_by_flow ON history(flow, seq);
CREATE INDEX history_by_status ON history(status, seq);
CREATE INDEX history_by_ended ON history(ended);
CREATE TABLE locks(name text COLLATE "C" PRIMARY KEY, state text NOT NULL);
CREATE TABLE run_once(tbl text COLLATE "C" NOT NULL, sys_id text COLLATE "C" NOT NULL, flow text COLLATE "C" NOT NULL,
  PRIMARY KEY (tbl, sys_id, flow));
CREATE TABLE recoveries(id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at bigint NOT NULL, report text NOT NULL);
CREATE TABLE holder(id integer PRIMARY KEY CHECK (id = 1), pid bigint NOT NULL, host text NOT NULL,
  since text NOT NULL, backend_pid bigint NOT NULL);
)sql";

// ended_trigger (store/store.h) in SQL, of a `trigger` column holding JSON text: its
// members but record, previous and test, in their order (json, not jsonb: order and duplicates
// are kept). The server's json functions refuse a text holding the escape \u0000 ("cannot
// be converted to text"), even within a member they pass on: such a trigger (a record a
// user wrote with one) is kept whole, copies and all, rather than failing the batch and
// every batch after it.
#define FLOWRT_PG_ENDED_TRIGGER                                                                                  \
  "CASE WHEN strpos(trigger, '\\u0000') > 0 THEN trigger WHEN json_typeof(trigger::json) = 'object' THEN "       \
  "COALESCE((SELECT json_object_agg(e.key, e.value ORDER BY "                                                     \
  "e.n)::text FROM json_each(trigger::json) WITH ORDINALITY AS e(key, value, n) WHERE e.key NOT IN ('record', "    \
  "'previous', 'test')), '{}') ELSE trigger END"

#define FLOWRT_PG_CONTEXT_VALUES "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12"
#define FLOWRT_PG_CONTEXT_UPDATES                                                                                 \
  "id = excluded.id, flow = excluded.flow, status = excluded.status, commit_seq = excluded.commit_seq, "         \
  "trigger = excluded.trigger, inputs = excluded.inputs, cause = excluded.cause, run_key = excluded.run_key, "    \
  "started = excluded.started, ended = excluded.ended, record = excluded.record"

// A live row moved to history, `trigger` the SQL of its ended trigger.
#define FLOWRT_PG_MOVE_TO_HISTORY(trigger)                                                                       \
  "WITH moved AS (DELETE FROM contexts WHERE seq = $1 AND COALESCE($5, record) IS NOT NULL RETURNING *) "        \
  "INSERT INTO history(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record) " \
  "SELECT seq, id, flow, $2, commit_seq, " trigger ", inputs, cause, run_key, "                                    \
  "CASE WHEN $3 >= 0 THEN $3 ELSE started END, CASE WHEN $4 >= 0 THEN $4 ELSE ended END, COALESCE($5, record) "  \
  "FROM moved"

// Keyed writes (runtime/keyed_writes.h): made by every writer when missing, apart from the
// schema versions, as the sqlite store does (store/sqlite_schema.cpp): an older flowrt
// neither reads nor writes the table.
// (client_min_messages: no notice that they exist already.)
const char* const kPgKeyedWrites = R"sql(
BEGIN;
SET LOCAL client_min_messages = warning;
CREATE TABLE IF NOT EXISTS keyed_writes(caller text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL,
  request text NOT NULL, status bigint NOT NULL, headers text NOT NULL, body text NOT NULL, at bigint NOT NULL,
  PRIMARY KEY (caller, key));
CREATE INDEX IF NOT EXISTS keyed_writes_by_at ON keyed_writes(at);
COMMIT;
)sql";

// The statements' parameter types: b bigint, t text, o boolean.
void oids_of(const char* types, std::vector<Oid>* out) {
  for (const char* t = types; *t; ++t) out->push_back(*t == 'b' ? kInt8Oid : *t == 'o' ? kBoolOid : kTextOid);
}

// write()'s statements: name, parameter types (as oids_of reads them), SQL. Record puts and
// live context rows are put_records_N and put_contexts_N (below).
struct PgStatement {
  const char* name;
  const char* types;
  const char* sql;
};
const PgStatement kPgStatements[] = {
    {"put_table", "tb", "INSERT INTO record_tables(name, position) VALUES($1, $2) ON CONFLICT (name) DO NOTHING"},
    {"remove_record", "ttb", "DELETE FROM records WHERE position = $3 AND tbl = $1 AND sys_id = $2"},
    {"put_definition", "tttttobb",
     "INSERT INTO definitions(type, id, draft, published, fingerprint, active, activated_at, last_tick) "
     "VALUES($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (type, id) DO UPDATE SET draft = excluded.draft, "
     "published = excluded.published, fingerprint = excluded.fingerprint, active = excluded.active, "
     "activated_at = excluded.activated_at"},
    {"put_definition_version", "tttt",
     "INSERT INTO definition_versions(type, id, fingerprint, body) VALUES($1, $2, $3, $4) ON CONFLICT DO NOTHING"},
    {"schedule_tick", "tb", "UPDATE definitions SET last_tick = $2 WHERE type = 'flow' AND id = $1"},
    {"put_history", "btttbttttbbt",
     "INSERT INTO history(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record) "
     "VALUES(" FLOWRT_PG_CONTEXT_VALUES ") ON CONFLICT (seq) DO UPDATE SET " FLOWRT_PG_CONTEXT_UPDATES},
    {"remove_context", "b", "DELETE FROM contexts WHERE seq = $1"},
    // A live context ending with its record: its row moves to history, in one statement
    // (none when it is not live, or has no record yet); its ended trigger computed by the
    // server from the row's trigger, or given ($6) where the writer kept it (ContextPlaces).
    {"move_to_history", "btbbt", FLOWRT_PG_MOVE_TO_HISTORY(FLOWRT_PG_ENDED_TRIGGER)},
    {"move_to_history_given", "btbbtt", FLOWRT_PG_MOVE_TO_HISTORY("$6")},
    {"update_context", "btbbtt",
     "UPDATE contexts SET status = $2, started = CASE WHEN $3 >= 0 THEN $3 ELSE started END, "
     "ended = CASE WHEN $4 >= 0 THEN $4 ELSE ended END, record = COALESCE($5, record), "
     "checkpoint = CASE WHEN $2 IN ('completed', 'cancelled', 'error') THEN NULL ELSE COALESCE($6, checkpoint) END "
     "WHERE seq = $1"},
    {"update_history", "btbbt",
     "UPDATE history SET status = $2, started = CASE WHEN $3 >= 0 THEN $3 ELSE started END, "
     "ended = CASE WHEN $4 >= 0 THEN $4 ELSE ended END, record = COALESCE($5, record) WHERE seq = $1"},
    {"prune_age", "b", "DELETE FROM history WHERE ended < $1"},
    // All but the `keep` newest by seq: the (keep + 1)th newest and everything before it.
    {"prune_count", "b",
     "DELETE FROM history WHERE seq <= (SELECT seq FROM history ORDER BY seq DESC OFFSET $1 LIMIT 1)"},
    {"put_lock", "tt", "INSERT INTO locks(name, state) VALUES($1, $2) ON CONFLICT (name) DO UPDATE SET state = excluded.state"},
    {"remove_lock", "t", "DELETE FROM locks WHERE name = $1"},
    {"run_once_add", "ttt", "INSERT INTO run_once(tbl, sys_id, flow) VALUES($1, $2, $3) ON CONFLICT DO NOTHING"},
    {"run_once_remove", "ttt", "DELETE FROM run_once WHERE tbl = $1 AND sys_id = $2 AND flow = $3"},
    {"run_once_clear", "tt", "DELETE FROM run_once WHERE tbl = $1 AND sys_id = $2"},
    // A note equal to one there (the same time and report) is that note written again: a
    // batch whose COMMIT was cut may have committed, and is written again (one writer per
    // schema, so nothing adds the same note meanwhile).
    {"add_recovery", "bt",
     "INSERT INTO recoveries(at, report) SELECT $1, $2 "
     "WHERE NOT EXISTS (SELECT 1 FROM recoveries WHERE at = $1 AND report = $2)"},
    {"put_keyed_write", "tttbttb",
     "INSERT INTO keyed_writes(caller, key, request, status, headers, body, at) VALUES($1, $2, $3, $4, $5, $6, $7) "
     "ON CONFLICT (caller, key) DO UPDATE SET request = excluded.request, status = excluded.status, "
     "headers = excluded.headers, body = excluded.body, at = excluded.at"},
    {"prune_keyed_writes", "b", "DELETE FROM keyed_writes WHERE at < $1"},
    {"put_counters", "bbbbbb",
     "INSERT INTO counters(id, commit_seq, context_seq, fencing_token, sys_id_seed, sys_id_count, clock) "
     "VALUES(1, $1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET commit_seq = excluded.commit_seq, "
     "context_seq = excluded.context_seq, fencing_token = excluded.fencing_token, sys_id_seed = excluded.sys_id_seed, "
     "sys_id_count = excluded.sys_id_count, clock = excluded.clock"},
};

// What takes a store of version N - 1 to version N (kPgMigrations[N - 2]), each run in the
// transaction that also sets the new version (as store/sqlite_schema.cpp does). None yet.
const char* const kPgMigrations[] = {nullptr};
static_assert(std::size(kPgMigrations) == PostgresStore::kSchemaVersion, "one migration per version after 1 (and a placeholder)");

}  // namespace

Status PostgresStore::prepare_schema() {
  Params schema;
  schema.text(schema_);
  ResultPtr exists(exec_params(
      conn_, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = $1::text AND tablename = 'meta')",
      schema));
  if (!result_ok(exists.get()) || PQntuples(exists.get()) != 1) return error("cannot read its schema");
  if (cell_view(exists.get(), 0, 0) != "t") {
    if (read_only_) return error_of("cannot open", "schema " + schema_ + " holds no flowrt store (no meta table)");
    // A new store: every table, and its version, in one transaction.
    return in_transaction(
        conn_, "BEGIN",
        [&]() -> Status {
          ResultPtr tables(PQexec(conn_, kPgSchema));
          Params version;
          version.text(std::to_string(kSchemaVersion));
          ResultPtr meta;
          if (result_ok(tables.get())) {
            meta = exec_params(conn_,
                               "INSERT INTO meta(key, value) VALUES('application', 'flowrt'), ('schema_version', $1::text)",
                               version);
          }
          if (!result_ok(tables.get()) || !result_ok(meta.get())) {
            return error("cannot create its tables in schema " + schema_);
          }
          return Status::ok();
        },
        [&] { return error("cannot create its tables"); });
  }
  ResultPtr meta(PQexec(conn_, "SELECT key, value FROM meta WHERE key IN ('application', 'schema_version')"));
  if (!result_ok(meta.get())) return error("cannot read its schema version");
  std::string application;
  int version = 0;
  for (int r = 0; r < PQntuples(meta.get()); ++r) {
    if (cell_view(meta.get(), r, 0) == "application") application = cell_text(meta.get(), r, 1);
    else version = static_cast<int>(cell_int(meta.get(), r, 1));
  }
  if (application != "flowrt" || version < 1) {
    return error_of("cannot open", "schema " + schema_ + " is not a flowrt store (its meta table is something else's)");
  }
  if (version > kSchemaVersion) {
    return error_of("cannot open", "written by a newer flowrt (data schema version " + std::to_string(version) +
                                       "; this flowrt reads versions up to " + std::to_string(kSchemaVersion) +
                                       "): refused, the database was not changed");
  }
  // version < kSchemaVersion: no older version exists yet (kPgMigrations).
  return Status::ok();
}

Status PostgresStore::prepare_keyed_writes() {
  ResultPtr r(PQexec(conn_, kPgKeyedWrites));
  if (!result_ok(r.get())) {
    return error_of("cannot create its table of keyed writes", one_line(PQresultErrorMessage(r.get())));
  }
  return Status::ok();
}

namespace {

// The names of the statements that write n rows at once (n = 1 .. kPutGroup): "<base>_<n>".
std::vector<std::string> group_names(const char* base) {
  std::vector<std::string> v(PostgresStore::kPutGroup + 1);
  for (size_t i = 1; i <= PostgresStore::kPutGroup; ++i) v[i] = std::string(base) + "_" + std::to_string(i);
  return v;
}

// A statement writing n rows: `head` VALUES, then a row per n of `order.size()` parameters
// of `types` (a PgStatement's letters), the k-th row's values being the parameters
// `order` names (1-based), shifted by k rows; then `tail`.
struct GroupStatement {
  const char* head;
  std::vector<int> order;
  const char* types;
  const char* tail;
};

std::string group_sql(const GroupStatement& g, size_t n, std::vector<Oid>* types) {
  std::string sql = std::string(g.head) + " VALUES";
  const size_t width = g.order.size();
  for (size_t i = 0; i < n; ++i) {
    sql += i ? ", (" : "(";
    for (size_t k = 0; k < width; ++k) {
      sql += (k ? ", $" : "$") + std::to_string(i * width + static_cast<size_t>(g.order[k]));
    }
    sql += ")";
    oids_of(g.types, types);
  }
  return sql + " " + g.tail;
}

// n records, each inserted at its position or the record there updated; a different record
// at that position is left as it is. RETURNING tells which were written (a position missing
// from it holds another record, and the batch is refused, naming it).
const GroupStatement kPutRecords{"INSERT INTO records(position, tbl, sys_id, body)", {3, 1, 2, 4}, "ttbt",
                                 "ON CONFLICT (position) DO UPDATE SET body = excluded.body WHERE records.tbl = "
                                 "excluded.tbl AND records.sys_id = excluded.sys_id RETURNING position"};
// n live context rows.
const GroupStatement kPutContexts{
    "INSERT INTO contexts(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record, "
    "checkpoint)",
    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13},
    "btttbttttbbtt",
    "ON CONFLICT (seq) DO UPDATE SET " FLOWRT_PG_CONTEXT_UPDATES ", checkpoint = excluded.checkpoint"};

}  // namespace

const char* PostgresStore::put_records_statement(size_t n) {
  static const std::vector<std::string> names = group_names("put_records");
  return names.at(n).c_str();
}

const char* PostgresStore::put_contexts_statement(size_t n) {
  static const std::vector<std::string> names = group_names("put_contexts");
  return names.at(n).c_str();
}

Status PostgresStore::prepare_statements() {
  // The statements that write up to kPutGroup rows at once: one statement's set-up for all.
  for (size_t n = 1; n <= kPutGroup; ++n) {
    for (const auto& [statement, name] : {std::pair{&kPutRecords, put_records_statement(n)},
                                          std::pair{&kPutContexts, put_contexts_statement(n)}}) {
      std::vector<Oid> types;
      const std::string sql = group_sql(*statement, n, &types);
      ResultPtr r(PQprepare(conn_, name, sql.c_str(), static_cast<int>(types.size()), types.data()));
      if (!result_ok(r.get())) {
        return error_of("cannot prepare its statements", std::string(name) + ": " + one_line(PQresultErrorMessage(r.get())));
      }
    }
  }
  for (const PgStatement& s : kPgStatements) {
    std::vector<Oid> types;
    oids_of(s.types, &types);
    ResultPtr r(PQprepare(conn_, s.name, s.sql, static_cast<int>(types.size()), types.data()));
    if (!result_ok(r.get())) {
      return error_of("cannot prepare its statements", std::string(s.name) + ": " + one_line(PQresultErrorMessage(r.get())));
    }
  }
  if (lead_epoch_ > 0) {
    // A cluster leader's check, first in every write (the cluster's tables: postgres_cluster.h).
    const Oid types[] = {kInt8Oid, kInt8Oid};
    ResultPtr r(PQprepare(conn_, "fence",
                          "UPDATE cluster_lead SET applied_op = GREATEST(applied_op, $2) WHERE id = 1 AND epoch = $1", 2,
                          types));
    if (!result_ok(r.get())) {
      return error_of("cannot prepare its statements", "fence: " + one_line(PQresultErrorMessage(r.get())));
    }
    // The context an operation started, kept with its inbox entry (StoreBatch::operations_started).
    const Oid started_types[] = {kInt8Oid, kTextOid};
    ResultPtr s(PQprepare(conn_, "operation_started", "UPDATE cluster_inbox SET started = $2 WHERE seq = $1", 2,
                          started_types));
    if (!result_ok(s.get())) {
      return error_of("cannot prepare its statements", "operation_started: " + one_line(PQresultErrorMessage(s.get())));
    }
  }
  return Status::ok();
}

}  // namespace flowrt

#undef FLOWRT_PG_ENDED_TRIGGER
#undef FLOWRT_PG_CONTEXT_VALUES
#undef FLOWRT_PG_CONTEXT_UPDATES
#undef FLOWRT_PG_MOVE_TO_HISTORY
