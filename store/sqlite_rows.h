// The rows of SqliteStore's tables as C++ sees them: a prepared statement, columns read as
// text and JSON, a context from its row. Internal to store/ (sqlite_store.cpp and
// sqlite_history.cpp); not part of the Store interface. Free functions and a class with no
// shared state: each Stmt belongs to one connection and is used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plans/value_json.h"
#include "store/store.h"
#include "store/stored_rows.h"

namespace flowrt::sqlite_rows {

using stored_rows::damaged_row;
using stored_rows::kContextColumns;
using stored_rows::kStoredJson;
using stored_rows::parse_stored_json;

// ended_trigger (store/store.h) in SQL, for a row that moves to history.
#define FLOWRT_SQL_TRIGGER_SUMMARY "json_remove(trigger, '$.record', '$.previous', '$.test')"

// Column `i`'s text, valid until the statement steps again ("" for SQL NULL).
inline std::string_view column_view(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string_view(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s, i)))
           : std::string_view();
}

inline std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(s, i))) : std::string();
}

// Column `i` as JSON (SQL NULL: a null value); a row that does not parse is damaged.
inline Status column_json(sqlite3_stmt* s, int i, const std::string& path, std::string_view what, Value* out) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL) {
    *out = Value();
    return Status::ok();
  }
  return parse_stored_json(column_text(s, i), path, what, out);
}

// A context's row as read: its plain columns in `context`, its JSON columns still text.
// Read while the connection is held, parsed (parse_context_row) after it is let go, so that
// two readers parse at once.
struct RawContextRow {
  StoredContext context;
  // trigger, inputs, cause, run_key, record, checkpoint; nullopt: SQL NULL.
  std::optional<std::string> json[6];
};

// The row `s` is on: kContextColumns, and the checkpoint at column 12 when there is one.
inline RawContextRow raw_context_row(sqlite3_stmt* s, bool with_checkpoint) {
  RawContextRow raw;
  StoredContext& c = raw.context;
  c.seq = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  c.id = column_text(s, 1);
  c.flow = column_text(s, 2);
  c.status = column_text(s, 3);
  c.commit_seq = static_cast<uint64_t>(sqlite3_column_int64(s, 4));
  c.started = sqlite3_column_int64(s, 9);
  c.ended = sqlite3_column_int64(s, 10);
  const int columns[6] = {5, 6, 7, 8, 11, 12};
  for (int i = 0; i < (with_checkpoint ? 6 : 5); ++i) {
    if (sqlite3_column_type(s, columns[i]) != SQLITE_NULL) raw.json[i] = column_text(s, columns[i]);
  }
  return raw;
}

// The context of a raw row. A row whose JSON does not parse is damaged (an error naming
// the file and the context), but for its checkpoint: a damaged one costs its context only,
// which then reads {"unreadable": "why"} (it ends in error when it is resumed).
inline Status parse_context_row(RawContextRow&& raw, const std::string& path, StoredContext* out) {
  *out = std::move(raw.context);
  const std::string what = "context " + out->id;
  Value record;
  Value* const into[6] = {&out->trigger, &out->inputs, &out->cause, &out->run_key, &record, &out->checkpoint};
  for (int i = 0; i < 6; ++i) {
    *into[i] = Value();
    if (!raw.json[i]) continue;
    Status parsed = parse_stored_json(*raw.json[i], path, what, into[i]);
    if (parsed) continue;
    if (i < 5) return parsed;
    *into[i] = Value::object({{"unreadable", Value(std::string_view(parsed.message()))}});
  }
  out->record = std::move(record);
  return Status::ok();
}

// One prepared statement.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  int prepare(sqlite3* db, const char* sql) { return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr); }
  sqlite3_stmt* get() const { return s_; }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, std::string_view v) { sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  // The value's JSON, or SQL NULL for a null value.
  // A document the runtime wrote as text is bound as it is.
  void bind_json(int i, const JsonDoc& d) {
    if (d.is_null()) {
      bind_null(i);
      return;
    }
    std::string scratch;
    bind(i, d.text(scratch));
  }
  void bind_json(int i, const Value& v) {
    if (v.is_null()) {
      bind_null(i);
      return;
    }
    std::string text;
    write_json(v, text);
    bind(i, std::string_view(text));
  }
  // Runs it to the end (a write). SQLITE_DONE on success.
  int run() {
    const int rc = sqlite3_step(s_);
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
    return rc;
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace flowrt::sqlite_rows
