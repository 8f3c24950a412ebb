// SqliteStore::load(): everything the file holds but history, in one read transaction, for
// the engine that opens it (a writer) or flowrt inspect (a reader). Opening, writing and
// errors are sqlite_store.cpp's; history reads are sqlite_history.cpp's.
#include <sqlite3.h>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plans/value_json.h"
#include "store/sqlite_rows.h"
#include "store/sqlite_store.h"

namespace flowrt {

using namespace sqlite_rows;  // NOLINT: the rows of this store's own tables

// In load(): returns the error of a query (whose row callbacks use FLOWRT_RETURN_IF_ERROR).
#define CHECK_QUERY(expr)                 \
  do {                                    \
    const Status query_status = (expr);   \
    if (!query_status) return query_status.error(); \
  } while (0)

Result<StoredState> SqliteStore::load(bool with_contexts) {
  StoredState state;
  // One read transaction: a consistent state even while an engine writes (inspect).
  FLOWRT_RETURN_IF_ERROR(exec("BEGIN"));
  struct Rollback {
    sqlite3* db;
    ~Rollback() { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); }
  } end{db_};

  // Runs `sql`, calling `row` for each row; the first error (of SQLite or of `row`) ends it.
  auto query = [&](const char* sql, auto&& row) -> Status {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) return error("cannot read it");
    int rc;
    Status status;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      status = row(s);
      if (!status) break;
    }
    sqlite3_finalize(s);
    if (!status) return status;
    if (rc != SQLITE_DONE) return error("cannot read it");
    return Status::ok();
  };
  auto json = [&](sqlite3_stmt* s, int i, std::string_view what, Value* out) {
    return column_json(s, i, path_, what, out);
  };

  CHECK_QUERY(query(
      "SELECT commit_seq, context_seq, fencing_token, sys_id_seed, sys_id_count, clock FROM counters WHERE id = 1",
      [&](sqlite3_stmt* s) -> Status {
        state.fresh = false;
        state.counters.commit_seq = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
        state.counters.context_seq = static_cast<uint64_t>(sqlite3_column_int64(s, 1));
        state.counters.fencing_token = sqlite3_column_int64(s, 2);
        state.counters.sys_id_seed = static_cast<uint64_t>(sqlite3_column_int64(s, 3));
        state.counters.sys_id_count = static_cast<uint64_t>(sqlite3_column_int64(s, 4));
        state.counters.clock = sqlite3_column_int64(s, 5);
        return Status::ok();
      }));
  CHECK_QUERY(query("SELECT name FROM record_tables ORDER BY position, name", [&](sqlite3_stmt* s) -> Status {
    state.tables.push_back(StoredState::Table{column_text(s, 0), {}, {}});
    return Status::ok();
  }));
  {
    // Every record in one pass in insertion order (position: since version 4 the rowid),
    // each to its table.
    std::map<std::string, StoredState::Table*, std::less<>> by_name;
    for (StoredState::Table& t : state.tables) by_name.emplace(t.name, &t);
    StoredState::Table* table = nullptr;  // the last row's
    CHECK_QUERY(query(schema_version_ >= 4 ? "SELECT tbl, sys_id, body, position FROM records ORDER BY position"
                                           : "SELECT tbl, sys_id, body, position FROM records ORDER BY tbl, position",
                      [&](sqlite3_stmt* s) -> Status {
                        // Rows of one table come in runs: the table is looked up when it changes.
                        // Nothing is copied or built per row but the record.
                        const std::string_view name = column_view(s, 0);
                        if (!table || table->name != name) {
                          auto t = by_name.find(name);
                          table = t == by_name.end() ? nullptr : t->second;
                        }
                        // Which row, for an error only.
                        auto what = [&] { return "record " + column_text(s, 1) + " of table " + std::string(name); };
                        if (!table) return damaged_row(path_, what() + ": no such table");
                        Value record;
                        JsonParseError e;
                        if (!parse_json(column_view(s, 2), &record, &e, kStoredJson)) {
                          return damaged_row(path_, what(), e.describe());
                        }
                        if (!record.is_object() || record.size() == 0 || !record.members()[0].value.is_string()) {
                          return damaged_row(path_, what());
                        }
                        table->positions.push_back(static_cast<uint64_t>(sqlite3_column_int64(s, 3)));
                        table->records.push_back(std::move(record));
                        return Status::ok();
                      }));
  }
  CHECK_QUERY(query(
      "SELECT type, id, draft, published, fingerprint, active, activated_at, last_tick FROM definitions ORDER BY type, id",
      [&](sqlite3_stmt* s) -> Status {
        StoredDefinition d;
        d.type = column_text(s, 0);
        d.id = column_text(s, 1);
        FLOWRT_RETURN_IF_ERROR(json(s, 2, "definition " + d.id, &d.draft));
        FLOWRT_RETURN_IF_ERROR(json(s, 3, "definition " + d.id, &d.published));
        d.published_fingerprint = column_text(s, 4);
        d.active = sqlite3_column_int(s, 5) != 0;
        d.activated_at = sqlite3_column_int64(s, 6);
        d.last_tick = sqlite3_column_int64(s, 7);
        state.definitions.push_back(std::move(d));
        return Status::ok();
      }));
  // The contexts that have not ended (and any ended one without a record): since version 4
  // every row of `contexts`; history stays in the file (load_context, list_contexts). An
  // older file opened read only is read as it is.
  if (with_contexts) CHECK_QUERY(query(
      schema_version_ >= 4
          ? "SELECT seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record, "
            "checkpoint FROM contexts ORDER BY seq"
      : schema_version_ == 3
          ? "SELECT seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record, "
            "checkpoint FROM contexts WHERE seq IN (SELECT seq FROM contexts WHERE status IN ('queued', "
            "'in_progress', 'waiting') UNION SELECT seq FROM contexts WHERE record IS NULL) ORDER BY seq"
          : "SELECT seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record, "
            "NULL FROM contexts WHERE seq IN (SELECT seq FROM contexts WHERE status IN ('queued', "
            "'in_progress', 'waiting') UNION SELECT seq FROM contexts WHERE record IS NULL) ORDER BY seq",
      [&](sqlite3_stmt* s) -> Status {
        StoredContext c;
        FLOWRT_RETURN_IF_ERROR(parse_context_row(raw_context_row(s, /*with_checkpoint=*/true), path_, &c));
        if (is_final_context_status(c.status) && !c.record.is_null()) return Status::ok();
        state.contexts.push_back(std::move(c));
        return Status::ok();
      }));
  CHECK_QUERY(query("SELECT name, state FROM locks ORDER BY name", [&](sqlite3_stmt* s) -> Status {
    StoredLock l;
    l.name = column_text(s, 0);
    FLOWRT_RETURN_IF_ERROR(json(s, 1, "lock " + l.name, &l.state));
    state.locks.push_back(std::move(l));
    return Status::ok();
  }));
  CHECK_QUERY(query("SELECT tbl, sys_id, flow FROM run_once ORDER BY tbl, sys_id, flow", [&](sqlite3_stmt* s) -> Status {
    state.run_once.push_back(RunOncePut{column_text(s, 0), column_text(s, 1), column_text(s, 2), true});
    return Status::ok();
  }));
  CHECK_QUERY(query("SELECT at, report FROM recoveries ORDER BY id", [&](sqlite3_stmt* s) -> Status {
    RecoveryNote n;
    n.at = sqlite3_column_int64(s, 0);
    FLOWRT_RETURN_IF_ERROR(json(s, 1, "recovery report", &n.report));
    state.recoveries.push_back(std::move(n));
    return Status::ok();
  }));
  // A file no writer of this version opened has no such table (store/sqlite_schema.cpp).
  bool keyed = false;
  CHECK_QUERY(query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'keyed_writes'",
                    [&](sqlite3_stmt*) -> Status {
                      keyed = true;
                      return Status::ok();
                    }));
  if (keyed) {
    CHECK_QUERY(query("SELECT caller, key, request, status, headers, body, at FROM keyed_writes ORDER BY caller, key",
                      [&](sqlite3_stmt* s) -> Status {
                        KeyedWritePut k;
                        k.caller = column_text(s, 0);
                        k.key = column_text(s, 1);
                        k.request = column_text(s, 2);
                        k.status = sqlite3_column_int(s, 3);
                        k.headers = column_text(s, 4);
                        k.body = column_text(s, 5);
                        k.at = sqlite3_column_int64(s, 6);
                        state.keyed_writes.push_back(std::move(k));
                        return Status::ok();
                      }));
  }
  know_tables(state);
  return state;
}

#undef CHECK_QUERY

}  // namespace flowrt
