// SqliteStore's reads after load(): history (ended contexts, and live ones by seq),
// definition versions and the file's size. They go through the writer's read-only
// connection (sqlite_store.h), one reader at a time under read_mu_.
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "plans/value_json.h"
#include "store/sqlite_rows.h"
#include "store/sqlite_store.h"

namespace flowrt {

using namespace sqlite_rows;  // NOLINT: the rows of this store's own tables

namespace {

// Ends a read transaction however the read ends.
struct ReadTransaction {
  sqlite3* db;
  bool open;
  explicit ReadTransaction(sqlite3* d) : db(d), open(sqlite3_exec(d, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK) {}
  ~ReadTransaction() {
    if (open) sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;
};

}  // namespace

const char* SqliteStore::checkpoint_column() const { return schema_version_ >= 3 ? ", checkpoint" : ", NULL"; }

Result<std::vector<RawContextRow>> SqliteStore::read_rows(sqlite3* db, const std::string& sql,
                                                          const std::function<void(sqlite3_stmt*)>& bind,
                                                          std::string_view what) const {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) return error(what, db);
  bind(s);
  std::vector<RawContextRow> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) out.push_back(raw_context_row(s, /*with_checkpoint=*/true));
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return error(what, db);
  return out;
}

Result<std::vector<StoredContext>> SqliteStore::parse_rows(std::vector<RawContextRow>&& rows) const {
  std::vector<StoredContext> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) FLOWRT_RETURN_IF_ERROR(parse_context_row(std::move(rows[i]), path_, &out[i]));
  return out;
}

Result<std::optional<StoredContext>> SqliteStore::load_context(uint64_t seq) {
  std::string sql = std::string("SELECT ") + kContextColumns + checkpoint_column() + " FROM contexts WHERE seq = ?1";
  if (schema_version_ >= 4) sql += std::string(" UNION ALL SELECT ") + kContextColumns + ", NULL FROM history WHERE seq = ?1";
  Result<std::vector<RawContextRow>> rows = [&] {
    MutexLock lock(read_mu_);
    return read_rows(
        reader(), sql, [&](sqlite3_stmt* s) { sqlite3_bind_int64(s, 1, static_cast<int64_t>(seq)); },
        "cannot read a context");
  }();
  if (!rows) return rows.error();
  if (rows->empty()) return std::optional<StoredContext>();
  rows->resize(1);
  Result<std::vector<StoredContext>> parsed = parse_rows(std::move(rows).value());
  if (!parsed) return parsed.error();
  return std::optional<StoredContext>(std::move(parsed->front()));
}

Result<std::vector<StoredContext>> SqliteStore::list_contexts(const ContextQuery& q) {
  // The page from each table (live rows, then history since version 4), merged by seq: two
  // ordered, limited reads in one read transaction (a consistent view: a context that moves
  // to history meanwhile is seen once). The rows are parsed after the connection is let go.
  auto where = [&](bool live) {
    std::string w = " WHERE seq > ?1 AND seq <= ?5";
    if (!q.flow.empty()) w += " AND flow = ?2";
    if (!q.status.empty()) w += " AND status = ?3";
    if (q.ended_only && live) w += " AND status IN ('completed', 'cancelled', 'error')";
    // What load() gives, in a file older than the history table.
    if (q.loaded_only && live && schema_version_ < 4) {
      w += " AND (status IN ('queued', 'in_progress', 'waiting') OR record IS NULL)";
    }
    return w + (q.newest_first ? " ORDER BY seq DESC LIMIT ?4" : " ORDER BY seq LIMIT ?4");
  };
  auto bind = [&](sqlite3_stmt* s) {
    sqlite3_bind_int64(s, 1, static_cast<int64_t>(std::min<uint64_t>(q.after_seq, INT64_MAX)));
    if (!q.flow.empty()) sqlite3_bind_text(s, 2, q.flow.data(), static_cast<int>(q.flow.size()), SQLITE_TRANSIENT);
    if (!q.status.empty()) sqlite3_bind_text(s, 3, q.status.data(), static_cast<int>(q.status.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, static_cast<int64_t>(std::min<size_t>(q.limit, INT64_MAX)));
    sqlite3_bind_int64(s, 5, static_cast<int64_t>(std::min<uint64_t>(q.up_to_seq, INT64_MAX)));
  };
  const bool with_history = schema_version_ >= 4 && !q.loaded_only;  // since version 4, history holds none of those
  std::vector<RawContextRow> rows;
  {
    MutexLock lock(read_mu_);
    sqlite3* db = reader();
    ReadTransaction read(db);
    if (!read.open) return error("cannot read its contexts", db);
    Result<std::vector<RawContextRow>> live = read_rows(
        db, std::string("SELECT ") + kContextColumns + checkpoint_column() + " FROM contexts" + where(true), bind,
        "cannot read its contexts");
    if (!live) return live.error();
    if (!with_history) {
      rows = std::move(live).value();
    } else {
      Result<std::vector<RawContextRow>> ended = read_rows(
          db, std::string("SELECT ") + kContextColumns + ", NULL FROM history" + where(false), bind,
          "cannot read its contexts");
      if (!ended) return ended.error();
      rows.reserve(std::min(q.limit, live->size() + ended->size()));
      std::merge(std::make_move_iterator(live->begin()), std::make_move_iterator(live->end()),
                 std::make_move_iterator(ended->begin()), std::make_move_iterator(ended->end()),
                 std::back_inserter(rows),
                 [&](const RawContextRow& a, const RawContextRow& b) {
                   return q.newest_first ? a.context.seq > b.context.seq : a.context.seq < b.context.seq;
                 });
      if (rows.size() > q.limit) rows.resize(q.limit);
    }
  }
  if (!q.records_of_checkpointed) {
    for (RawContextRow& r : rows) {
      if (r.json[5]) r.json[4].reset();  // the record: left unparsed
    }
  }
  return parse_rows(std::move(rows));
}

Result<Value> SqliteStore::load_definition_version(std::string_view type, std::string_view id,
                                                   std::string_view fingerprint) {

  MutexLock lock(read_mu_);
  sqlite3* db = reader();
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT body FROM definition_versions WHERE type = ?1 AND id = ?2 AND fingerprint = ?3",
                         -1, &s, nullptr) != SQLITE_OK) {
    return error("cannot read a definition version", db);
  }
  sqlite3_bind_text(s, 1, type.data(), static_cast<int>(type.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 2, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 3, fingerprint.data(), static_cast<int>(fingerprint.size()), SQLITE_TRANSIENT);
  Value out;
  Status status;
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    status = column_json(s, 0, path_, "definition " + std::string(id) + " version " + std::string(fingerprint), &out);
  }
  sqlite3_finalize(s);
  if (!status) return status.error();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("cannot read a definition version", db);
  return out;
}

Result<std::pair<int64_t, int64_t>> SqliteStore::page_counts() {
  MutexLock lock(read_mu_);
  sqlite3* db = reader();
  int64_t counts[2] = {0, 0};
  const char* const sql[2] = {"PRAGMA page_count", "PRAGMA freelist_count"};
  for (int i = 0; i < 2; ++i) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql[i], -1, &s, nullptr) != SQLITE_OK) return error("cannot read its size", db);
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) counts[i] = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW) return error("cannot read its size", db);
  }
  return std::make_pair(counts[0], counts[1]);
}

}  // namespace flowrt
