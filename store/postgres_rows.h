// What PostgresStore's files share: libpq handles that free themselves, the parameters of
// one statement, columns read as numbers and JSON, a context from its row. Internal to
// store/ (postgres_*.cpp); not part of the Store interface. No shared state: a connection
// is used by one thread at a time (its owner's mutex or the one writer).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "plans/value_json.h"
#include "store/store.h"
#include "store/stored_rows.h"

namespace flowrt::postgres_rows {

struct ResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultFree>;
struct ConnFinish {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnFinish>;

// The type OIDs parameters are declared with (pg_type.h is a server header).
inline constexpr Oid kInt8Oid = 20;
inline constexpr Oid kTextOid = 25;
inline constexpr Oid kBoolOid = 16;


// libpq's message on one line, without its trailing newline.
inline std::string one_line(const char* message) {
  std::string m = message ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ' || m.back() == '\t')) m.pop_back();
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i] == '\n') {
      out += "; ";
      while (i + 1 < m.size() && (m[i + 1] == '\t' || m[i + 1] == ' ')) ++i;
    } else {
      out += m[i];
    }
  }
  return out;
}

// The parameters of one statement, all sent as values: text in binary format (its bytes as
// they are, so nothing is cut at a NUL: the server refuses a NUL instead), numbers as
// decimal text. Never spliced into SQL.
class Params {
 public:
  void text(std::string_view v) { add(std::string(v), 1, false); }
  void integer(int64_t v) { add(std::to_string(v), 0, false); }
  void boolean(bool v) { add(v ? "true" : "false", 0, false); }
  void null() { add("", 0, true); }
  // The value's JSON, or SQL NULL for a null value.
  void json(const Value& v) {
    if (v.is_null()) return null();
    std::string t;
    write_json(v, t);
    add(std::move(t), 1, false);
  }
  // A document the runtime wrote as text goes as it is.
  void json(const JsonDoc& d) {
    if (d.is_null()) return null();
    std::string scratch;
    const std::string_view t = d.text(scratch);
    add(t.data() == scratch.data() ? std::move(scratch) : std::string(t), 1, false);
  }
  int size() const { return static_cast<int>(values_.size()); }
  // The arrays PQsendQueryPrepared and PQexecParams take; valid while this is unchanged.
  void arrays(std::vector<const char*>* values, std::vector<int>* lengths, std::vector<int>* formats) const {
    values->clear();
    lengths->clear();
    formats->clear();
    for (size_t i = 0; i < values_.size(); ++i) {
      values->push_back(null_[i] ? nullptr : values_[i].c_str());
      lengths->push_back(static_cast<int>(values_[i].size()));
      formats->push_back(formats_[i]);
    }
  }

 private:
  void add(std::string v, int format, bool is_null) {
    values_.push_back(std::move(v));
    formats_.push_back(format);
    null_.push_back(is_null);
  }
  std::vector<std::string> values_;
  std::vector<int> formats_;
  std::vector<bool> null_;
};

// A new connection to `url` (what the URL says wins): at most 10 s to connect, TCP
// keepalives and a user timeout so that a server that went away ends the session rather
// than hanging it, UTF-8. Null only when out of memory; check PQstatus.
inline PGconn* connect_to(const std::string& url) {
  const char* const keys[] = {"connect_timeout", "application_name", "keepalives", "keepalives_idle",
                              "keepalives_interval", "keepalives_count", "tcp_user_timeout", "client_encoding",
                              "dbname", nullptr};
  const char* const values[] = {"10", "flowrt", "1", "30", "10", "3", "60000", "UTF8", url.c_str(), nullptr};
  return PQconnectdbParams(keys, values, /*expand_dbname=*/1);
}

inline bool result_ok(const PGresult* r) {
  const ExecStatusType s = PQresultStatus(r);
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

// How long the server keeps a writing session that is idle inside a transaction (its
// client died or was cut off from it, mid-transaction, and the server has not noticed):
// then it ends the session, and the transaction's row locks (the cluster's lead row, its
// inbox head, a store batch's rows) and the store's advisory lock go with it. Without it
// they would be held until the server's TCP keepalive noticed, two hours by default, and
// every other node's writes, and a takeover, would wait that long.
inline constexpr int kIdleInTransactionTimeoutMs = 10000;

// Sets the idle-in-transaction limit (kIdleInTransactionTimeoutMs; tests pass a shorter
// one) on a writing session. False when the server refused.
inline bool limit_idle_transactions(PGconn* conn, int limit_ms = kIdleInTransactionTimeoutMs) {
  const std::string sql = "SET idle_in_transaction_session_timeout = " + std::to_string(limit_ms);
  ResultPtr r(PQexec(conn, sql.c_str()));
  return result_ok(r.get());
}

// Runs one statement (`sql` with `params`) on `conn` and waits for its whole result.
inline ResultPtr exec_params(PGconn* conn, const char* sql, const Params& params) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  params.arrays(&values, &lengths, &formats);
  return ResultPtr(PQexecParams(conn, sql, params.size(), nullptr, values.data(), lengths.data(), formats.data(), 0));
}

// Runs `body` in one transaction on `conn`: `begin` ("BEGIN", or "BEGIN; SET LOCAL ..."),
// then `body()`, which returns a Status or a Result<T>, then COMMIT. When `body` fails, the
// transaction is rolled back and `body`'s error returned as it made it (before the rollback,
// so that the error keeps the server's message). `fail()` makes the error of a BEGIN or
// COMMIT that fails (a lost connection, a serialization failure).
template <class Body, class Fail>
auto in_transaction(PGconn* conn, const char* begin, Body&& body, Fail&& fail) -> decltype(body()) {
  ResultPtr started(PQexec(conn, begin));
  if (!result_ok(started.get())) return fail();
  auto out = body();
  if (!out) {
    ResultPtr rollback(PQexec(conn, "ROLLBACK"));
    return out;
  }
  ResultPtr commit(PQexec(conn, "COMMIT"));
  if (!result_ok(commit.get())) return fail();
  return out;
}

// Runs one query on `conn`, its rows one at a time (libpq's single-row mode: a big table is
// never in memory twice), calling `row(res, 0)` for each; the first error (the server's,
// as "" and its message in *server_error, or row's) ends it. Every result is read, so the
// connection is ready for the next statement however it ends. `sql` is the statement's
// text, or with `prepared` the name of a statement prepared on `conn`.
template <class RowFn>
Status for_each_row(PGconn* conn, const std::string& sql, const Params& params, std::string* server_error, RowFn&& row,
                    bool prepared = false) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  params.arrays(&values, &lengths, &formats);
  server_error->clear();
  const int sent =
      prepared ? PQsendQueryPrepared(conn, sql.c_str(), params.size(), values.data(), lengths.data(), formats.data(), 0)
               : PQsendQueryParams(conn, sql.c_str(), params.size(), nullptr, values.data(), lengths.data(),
                                   formats.data(), 0);
  if (sent != 1) {
    *server_error = one_line(PQerrorMessage(conn));
    return Error{""};
  }
  (void)PQsetSingleRowMode(conn);
  Status status;
  bool server_failed = false;
  while (PGresult* raw = PQgetResult(conn)) {
    ResultPtr r(raw);
    const ExecStatusType s = PQresultStatus(raw);
    if (s == PGRES_SINGLE_TUPLE) {
      if (status) status = row(static_cast<const PGresult*>(raw), 0);
    } else if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK && !server_failed) {
      server_failed = true;
      *server_error = one_line(PQresultErrorMessage(raw));
    }
    if (PQstatus(conn) == CONNECTION_BAD && server_failed) break;
  }
  if (server_failed) return Error{""};
  return status;
}

// Column `c` of row `r` (text format): "" for SQL NULL.
inline std::string_view cell_view(const PGresult* res, int r, int c) {
  return std::string_view(PQgetvalue(res, r, c), static_cast<size_t>(PQgetlength(res, r, c)));
}
inline std::string cell_text(const PGresult* res, int r, int c) { return std::string(cell_view(res, r, c)); }
inline int64_t cell_int(const PGresult* res, int r, int c) { return std::strtoll(PQgetvalue(res, r, c), nullptr, 10); }
inline bool cell_null(const PGresult* res, int r, int c) { return PQgetisnull(res, r, c) != 0; }

// Column `c` as JSON (SQL NULL: a null value); a row that does not parse is damaged.
inline Status cell_json(const PGresult* res, int r, int c, const std::string& where, std::string_view what, Value* out) {
  *out = Value();
  if (cell_null(res, r, c)) return Status::ok();
  return stored_rows::parse_stored_json(cell_view(res, r, c), where, what, out);
}

// The context of row `r` (stored_rows::kContextColumns, then the checkpoint: NULL in history). A row whose JSON does not
// parse is damaged, but for its checkpoint: a damaged one costs its context only, which
// then reads {"unreadable": "why"} (as the sqlite store does). `with_record` false leaves a
// checkpointed context's record out (ContextQuery::records_of_checkpointed).
inline Status context_of_row(const PGresult* res, int r, const std::string& where, bool with_record, StoredContext* out) {
  StoredContext& c = *out;
  c.seq = static_cast<uint64_t>(cell_int(res, r, 0));
  c.id = cell_text(res, r, 1);
  c.flow = cell_text(res, r, 2);
  c.status = cell_text(res, r, 3);
  c.commit_seq = static_cast<uint64_t>(cell_int(res, r, 4));
  c.started = cell_int(res, r, 9);
  c.ended = cell_int(res, r, 10);
  const std::string what = "context " + c.id;
  FLOWRT_RETURN_IF_ERROR(cell_json(res, r, 5, where, what, &c.trigger));
  FLOWRT_RETURN_IF_ERROR(cell_json(res, r, 6, where, what, &c.inputs));
  FLOWRT_RETURN_IF_ERROR(cell_json(res, r, 7, where, what, &c.cause));
  FLOWRT_RETURN_IF_ERROR(cell_json(res, r, 8, where, what, &c.run_key));
  const bool checkpointed = !cell_null(res, r, 12);
  if (with_record || !checkpointed) {
    Value record;
    FLOWRT_RETURN_IF_ERROR(cell_json(res, r, 11, where, what, &record));
    c.record = std::move(record);
  } else {
    c.record = Value();
  }
  Status cp = cell_json(res, r, 12, where, what, &c.checkpoint);
  if (!cp) c.checkpoint = Value::object({{"unreadable", Value(std::string_view(cp.message()))}});
  return Status::ok();
}

}  // namespace flowrt::postgres_rows
