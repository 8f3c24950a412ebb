// PostgresStore's writer session and its lock: the session's limits, the advisory lock
// that makes one engine the schema's only writer (taken, and refused naming its holder;
// let go), the holder row that names the writer, and connecting again after the writer's
// connection was lost, which takes the lock again or finds the schema written by another
// engine meanwhile (postgres_store.h, "One writer").
#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "plans/time.h"
#include "store/postgres_rows.h"
#include "store/postgres_store.h"

namespace flowrt {

using namespace postgres_rows;  // NOLINT: this store's own rows and libpq handles

namespace {

// Now, as the holder row notes when its writer took the schema.
std::string pg_now_text() {
  const auto now = std::chrono::system_clock::now();
  return format_time(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
}

// This machine's name, as the holder row notes it.
std::string pg_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

}  // namespace

Status PostgresStore::start_writer_session() {
  if (!limit_idle_transactions(conn_)) return error("cannot set its session's limits");
  return lead_epoch_ == 0 ? take_lock() : Status::ok();
}

Status PostgresStore::take_lock() {
  Params p;
  p.text(schema_);
  // A writer that ended without unlocking (killed) holds the lock until the server's
  // backend for it has exited, a moment after its connection closed: tried again for up to
  // kLockRetryMs before the schema counts as in use.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLockRetryMs);
  while (true) {
    ResultPtr r(exec_params(conn_, "SELECT pg_try_advisory_lock(hashtext('flowrt'), hashtext($1::text))", p));
    if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot take the writer's lock");
    if (cell_view(r.get(), 0, 0) == "t") {
      locked_ = true;
      return Status::ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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
  holder_since_ = pg_now_text();
  Params p;
  p.integer(static_cast<int64_t>(::getpid()));
  p.text(pg_host_name());
  p.text(holder_since_);
  ResultPtr r(exec_params(conn_,
                          "INSERT INTO holder(id, pid, host, since, backend_pid) VALUES(1, $1::bigint, $2::text, "
                          "$3::text, pg_backend_pid()) ON CONFLICT (id) DO UPDATE SET pid = excluded.pid, "
                          "host = excluded.host, since = excluded.since, backend_pid = excluded.backend_pid",
                          p));
  if (!result_ok(r.get())) return error("cannot note who holds it");
  return Status::ok();
}

std::optional<int64_t> PostgresStore::own_holder_backend() {
  ResultPtr h(PQexec(conn_, "SELECT pid, host, since, backend_pid FROM holder WHERE id = 1"));
  if (!result_ok(h.get()) || PQntuples(h.get()) != 1) return std::nullopt;
  if (cell_int(h.get(), 0, 0) != static_cast<int64_t>(::getpid()) || cell_view(h.get(), 0, 1) != pg_host_name() ||
      cell_view(h.get(), 0, 2) != holder_since_) {
    return std::nullopt;
  }
  return cell_int(h.get(), 0, 3);
}

void PostgresStore::let_go_lock() {
  Params p;
  p.text(schema_);
  ResultPtr u(exec_params(conn_, "SELECT pg_advisory_unlock(hashtext('flowrt'), hashtext($1::text))", p));
  locked_ = false;
}

Status PostgresStore::reconnect_writer() {
  PQreset(conn_);  // the same parameters, a new session
  if (PQstatus(conn_) != CONNECTION_OK) return error("cannot connect again");
  // As open() sets a session up. Where the context rows are is read anew: the batch that
  // was cut may have committed. What another writer did decides whether this store goes on:
  // - it has the schema now (the lock is refused, naming it), or had it meanwhile (its
  //   holder row replaced this store's, and went when it closed): what this store knows of
  //   the schema (its counters, where its rows are) is stale, and it writes no more;
  // - the lock is held by this store's own ended session (cut off from a server that has
  //   not noticed yet: its backend idles until the server's TCP keepalive ends it, hours
  //   later), the holder row still this store's: that backend is ended, and the lock taken.
  lost_ = false;  // set_sync_mode sets the session's durability only on a live one
  locked_ = false;  // the ended session's lock went with it, or goes below
  Status ready = start_writer_session();
  if (!ready && PQstatus(conn_) == CONNECTION_OK) {
    if (std::optional<int64_t> old = own_holder_backend(); old && *old != PQbackendPID(conn_)) {
      Params b;
      b.integer(*old);
      ResultPtr t(exec_params(conn_, "SELECT pg_terminate_backend($1::integer, 5000)", b));
      ready = start_writer_session();
    }
    if (!ready && PQstatus(conn_) == CONNECTION_OK) superseded_ = ready.message();
  }
  if (ready && !own_holder_backend()) {
    superseded_ = "postgresql database " + where_ + ": schema " + schema_ +
                  " was written by another engine after this one's session ended; this one writes no more "
                  "(open it again to go on from what the schema holds now)";
    ready = Error{superseded_};
    let_go_lock();
  }
  if (ready) ready = ready_writes(sync_);
  if (!ready) lost_ = true;
  return ready;
}

}  // namespace flowrt
