// PostgresCluster (store/postgres_cluster.h): its connection, the cluster's tables, node
// membership and leases, the lead, and notifications. The inbox is in postgres_inbox.cpp.
#include "store/postgres_cluster.h"

#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "store/postgres_cluster_sql.h"
#include "store/postgres_rows.h"
#include "store/postgres_store.h"

namespace flowrt {

using namespace postgres_rows;        // NOLINT: the store's libpq handles
using namespace postgres_cluster_sql;  // NOLINT: the cluster's statements

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
                 AND table_name = 'cluster_inbox' AND column_name = 'started') THEN
    ALTER TABLE cluster_inbox ADD COLUMN started text;
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
