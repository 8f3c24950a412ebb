#include "store/postgres_cluster.h"

#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <initializer_list>
#include <thread>
#include <unordered_set>
#include <utility>

#include "store/postgres_rows.h"
#include "store/postgres_store.h"

namespace flowrt {

using namespace postgres_rows;  // NOLINT: the store's libpq handles

namespace {

// IF NOT EXISTS throughout: a second node finds them there. Times are the database's.
const char* const kClusterTables = R"sql(
CREATE TABLE IF NOT EXISTS cluster_nodes(incarnation bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL, address text NOT NULL, host text NOT NULL, pid bigint NOT NULL,
  started timestamptz NOT NULL DEFAULT clock_timestamp(), heartbeat timestamptz NOT NULL DEFAULT clock_timestamp(),
  lease_until timestamptz NOT NULL, left_at timestamptz);
CREATE TABLE IF NOT EXISTS cluster_lead(id integer PRIMARY KEY CHECK (id = 1), incarnation bigint,
  epoch bigint NOT NULL, since timestamptz, applied_op bigint NOT NULL);
INSERT INTO cluster_lead(id, incarnation, epoch, since, applied_op) VALUES (1, NULL, 0, NULL, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS cluster_inbox_head(id integer PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL);
INSERT INTO cluster_inbox_head(id, seq) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS cluster_inbox(seq bigint PRIMARY KEY, incarnation bigint NOT NULL,
  accepted timestamptz NOT NULL DEFAULT clock_timestamp(), method text NOT NULL, target text NOT NULL,
  caller text NOT NULL, role text NOT NULL, authenticated boolean NOT NULL, content_type text NOT NULL,
  body bytea NOT NULL, status integer, reply_type text, reply bytea, answered timestamptz);
CREATE INDEX IF NOT EXISTS cluster_inbox_unanswered ON cluster_inbox(seq) WHERE answered IS NULL;
DO $$ BEGIN  -- columns added since the first version; ALTER only when missing (it locks the table)
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = 'cluster_inbox' AND column_name = 'batch') THEN
    ALTER TABLE cluster_inbox ADD COLUMN batch text;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = 'cluster_inbox' AND column_name = 'idem_key') THEN
    ALTER TABLE cluster_inbox ADD COLUMN idem_key text;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                 AND table_name = 'cluster_nodes' AND column_name = 'runnable_contexts') THEN
    ALTER TABLE cluster_nodes ADD COLUMN runnable_contexts bigint NOT NULL DEFAULT 0,
      ADD COLUMN waiting_contexts bigint NOT NULL DEFAULT 0, ADD COLUMN queued_events bigint NOT NULL DEFAULT 0;
  END IF;
END $$;
CREATE INDEX IF NOT EXISTS cluster_inbox_batch ON cluster_inbox(batch) WHERE batch IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS cluster_inbox_key ON cluster_inbox(caller, idem_key) WHERE idem_key IS NOT NULL;
)sql";

// A timestamptz column as ISO 8601 in UTC with milliseconds, as the rest of the API writes times.
#define FLOWRT_PG_ISO(col) "to_char((" col ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

// Rows of a multi-row statement per statement: a few hundred parameters each, far below
// the protocol's 65,535.
constexpr size_t kRowsPerStatement = 256;

// "($N::cast, ...)" for a row whose parameters start after the `before` already in the
// statement, one per cast ("" for none: the column's type decides).
std::string placeholders(int before, std::initializer_list<const char*> casts) {
  std::string out = "(";
  int n = before;
  for (const char* cast : casts) {
    if (n > before) out += ", ";
    ++n;
    out += "$" + std::to_string(n) + cast;
  }
  return out + ")";
}

// Runs statement `name` with `params` on `conn`, first preparing it from `sql()` when
// `prepared` does not have it yet (then adding it). The inbox's statements run several
// times a second on every node, and parsing and planning them anew each time was a third
// of their connections' server time; the sessions plan them once (generic plans: connect()
// sets plan_cache_mode). A failed prepare is returned as the statement's result.
template <class Sql>
ResultPtr exec_prepared(PGconn* conn, std::unordered_set<std::string>* prepared, const std::string& name, Sql&& sql,
                        const Params& params) {
  if (!prepared->contains(name)) {
    ResultPtr r(PQprepare(conn, name.c_str(), std::string(sql()).c_str(), params.size(), nullptr));
    if (!result_ok(r.get())) return r;
    prepared->insert(name);
  }
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  params.arrays(&values, &lengths, &formats);
  return ResultPtr(PQexecPrepared(conn, name.c_str(), params.size(), values.data(), lengths.data(), formats.data(), 0));
}

std::string bytes_of(const PGresult* res, int r, int c) {
  size_t n = 0;
  unsigned char* raw = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(res, r, c)), &n);
  if (!raw) return {};
  std::string out(reinterpret_cast<const char*>(raw), n);
  PQfreemem(raw);
  return out;
}

std::string local_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

// FNV-1a: the same in every node's process, for a channel name within PostgreSQL's 63 bytes.
uint64_t stable_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

}  // namespace

Result<std::unique_ptr<PostgresCluster>> PostgresCluster::connect(const std::string& url, int statement_timeout_ms) {
  Result<std::string> where = PostgresStore::where_of(url);
  if (!where) return where.error();
  ConnPtr conn(connect_to(url));
  if (!conn || PQstatus(conn.get()) != CONNECTION_OK) {
    return Error{"postgresql database " + *where + ": the cluster cannot connect: " +
                 (conn ? one_line(PQerrorMessage(conn.get())) : std::string("out of memory"))};
  }
  std::unique_ptr<PostgresCluster> c(new PostgresCluster(conn.release(), *where));
  ResultPtr quiet(PQexec(c->conn_, "SET client_min_messages = warning"));  // no "already exists" notices
  // The prepared statements' plans made once (exec_prepared): none of them gains from a plan
  // for its parameters' values.
  ResultPtr generic(PQexec(c->conn_, "SET plan_cache_mode = force_generic_plan"));
  if (!result_ok(generic.get())) return c->error("cannot set its session's plans");
  if (!limit_idle_transactions(c->conn_)) return c->error("cannot set its session's limits");
  // A statement limit of the URL's (options=-cstatement_timeout%3D...), the role's or the
  // database's stands; without one, the cluster's own.
  ResultPtr limit(PQexec(c->conn_, "SELECT current_setting('statement_timeout') = '0'"));
  if (!result_ok(limit.get()) || PQntuples(limit.get()) != 1) return c->error("cannot read its session's limits");
  if (cell_view(limit.get(), 0, 0) == "t") {
    const std::string sql = "SET statement_timeout = " + std::to_string(statement_timeout_ms);
    ResultPtr set(PQexec(c->conn_, sql.c_str()));
    if (!result_ok(set.get())) return c->error("cannot set its session's limits");
  }
  ResultPtr r(PQexec(c->conn_, "SELECT current_schema()"));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1 || cell_null(r.get(), 0, 0)) {
    return c->error("cannot read its schema (the search_path names none that exists?)");
  }
  c->schema_ = cell_text(r.get(), 0, 0);
  FLOWRT_RETURN_IF_ERROR(c->create_tables());
  return c;
}

PostgresCluster::~PostgresCluster() { PQfinish(conn_); }

Error PostgresCluster::error(std::string_view what) const {
  return Error{"postgresql database " + where_ + ": cluster: " + std::string(what) + ": " +
               one_line(PQerrorMessage(conn_))};
}

int PostgresCluster::backend_pid() const { return PQbackendPID(conn_); }

std::string PostgresCluster::channel(std::string_view name) const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(stable_hash(schema_)));
  return std::string(name) + "_" + hex;
}

Status PostgresCluster::create_tables() {
  return in_transaction(
      conn_, "BEGIN",
      [&]() -> Status {
        ResultPtr lock(
            PQexec(conn_, "SELECT pg_advisory_xact_lock(hashtext('flowrt-cluster'), hashtext(current_schema()))"));
        ResultPtr tables;
        if (result_ok(lock.get())) tables.reset(PQexec(conn_, kClusterTables));
        if (!result_ok(lock.get()) || !tables || !result_ok(tables.get())) {
          return error("cannot create its tables in schema " + schema_);
        }
        return Status::ok();
      },
      [&] { return error("cannot create its tables"); });
}

Result<int64_t> PostgresCluster::join(std::string_view name, std::string_view address, int lease_ms) {
  Params p;
  p.text(name);
  p.text(address);
  p.text(local_host());
  p.integer(static_cast<int64_t>(::getpid()));
  p.integer(lease_ms);
  ResultPtr r(exec_params(conn_,
                          "INSERT INTO cluster_nodes(name, address, host, pid, lease_until) VALUES($1, $2, $3, "
                          "$4::bigint, clock_timestamp() + $5::bigint * interval '1 millisecond') RETURNING incarnation",
                          p));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot join");
  return cell_int(r.get(), 0, 0);
}

Status PostgresCluster::set_address(int64_t incarnation, std::string_view address) {
  Params p;
  p.integer(incarnation);
  p.text(address);
  ResultPtr r(exec_params(conn_, "UPDATE cluster_nodes SET address = $2 WHERE incarnation = $1::bigint", p));
  if (!result_ok(r.get())) return error("cannot note its address");
  return Status::ok();
}

Status PostgresCluster::heartbeat(int64_t incarnation, int lease_ms, const NodeRuns& runs) {
  Params p;
  p.integer(incarnation);
  p.integer(lease_ms);
  p.integer(runs.runnable_contexts);
  p.integer(runs.waiting_contexts);
  p.integer(runs.queued_events);
  ResultPtr r(exec_params(conn_,
                          "UPDATE cluster_nodes SET heartbeat = clock_timestamp(), lease_until = clock_timestamp() + "
                          "$2::bigint * interval '1 millisecond', runnable_contexts = $3::bigint, waiting_contexts = "
                          "$4::bigint, queued_events = $5::bigint WHERE incarnation = $1::bigint AND left_at IS NULL",
                          p));
  if (!result_ok(r.get())) return error("cannot renew its lease");
  if (std::string_view(PQcmdTuples(r.get())) != "1") {
    return Error{"postgresql database " + where_ + ": cluster: node incarnation " + std::to_string(incarnation) +
                 " has left the cluster"};
  }
  return Status::ok();
}

Result<std::optional<ClusterLead>> PostgresCluster::try_lead(int64_t incarnation) {
  using Outcome = Result<std::optional<ClusterLead>>;
  return in_transaction(
      conn_, "BEGIN",
      [&]() -> Outcome {
        Params me;
        me.integer(incarnation);
        // Locks the lead row: a leader's store batch in flight (which updates it) finishes
        // first, and so does a recording of answers (FOR KEY SHARE, which only FOR UPDATE
        // waits for: the leader's own batches and answers do not wait for each other).
        ResultPtr locked(PQexec(conn_, "SELECT 1 FROM cluster_lead WHERE id = 1 FOR UPDATE"));
        if (!result_ok(locked.get())) return error("cannot try to lead");
        ResultPtr r(exec_params(conn_,
                                "UPDATE cluster_lead l SET incarnation = $1::bigint, epoch = l.epoch + 1, since = "
                                "clock_timestamp() WHERE l.id = 1 AND (l.incarnation IS NULL OR NOT EXISTS (SELECT 1 "
                                "FROM cluster_nodes n WHERE n.incarnation = l.incarnation AND n.left_at IS NULL AND "
                                "n.lease_until > clock_timestamp())) AND EXISTS (SELECT 1 FROM cluster_nodes m WHERE "
                                "m.incarnation = $1::bigint AND m.left_at IS NULL AND m.lease_until > "
                                "clock_timestamp()) RETURNING l.epoch, " FLOWRT_PG_ISO("l.since") ", l.applied_op",
                                me));
        if (!result_ok(r.get())) return error("cannot try to lead");
        std::optional<ClusterLead> lead;
        if (PQntuples(r.get()) == 1) {
          lead = ClusterLead{incarnation, cell_int(r.get(), 0, 0), cell_text(r.get(), 0, 1),
                             static_cast<uint64_t>(cell_int(r.get(), 0, 2))};
        }
        return lead;
      },
      [&]() -> Outcome { return error("cannot try to lead"); });
}

Result<ClusterLead> PostgresCluster::lead() {
  ResultPtr r(PQexec(conn_, "SELECT COALESCE(incarnation, 0), epoch, COALESCE(" FLOWRT_PG_ISO("since") ", ''), applied_op FROM "
                            "cluster_lead WHERE id = 1"));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot read who leads");
  return ClusterLead{cell_int(r.get(), 0, 0), cell_int(r.get(), 0, 1), cell_text(r.get(), 0, 2),
                     static_cast<uint64_t>(cell_int(r.get(), 0, 3))};
}

Status PostgresCluster::leave(int64_t incarnation) {
  Params p;
  p.integer(incarnation);
  ResultPtr a(exec_params(conn_,
                          "UPDATE cluster_nodes SET left_at = clock_timestamp(), lease_until = clock_timestamp() "
                          "WHERE incarnation = $1::bigint AND left_at IS NULL",
                          p));
  if (!result_ok(a.get())) return error("cannot leave");
  ResultPtr b(exec_params(conn_, "UPDATE cluster_lead SET incarnation = NULL WHERE id = 1 AND incarnation = $1::bigint", p));
  if (!result_ok(b.get())) return error("cannot give up the lead");
  return Status::ok();
}

Result<std::vector<ClusterNodeRow>> PostgresCluster::nodes() {
  ResultPtr r(PQexec(conn_,
                     "SELECT incarnation, name, address, host, pid, " FLOWRT_PG_ISO("started") ", " FLOWRT_PG_ISO("heartbeat") ", "
                     FLOWRT_PG_ISO("lease_until") ", "
                     "lease_until > clock_timestamp(), left_at IS NOT NULL, runnable_contexts, waiting_contexts, "
                     "queued_events FROM cluster_nodes WHERE left_at IS NULL "
                     "OR left_at > clock_timestamp() - interval '1 hour' ORDER BY incarnation DESC LIMIT 1000"));
  if (!result_ok(r.get())) return error("cannot list its nodes");
  std::vector<ClusterNodeRow> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    ClusterNodeRow n;
    n.incarnation = cell_int(r.get(), i, 0);
    n.name = cell_text(r.get(), i, 1);
    n.address = cell_text(r.get(), i, 2);
    n.host = cell_text(r.get(), i, 3);
    n.pid = cell_int(r.get(), i, 4);
    n.started = cell_text(r.get(), i, 5);
    n.heartbeat = cell_text(r.get(), i, 6);
    n.lease_until = cell_text(r.get(), i, 7);
    n.alive = cell_view(r.get(), i, 8) == "t";
    n.left = cell_view(r.get(), i, 9) == "t";
    n.runs = NodeRuns{cell_int(r.get(), i, 10), cell_int(r.get(), i, 11), cell_int(r.get(), i, 12)};
    out.push_back(std::move(n));
  }
  return out;
}

namespace {

// Whether a request with this method, target and body is the same as `q`: what a key names
// (the content type and the caller's role are not part of it).
bool same_request(std::string_view method, std::string_view target, std::string_view body, const InboxRequest& q) {
  return method == q.method && target == q.target && body == q.body;
}

}  // namespace

Result<std::vector<std::optional<PostgresCluster::KeyedEntry>>> PostgresCluster::keyed_entries(
    const std::vector<InboxRequest>& requests) {
  std::vector<std::optional<KeyedEntry>> out(requests.size());
  std::vector<Value> wanted;  // {n, caller, key} of each keyed request: one statement for all
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].idempotency_key.empty()) continue;
    wanted.push_back(Value::object({{"n", Value(static_cast<int64_t>(i))},
                                    {"caller", Value(requests[i].caller)},
                                    {"key", Value(requests[i].idempotency_key)}}));
  }
  if (wanted.empty()) return out;
  Params p;
  p.json(Value::array(std::move(wanted)));
  ResultPtr r(exec_params(conn_,
                          "SELECT w.n, c.seq, c.method, c.target, c.body FROM jsonb_to_recordset($1::text::jsonb) AS "
                          "w(n integer, caller text, key text) JOIN cluster_inbox c ON c.caller = w.caller AND "
                          "c.idem_key = w.key",
                          p));
  if (!result_ok(r.get())) return error("cannot read the inbox's idempotency keys");
  for (int row = 0; row < PQntuples(r.get()); ++row) {
    const size_t i = static_cast<size_t>(cell_int(r.get(), row, 0));  // one of ours
    const InboxRequest& q = requests[i];
    const bool same = same_request(cell_view(r.get(), row, 2), cell_view(r.get(), row, 3), bytes_of(r.get(), row, 4), q);
    out[i] = KeyedEntry{static_cast<uint64_t>(cell_int(r.get(), row, 1)), same};
  }
  return out;
}

namespace {

// The earlier request of `requests` (before `i`) with i's caller and key, or npos.
size_t earlier_with_key(const std::vector<InboxRequest>& requests, size_t i) {
  for (size_t j = 0; j < i; ++j) {
    if (requests[j].idempotency_key == requests[i].idempotency_key && requests[j].caller == requests[i].caller) return j;
  }
  return std::string::npos;
}

}  // namespace

Result<uint64_t> PostgresCluster::append_rows(int64_t incarnation, const std::vector<InboxRequest>& requests,
                                              const std::vector<size_t>& rows, size_t from, size_t to,
                                              std::string_view batch) {
  const std::initializer_list<const char*> kRow = {"::bigint", "::text",    "::text", "::text",  "::text",
                                                       "::boolean", "::text", "::bytea", "::text"};
  Params p;
  p.integer(static_cast<int64_t>(to - from));
  p.integer(incarnation);
  p.text(batch);
  p.text(channel("flowrt_inbox"));
  for (size_t k = from; k < to; ++k) {
    const InboxRequest& q = requests[rows[k]];
    p.integer(static_cast<int64_t>(k - from + 1));
    p.text(q.method);
    p.text(q.target);
    p.text(q.caller);
    p.text(q.role);
    p.boolean(q.authenticated);
    p.text(q.content_type);
    p.text(q.body);  // raw bytes (binary format) into bytea
    if (q.idempotency_key.empty()) p.null();
    else p.text(q.idempotency_key);
  }
  // One statement for each count of rows, as its placeholders depend on it.
  auto sql = [&] {
    std::string values;
    for (size_t k = 0; k < to - from; ++k) {
      values += (k == 0 ? "" : ", ") + placeholders(static_cast<int>(4 + k * kRow.size()), kRow);
    }
    return "WITH head AS (UPDATE cluster_inbox_head SET seq = seq + $1::bigint WHERE id = 1 RETURNING seq - $1::bigint AS "
           "base), appended AS (INSERT INTO cluster_inbox(seq, incarnation, method, target, caller, role, authenticated, "
           "content_type, body, batch, idem_key) SELECT head.base + v.ord, $2::bigint, v.method, v.target, v.caller, "
           "v.role, v.authenticated, v.content_type, v.body, $3::text, v.idem_key FROM head, (VALUES " +
           values +
           ") AS v(ord, method, target, caller, role, authenticated, content_type, body, idem_key)) "
           "SELECT base + 1, pg_notify($4::text, '') FROM head";
  };
  ResultPtr r(exec_prepared(conn_, &prepared_, "append_" + std::to_string(to - from), sql, p));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot append to the inbox");
  return static_cast<uint64_t>(cell_int(r.get(), 0, 0));
}

Result<std::vector<InboxAppended>> PostgresCluster::append(int64_t incarnation, const std::vector<InboxRequest>& requests,
                                                           std::string_view batch) {
  using Kind = InboxAppended::Kind;
  using Outcome = Result<std::vector<InboxAppended>>;
  if (requests.empty()) return std::vector<InboxAppended>{};
  const bool keyed = std::any_of(requests.begin(), requests.end(),
                                 [](const InboxRequest& q) { return !q.idempotency_key.empty(); });
  if (!keyed && requests.size() <= kRowsPerStatement) {
    // Every request is new, and one statement takes them all: its own transaction.
    std::vector<size_t> all(requests.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    Result<uint64_t> first = append_rows(incarnation, requests, all, 0, all.size(), batch);
    if (!first) return first.error();
    std::vector<InboxAppended> out(requests.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = {*first + i, Kind::kNew};
    return out;
  }
  return in_transaction(
      conn_, "BEGIN",
      [&]() -> Outcome {
        std::vector<InboxAppended> out(requests.size());
        // Which requests are new. A keyed one is not when its key names an entry, or an
        // earlier request here: read under the head row's lock, which every append takes,
        // so no other append adds that key meanwhile.
        std::vector<bool> fresh(requests.size(), true);
        std::vector<size_t> same_as(requests.size(), std::string::npos);
        if (keyed) {
          ResultPtr lock(PQexec(conn_, "SELECT seq FROM cluster_inbox_head WHERE id = 1 FOR UPDATE"));
          if (!result_ok(lock.get())) return error("cannot lock the inbox's head");
        }
        Result<std::vector<std::optional<KeyedEntry>>> known = keyed_entries(requests);
        if (!known) return known.error();
        for (size_t i = 0; i < requests.size(); ++i) {
          if (requests[i].idempotency_key.empty()) continue;
          if (const std::optional<KeyedEntry>& e = (*known)[i]) {
            fresh[i] = false;
            out[i] = {e->seq, e->same ? Kind::kAgain : Kind::kKeyReused};
          } else if (const size_t j = earlier_with_key(requests, i); j != std::string::npos) {
            fresh[i] = false;
            same_as[i] = j;
          }
        }
        // The new entries, kRowsPerStatement to a statement, numbered on from the head row
        // (locked until COMMIT: appends are numbered in commit order).
        std::vector<size_t> rows;
        for (size_t i = 0; i < requests.size(); ++i) {
          if (fresh[i]) rows.push_back(i);
        }
        for (size_t from = 0; from < rows.size(); from += kRowsPerStatement) {
          const size_t to = std::min(rows.size(), from + kRowsPerStatement);
          Result<uint64_t> first = append_rows(incarnation, requests, rows, from, to, batch);
          if (!first) return first.error();
          for (size_t k = from; k < to; ++k) out[rows[k]] = {*first + (k - from), Kind::kNew};
        }
        for (size_t i = 0; i < requests.size(); ++i) {
          if (const size_t j = same_as[i]; j != std::string::npos) {
            out[i] = {out[j].seq, same_request(requests[j].method, requests[j].target, requests[j].body, requests[i]) ? Kind::kAgain : Kind::kKeyReused};
          }
        }
        return out;
      },
      [&]() -> Outcome { return error("cannot append to the inbox"); });
}

Result<std::vector<InboxAppended>> PostgresCluster::appended_batch(std::string_view batch, int backend, int timeout_ms,
                                                                   const std::vector<InboxRequest>& requests) {
  using Kind = InboxAppended::Kind;
  Params pid;
  pid.integer(backend);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    ResultPtr r(exec_params(conn_,
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1::integer AND pid "
                            "<> pg_backend_pid()",
                            pid));
    if (!result_ok(r.get())) return error("cannot end the connection whose append was cut");
    if (PQntuples(r.get()) == 0) break;  // gone: what it committed is all it ever will
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error{"postgresql database " + where_ + ": cluster: server backend " + std::to_string(backend) +
                   " of an append that was cut has not ended within " + std::to_string(timeout_ms) + " ms"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Params b;
  b.text(batch);
  ResultPtr r(exec_params(conn_, "SELECT seq FROM cluster_inbox WHERE batch = $1 ORDER BY seq", b));
  if (!result_ok(r.get())) return error("cannot read back an append that was cut");
  std::vector<uint64_t> rows;  // the entries it appended, in order: none when it did not commit
  for (int i = 0; i < PQntuples(r.get()); ++i) rows.push_back(static_cast<uint64_t>(cell_int(r.get(), i, 0)));
  // Matched to the requests as append() numbered them: in order, the new ones only.
  Result<std::vector<std::optional<KeyedEntry>>> known = keyed_entries(requests);
  if (!known) return known.error();
  std::vector<InboxAppended> out(requests.size());
  size_t next = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].idempotency_key.empty()) {
      if (next < rows.size()) out[i] = {rows[next++], Kind::kNew};
      continue;
    }
    const std::optional<KeyedEntry>& e = (*known)[i];
    if (!e) continue;
    if (next < rows.size() && e->seq == rows[next]) {
      out[i] = {rows[next++], Kind::kNew};
    } else {
      out[i] = {e->seq, e->same ? Kind::kAgain : Kind::kKeyReused};
    }
  }
  return out;
}

Result<std::string> PostgresCluster::setting(std::string_view name) {
  Params p;
  p.text(name);
  ResultPtr r(exec_params(conn_, "SELECT current_setting($1)", p));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot read a setting");
  return cell_text(r.get(), 0, 0);
}

Result<std::map<std::string, int64_t>> PostgresCluster::prepared_statements() {
  ResultPtr r(PQexec(conn_, "SELECT name, custom_plans FROM pg_prepared_statements"));
  if (!result_ok(r.get())) return error("cannot read its prepared statements");
  std::map<std::string, int64_t> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) out[cell_text(r.get(), i, 0)] = cell_int(r.get(), i, 1);
  return out;
}

bool PostgresCluster::connected() const { return PQstatus(conn_) == CONNECTION_OK; }

Result<std::vector<InboxEntry>> PostgresCluster::unanswered(uint64_t after, size_t limit) {
  Params p;
  p.integer(static_cast<int64_t>(after));
  p.integer(static_cast<int64_t>(limit));
  ResultPtr r(exec_prepared(conn_, &prepared_, "unanswered", [] {
    return "SELECT seq, incarnation, method, target, caller, role, authenticated, content_type, body "
           "FROM cluster_inbox WHERE answered IS NULL AND seq > $1::bigint ORDER BY seq LIMIT $2::bigint";
  }, p));
  if (!result_ok(r.get())) return error("cannot read the inbox");
  std::vector<InboxEntry> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    InboxEntry e;
    e.seq = static_cast<uint64_t>(cell_int(r.get(), i, 0));
    e.incarnation = cell_int(r.get(), i, 1);
    e.request.method = cell_text(r.get(), i, 2);
    e.request.target = cell_text(r.get(), i, 3);
    e.request.caller = cell_text(r.get(), i, 4);
    e.request.role = cell_text(r.get(), i, 5);
    e.request.authenticated = cell_view(r.get(), i, 6) == "t";
    e.request.content_type = cell_text(r.get(), i, 7);
    e.request.body = bytes_of(r.get(), i, 8);
    out.push_back(std::move(e));
  }
  return out;
}

Result<bool> PostgresCluster::answer(uint64_t seq, const InboxReply& reply, int64_t epoch) {
  return answer_all({{seq, reply}}, epoch);
}

Result<bool> PostgresCluster::answer_all(const std::vector<std::pair<uint64_t, InboxReply>>& answers, int64_t epoch) {
  // The first answer to each entry; an entry answered already keeps its answer.
  std::vector<const std::pair<uint64_t, InboxReply>*> rows;
  std::unordered_set<uint64_t> seen;
  for (const auto& a : answers) {
    if (seen.insert(a.first).second) rows.push_back(&a);
  }
  // kRowsPerStatement answers to a statement, each statement its own transaction: one
  // round trip. The fence (kAnswerFence's lock) holds the lead row until that transaction
  // commits, so a takeover waits for it; when the epoch no longer leads, nothing is
  // updated and nobody notified. Not waiting for the flush: an answer lost with the
  // database is answered again by the next leader ("applied before"), while the effects it
  // reports are durable already (the leader's store batch).
  for (size_t from = 0; from < rows.size(); from += kRowsPerStatement) {
    const size_t to = std::min(rows.size(), from + kRowsPerStatement);
    const std::initializer_list<const char*> kRow = {"::bigint", "::integer", "::text", "::bytea"};
    Params p;
    p.integer(epoch);
    p.text(channel("flowrt_answers"));
    for (size_t k = from; k < to; ++k) {
      const auto& [seq, reply] = *rows[k];
      p.integer(static_cast<int64_t>(seq));
      p.integer(reply.status);
      p.text(reply.content_type);
      p.text(reply.body);
    }
    // One statement for each count of answers, as its placeholders depend on it.
    auto sql = [&] {
      std::string values;
      for (size_t k = 0; k < to - from; ++k) {
        values += (k == 0 ? "" : ", ") + placeholders(static_cast<int>(2 + k * kRow.size()), kRow);
      }
      return std::string("WITH fence AS (") + kAnswerFence +
             "), recorded AS (UPDATE cluster_inbox AS i SET status = a.status, reply_type = a.reply_type, "
             "reply = a.reply, answered = clock_timestamp() FROM (VALUES " +
             values +
             ") AS a(seq, status, reply_type, reply) WHERE i.seq = a.seq AND i.answered IS NULL AND "
             "EXISTS (SELECT 1 FROM fence) RETURNING 1) "
             "SELECT EXISTS (SELECT 1 FROM fence), set_config('synchronous_commit', 'off', true), "
             "CASE WHEN EXISTS (SELECT 1 FROM fence) THEN pg_notify($2::text, '') END";
    };
    ResultPtr r(exec_prepared(conn_, &prepared_, "answer_" + std::to_string(to - from), sql, p));
    if (!result_ok(r.get()) || PQntuples(r.get()) != 1) {
      return error("cannot answer inbox entries " + std::to_string(rows[from]->first) + " to " +
                   std::to_string(rows[to - 1]->first));
    }
    if (cell_view(r.get(), 0, 0) != "t") return false;  // fenced: nothing written
  }
  return true;
}

Result<std::vector<std::pair<uint64_t, InboxReply>>> PostgresCluster::answers(const std::vector<uint64_t>& seqs) {
  std::vector<std::pair<uint64_t, InboxReply>> out;
  if (seqs.empty()) return out;
  std::string list;
  for (size_t i = 0; i < seqs.size(); ++i) list += (i ? "," : "") + std::to_string(seqs[i]);
  Params p;
  p.text(list);
  ResultPtr r(exec_prepared(conn_, &prepared_, "answers", [] {
    return "SELECT seq, status, reply_type, reply FROM cluster_inbox WHERE seq = "
           "ANY(string_to_array($1::text, ',')::bigint[]) AND answered IS NOT NULL";
  }, p));
  if (!result_ok(r.get())) return error("cannot read the inbox's answers");
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    InboxReply a;
    a.status = static_cast<int>(cell_int(r.get(), i, 1));
    a.content_type = cell_text(r.get(), i, 2);
    a.body = bytes_of(r.get(), i, 3);
    out.emplace_back(static_cast<uint64_t>(cell_int(r.get(), i, 0)), std::move(a));
  }
  return out;
}

Result<std::optional<InboxStatus>> PostgresCluster::entry(uint64_t seq) {
  Params p;
  p.integer(static_cast<int64_t>(seq));
  ResultPtr r(exec_params(conn_,
                          "SELECT incarnation, method, target, caller, " FLOWRT_PG_ISO("accepted") ", answered IS NOT NULL, status, "
                          "reply_type, reply, COALESCE(" FLOWRT_PG_ISO("answered") ", ''), COALESCE(idem_key, '') "
                          "FROM cluster_inbox WHERE seq = "
                          "$1::bigint",
                          p));
  if (!result_ok(r.get())) return error("cannot read inbox entry " + std::to_string(seq));
  if (PQntuples(r.get()) == 0) return std::optional<InboxStatus>();
  InboxStatus s;
  s.entry.seq = seq;
  s.entry.incarnation = cell_int(r.get(), 0, 0);
  s.entry.request.method = cell_text(r.get(), 0, 1);
  s.entry.request.target = cell_text(r.get(), 0, 2);
  s.entry.request.caller = cell_text(r.get(), 0, 3);
  s.entry.request.idempotency_key = cell_text(r.get(), 0, 10);
  s.accepted = cell_text(r.get(), 0, 4);
  if (cell_view(r.get(), 0, 5) == "t") {
    s.reply = InboxReply{static_cast<int>(cell_int(r.get(), 0, 6)), cell_text(r.get(), 0, 7), bytes_of(r.get(), 0, 8)};
    s.answered = cell_text(r.get(), 0, 9);
  }
  return std::optional<InboxStatus>(std::move(s));
}

Status PostgresCluster::prune(int64_t seconds, int64_t keyed_seconds) {
  Params p;
  p.integer(seconds);
  p.integer(keyed_seconds);
  p.integer(kPruneRows);
  while (true) {
    ResultPtr r(exec_params(conn_,
                            "DELETE FROM cluster_inbox WHERE seq IN (SELECT seq FROM cluster_inbox WHERE answered < "
                            "clock_timestamp() - (CASE WHEN idem_key IS NULL THEN $1::bigint ELSE $2::bigint END) * "
                            "interval '1 second' ORDER BY seq LIMIT $3::bigint)",
                            p));
    if (!result_ok(r.get())) return error("cannot prune the inbox");
    if (std::strtoll(PQcmdTuples(r.get()), nullptr, 10) < kPruneRows) return Status::ok();
  }
}

Status PostgresCluster::listen(std::string_view name) {
  const std::string sql = "LISTEN \"" + channel(name) + "\"";  // letters, digits and _ only
  ResultPtr r(PQexec(conn_, sql.c_str()));
  if (!result_ok(r.get())) return error("cannot listen");
  return Status::ok();
}

Result<bool> PostgresCluster::wait(int timeout_ms) {
  auto drain = [&] {
    bool any = false;
    while (PGnotify* n = PQnotifies(conn_)) {
      PQfreemem(n);
      any = true;
    }
    return any;
  };
  if (PQconsumeInput(conn_) != 1) return error("lost its connection");
  if (drain()) return true;
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (fd.fd < 0) return error("lost its connection");
  const int ready = ::poll(&fd, 1, timeout_ms);
  if (ready < 0) return false;  // interrupted: as a timeout
  if (ready == 0) return false;
  if (PQconsumeInput(conn_) != 1) return error("lost its connection");
  return drain();
}

}  // namespace flowrt

#undef FLOWRT_PG_ISO
