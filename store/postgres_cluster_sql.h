// What PostgresCluster's two files share (postgres_cluster.cpp: membership, leases and the
// lead; postgres_inbox.cpp: the inbox): statements prepared once per session, multi-row
// placeholders, bytea columns, times as the API writes them. Internal to store/; no state.
#pragma once

#include <libpq-fe.h>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <vector>

#include "store/postgres_rows.h"

namespace flowrt::postgres_cluster_sql {

using namespace postgres_rows;  // NOLINT: the store's libpq handles

// A timestamptz column as ISO 8601 in UTC with milliseconds, as the rest of the API writes times.
#define FLOWRT_PG_ISO(col) "to_char((" col ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

// Rows of a multi-row statement per statement: a few hundred parameters each, far below
// the protocol's 65,535.
inline constexpr size_t kRowsPerStatement = 256;

// "($N::cast, ...)" for a row whose parameters start after the `before` already in the
// statement, one per cast ("" for none: the column's type decides).
inline std::string placeholders(int before, std::initializer_list<const char*> casts) {
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

// Column `c` of row `r`, a bytea in text format, as its bytes.
inline std::string bytes_of(const PGresult* res, int r, int c) {
  size_t n = 0;
  unsigned char* raw = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(res, r, c)), &n);
  if (!raw) return {};
  std::string out(reinterpret_cast<const char*>(raw), n);
  PQfreemem(raw);
  return out;
}

}  // namespace flowrt::postgres_cluster_sql
