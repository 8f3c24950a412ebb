// SqliteStore: opening a file (its connections, the holder row; its checks and lock are
// sqlite_data_file.cpp's) and closing it,
// errors naming the file, and write() (each batch one transaction). load() is in
// sqlite_load.cpp, the schema in sqlite_schema.cpp, history reads in sqlite_history.cpp,
// the sync mode in sqlite_sync.cpp, checkpoints in sqlite_checkpointer.cpp.
#include "store/sqlite_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <type_traits>

#include "plans/time.h"
#include "plans/value_json.h"
#include "store/sqlite_data_file.h"
#include "store/sqlite_rows.h"

namespace flowrt {
namespace {

using namespace sqlite_rows;  // NOLINT: the rows of this store's own tables

std::string now_text() {
  const auto now = std::chrono::system_clock::now();
  return format_time(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
}

// The directory a data file is in ("." for a bare name).
std::string directory_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// The extended result code of a connection's first read of its file (SQLITE_OK: it read).
int first_read(sqlite3* db) {
  sqlite3_stmt* s = nullptr;
  int code = SQLITE_OK;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, nullptr) != SQLITE_OK ||
      sqlite3_step(s) != SQLITE_ROW) {
    code = sqlite3_extended_errcode(db);
  }
  sqlite3_finalize(s);
  return code;
}

// "file://PATH?immutable=1": PATH absolute, every byte a URI could read as more than itself
// percent-encoded. Empty when the absolute path is not known.
std::string immutable_uri(const std::string& path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec) return "";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (const unsigned char c : absolute) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                       c == '-' || c == '.' || c == '_' || c == '~';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  return uri + "?immutable=1";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "an unknown host";
  return name;
}

}  // namespace

class SqliteStore::Statements {
 public:
  Stmt begin, commit, rollback;
  Stmt put_table, put_record, remove_record;
  Stmt put_definition, put_definition_version, schedule_tick;
  Stmt put_context, update_context, remove_context;
  Stmt put_history, move_to_history, update_history, in_history;
  Stmt prune_age, prune_oldest, count_ended, vacuum;
  Stmt put_lock, remove_lock;
  Stmt run_once_add, run_once_remove, run_once_clear;
  Stmt add_recovery;
  Stmt put_keyed_write, prune_keyed_writes;
  Stmt put_counters;
  std::set<std::string, std::less<>> tables;  // the record tables the file has

  int prepare(sqlite3* db) {
    const std::pair<Stmt*, const char*> all[] = {
        {&begin, "BEGIN IMMEDIATE"},
        {&commit, "COMMIT"},
        {&rollback, "ROLLBACK"},
        {&put_table, "INSERT OR IGNORE INTO record_tables(name, position) VALUES(?1, ?2)"},
        // Inserted at its position, or the record there updated; a different record at that
        // position is left as it is (no change: write() refuses the batch).
        {&put_record,
         "INSERT INTO records(position, tbl, sys_id, body) VALUES(?3, ?1, ?2, ?4) ON CONFLICT(position) DO UPDATE "
         "SET body = excluded.body WHERE tbl = excluded.tbl AND sys_id = excluded.sys_id"},
        {&remove_record, "DELETE FROM records WHERE position = ?3 AND tbl = ?1 AND sys_id = ?2"},
        {&put_definition,
         "INSERT INTO definitions(type, id, draft, published, fingerprint, active, activated_at, last_tick) "
         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(type, id) DO UPDATE SET draft = excluded.draft, "
         "published = excluded.published, fingerprint = excluded.fingerprint, active = excluded.active, "
         "activated_at = excluded.activated_at"},
        {&put_definition_version,
         "INSERT OR IGNORE INTO definition_versions(type, id, fingerprint, body) VALUES(?1, ?2, ?3, ?4)"},
        {&schedule_tick, "UPDATE definitions SET last_tick = ?2 WHERE type = 'flow' AND id = ?1"},
        {&put_context,
         "INSERT OR REPLACE INTO contexts(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, "
         "ended, record, checkpoint) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"},
        {&update_context,
         "UPDATE contexts SET status = ?2, started = CASE WHEN ?3 >= 0 THEN ?3 ELSE started END, "
         "ended = CASE WHEN ?4 >= 0 THEN ?4 ELSE ended END, record = COALESCE(?5, record), "
         "checkpoint = CASE WHEN ?2 IN ('completed', 'cancelled', 'error') THEN NULL ELSE COALESCE(?6, checkpoint) END "
         "WHERE seq = ?1"},
        {&remove_context, "DELETE FROM contexts WHERE seq = ?1"},
        {&put_history,
         "INSERT OR REPLACE INTO history(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, "
         "ended, record) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"},
        // A live context ending with its record: its row moves to history (then
        // remove_context); no row when it is not live (sqlite3_changes says which).
        {&move_to_history,
         "INSERT INTO history(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, "
         "record) SELECT seq, id, flow, ?2, commit_seq, " FLOWRT_SQL_TRIGGER_SUMMARY ", inputs, cause, run_key, "
         "CASE WHEN ?3 >= 0 THEN ?3 ELSE started END, CASE WHEN ?4 >= 0 THEN ?4 ELSE ended END, "
         "COALESCE(?5, record) FROM contexts WHERE seq = ?1 AND COALESCE(?5, record) IS NOT NULL"},
        {&update_history,
         "UPDATE history SET status = ?2, started = CASE WHEN ?3 >= 0 THEN ?3 ELSE started END, "
         "ended = CASE WHEN ?4 >= 0 THEN ?4 ELSE ended END, record = COALESCE(?5, record) WHERE seq = ?1"},
        {&in_history, "SELECT 1 FROM history WHERE seq = ?1"},
        {&prune_age, "DELETE FROM history WHERE ended < ?1"},
        {&prune_oldest, "DELETE FROM history WHERE seq IN (SELECT seq FROM history ORDER BY seq LIMIT ?1)"},
        {&count_ended, "SELECT count(*) FROM history"},
        {&vacuum, "PRAGMA incremental_vacuum"},
        {&put_lock, "INSERT OR REPLACE INTO locks(name, state) VALUES(?1, ?2)"},
        {&remove_lock, "DELETE FROM locks WHERE name = ?1"},
        {&run_once_add, "INSERT OR IGNORE INTO run_once(tbl, sys_id, flow) VALUES(?1, ?2, ?3)"},
        {&run_once_remove, "DELETE FROM run_once WHERE tbl = ?1 AND sys_id = ?2 AND flow = ?3"},
        {&run_once_clear, "DELETE FROM run_once WHERE tbl = ?1 AND sys_id = ?2"},
        {&add_recovery, "INSERT INTO recoveries(at, report) VALUES(?1, ?2)"},
        {&put_keyed_write,
         "INSERT OR REPLACE INTO keyed_writes(caller, key, request, status, headers, body, at) "
         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
        {&prune_keyed_writes, "DELETE FROM keyed_writes WHERE at < ?1"},
        {&put_counters,
         "INSERT OR REPLACE INTO counters(id, commit_seq, context_seq, fencing_token, sys_id_seed, sys_id_count, clock) "
         "VALUES(1, ?1, ?2, ?3, ?4, ?5, ?6)"},
    };
    for (const auto& [stmt, sql] : all) {
      if (const int rc = stmt->prepare(db, sql); rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
  }
};

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path, SyncMode sync, bool read_only,
                                                       const std::string& vfs, SqliteCheckpointer::Limits checkpoints,
                                                       StoreReport report) {
  if (path.empty()) return Error{"the sqlite store needs a file name"};
  // SQLite counts every allocation it makes under one process-wide mutex unless told not
  // to; nothing reads those counts. Only possible before SQLite is first used in the
  // process (otherwise SQLITE_MISUSE, and the counts stay on: slower, not wrong).
  static std::once_flag no_memory_counts;
  std::call_once(no_memory_counts, [] { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  // Checked and (a writer) locked before SQLite touches it; let go of on any error below.
  Result<SqliteDataFile> file = SqliteDataFile::take(path, read_only);
  if (!file) return file.error();
  sqlite3* db = nullptr;
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX;
  if (!vfs.empty() && sqlite3_vfs_find(vfs.c_str()) == nullptr) {
    return Error{path + ": cannot open: no SQLite VFS named '" + vfs + "'"};
  }
  if (const int rc = sqlite3_open_v2(path.c_str(), &db, flags, vfs.empty() ? nullptr : vfs.c_str()); rc != SQLITE_OK) {
    std::string message = path + ": cannot open: " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return Error{message};
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, db, std::move(file).value(), read_only));
  sqlite3_extended_result_codes(db, 1);
  // A reader meets a checkpoint now and then; it waits for it rather than fail.
  sqlite3_busy_timeout(db, 5000);
  if (read_only) FLOWRT_RETURN_IF_ERROR(store->read_without_a_shm(vfs));
  FLOWRT_RETURN_IF_ERROR(store->prepare_schema());
  if (!read_only) {
    FLOWRT_RETURN_IF_ERROR(store->prepare_history());
    // History is read through a connection of its own (class comment).
    // Through the same VFS as the writer: a fault-injecting one sees the reads too.
    if (sqlite3_open_v2(path.c_str(), &store->reader_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                        vfs.empty() ? nullptr : vfs.c_str()) != SQLITE_OK) {
      return store->error("cannot open a connection to read it", store->reader_);
    }
    sqlite3_extended_result_codes(store->reader_, 1);
    sqlite3_busy_timeout(store->reader_, 5000);
    FLOWRT_RETURN_IF_ERROR(store->set_sync_mode(sync));
    // A batch of thousands of contexts touches more pages than SQLite's default 2 MiB
    // cache holds: they would be read back from the WAL with a system call each.
    FLOWRT_RETURN_IF_ERROR(store->exec(("PRAGMA cache_size=-" + std::to_string(kWriterCacheKiB)).c_str()));
    store->statements_ = std::make_unique<Statements>();
    if (store->statements_->prepare(db) != SQLITE_OK) return store->error("cannot prepare its statements");
    // Who holds it, for a second opener's message.
    Stmt holder;
    if (holder.prepare(db, "INSERT OR REPLACE INTO holder(id, pid, host, since) VALUES(1, ?1, ?2, ?3)") != SQLITE_OK) {
      return store->error("cannot note who holds it");
    }
    holder.bind(1, static_cast<int64_t>(::getpid()));
    holder.bind(2, std::string_view(host_name()));
    holder.bind(3, std::string_view(now_text()));
    if (holder.run() != SQLITE_DONE) return store->error("cannot note who holds it");
    store->holds_ = true;
    // Checkpoints move to a thread of their own: the hook replaces SQLite's automatic
    // checkpoint (which would run inside a commit) and tells the checkpointer the WAL's
    // size after each commit.
    Result<std::unique_ptr<SqliteCheckpointer>> checkpointer = SqliteCheckpointer::start(path, vfs, sync, checkpoints, std::move(report),
                                                                                       store->file_.fd());
    if (!checkpointer) return checkpointer.error();
    store->checkpointer_ = std::move(*checkpointer);
    sqlite3_wal_hook(
        db,
        [](void* target, sqlite3*, const char*, int frames) {
          static_cast<SqliteCheckpointer*>(target)->note_commit(frames);
          return SQLITE_OK;
        },
        store->checkpointer_.get());
  }
  return store;
}

SqliteStore::SqliteStore(std::string path, sqlite3* db, SqliteDataFile file, bool read_only)
    : path_(std::move(path)), db_(db), file_(std::move(file)), read_only_(read_only) {}

SqliteStore::~SqliteStore() {
  if (checkpointer_) sqlite3_wal_hook(db_, nullptr, nullptr);  // the hook calls the checkpointer
  checkpointer_.reset();  // its connection closes first: the writer's close, the last, checkpoints
  statements_.reset();  // finalized before the connection closes
  sqlite3_close(reader_);
  if (holds_) {
    // The last commit syncs the WAL, and with it every batch before it: the close's own
    // checkpoint (which syncs) is skipped while another connection has the file open
    // (flowrt inspect, a backup), and with `normal` nothing else would sync the batches
    // written since the last checkpoint. `off` syncs nothing, at the close neither.
    if (sync_ != SyncMode::kOff) sqlite3_exec(db_, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
    sqlite3_exec(db_, "DELETE FROM holder", nullptr, nullptr, nullptr);  // no one holds it now
  }
  sqlite3_close(db_);
  file_.let_go();  // last: its descriptors close only now (sqlite_data_file.h)
}

Status SqliteStore::read_without_a_shm(const std::string& vfs) {
  const int primary = first_read(db_) & 0xff;
  if (primary != SQLITE_READONLY && primary != SQLITE_CANTOPEN) return Status::ok();  // read, or prepare_schema names it
  const std::string dir = directory_of(path_);
  std::error_code ec;
  if (std::filesystem::exists(path_ + "-shm", ec) || ::access(dir.c_str(), W_OK) == 0) return Status::ok();
  // The lock first: no writer opens the file from now on, so a -wal found empty stays so.
  FLOWRT_RETURN_IF_ERROR(file_.hold_shared(path_));
  const uintmax_t wal = std::filesystem::file_size(path_ + "-wal", ec);
  if (!ec && wal > 0) {
    return Error{path_ + ": cannot read it: its -wal file holds commits that are not in the file yet, which SQLite "
                 "reads through a -shm file that it cannot make beside them, as the directory " + dir +
                 " is not writable by this user; read it as a user who may write " + dir +
                 ", or copy the file and its -wal to a directory you may write"};
  }
  const std::string uri = immutable_uri(path_);
  if (uri.empty()) return Error{path_ + ": cannot open: its absolute path is not known"};
  sqlite3_close(db_);
  db_ = nullptr;
  if (const int rc = sqlite3_open_v2(uri.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                                     vfs.empty() ? nullptr : vfs.c_str());
      rc != SQLITE_OK) {
    return Error{path_ + ": cannot open: " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc))};
  }
  sqlite3_extended_result_codes(db_, 1);
  return Status::ok();
}

std::string SqliteStore::open_note() const {
  if (migrated_from_ == 0) return "";
  return "migrated from data schema version " + std::to_string(migrated_from_) + " to " + std::to_string(kSchemaVersion);
}

Error SqliteStore::error(std::string_view what, sqlite3* db) const {
  if (!db) db = db_;
  const int code = sqlite3_extended_errcode(db);
  const int primary = code & 0xff;
  std::string message = path_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db);
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
    message += kDamaged;
  } else if (primary == SQLITE_FULL) {
    message += " (the disk is full)";
  } else if (primary == SQLITE_READONLY && code != SQLITE_READONLY_ROLLBACK) {
    // SQLite writes a -wal and a -shm file beside the data file: its directory must be
    // writable too, which a file that is writable itself does not show. (A file a writer
    // may not write is refused before SQLite opens it: SqliteDataFile::take.)
    const std::string dir = directory_of(path_);
    if (::access(dir.c_str(), W_OK) != 0) {
      message += " (its directory " + dir +
                 " is not writable by this user, and SQLite keeps its -wal and -shm files beside the file)";
    }
  } else if (code == SQLITE_READONLY_ROLLBACK) {
    // A reader cannot roll back a hot journal: a writer was cut off (killed, or the power
    // went) in the middle of a write in rollback-journal mode, which a flowrt file is in
    // only while it is created, before it holds anything acknowledged.
    message = path_ + ": a write to it was cut off (a crash left " + path_ +
              "-journal beside it; for a flowrt file this happens only while it is created, so it holds nothing "
              "acknowledged yet): the next engine to open it for writing (flowrt run or serve with --data) rolls the "
              "write back; a reader cannot";
  }
  return Error{message};
}

Status SqliteStore::exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return error("cannot run " + std::string(sql).substr(0, 40));
  return Status::ok();
}

StoreHealth SqliteStore::health() const {
  if (!checkpointer_) return {};
  return checkpointer_->health();
}

void SqliteStore::know_tables(const StoredState& state) {
  if (!statements_) return;
  for (const StoredState::Table& t : state.tables) statements_->tables.insert(t.name);
}

Status SqliteStore::write(const StoreBatch& batch) {
  if (read_only_) return Error{path_ + ": opened read only"};
  Statements& st = *statements_;
  // The WAL at its cap: every frame is copied before this transaction, which then starts
  // the WAL over (store/sqlite_checkpointer.h).
  if (checkpointer_->wal_full()) checkpointer_->wait_until_copied();
  if (st.begin.run() != SQLITE_DONE) return error("cannot begin a transaction");
  std::vector<std::string> new_tables;
  int64_t ended = ended_count_;  // ended contexts in the file, as this batch goes (-1: not counted)
  int64_t pruned = 0;            // contexts this batch deleted
  std::string misplaced;         // a record put where another is: the engine and the file disagree
  int rc = SQLITE_DONE;
  auto ok = [&](int r) {
    rc = r;
    return r == SQLITE_DONE;
  };
  for (const StoreChange& change : batch.changes) {
    const bool done = std::visit(
        [&](const auto& c) -> bool {
          using T = std::decay_t<decltype(c)>;
          if constexpr (std::is_same_v<T, RecordPut>) {
            if (!st.tables.count(c.table)) {
              st.put_table.bind(1, std::string_view(c.table));
              st.put_table.bind(2, static_cast<int64_t>(c.position));
              if (!ok(st.put_table.run())) return false;
              st.tables.insert(c.table);
              new_tables.push_back(c.table);
            }
            const std::string_view sys_id = c.record.members()[0].value.as_string();
            st.put_record.bind(1, std::string_view(c.table));
            st.put_record.bind(2, sys_id);
            st.put_record.bind(3, static_cast<int64_t>(std::min<uint64_t>(c.position, INT64_MAX)));
            st.put_record.bind_json(4, c.record);
            if (!ok(st.put_record.run())) return false;
            if (sqlite3_changes(db_) == 1) return true;
            misplaced = "record " + std::string(sys_id) + " of table " + c.table + " at position " +
                        std::to_string(c.position) + ": another record is there";
            rc = SQLITE_CONSTRAINT;
            return false;
          } else if constexpr (std::is_same_v<T, RecordRemove>) {
            st.remove_record.bind(1, std::string_view(c.table));
            st.remove_record.bind(2, std::string_view(c.sys_id));
            st.remove_record.bind(3, static_cast<int64_t>(std::min<uint64_t>(c.position, INT64_MAX)));
            return ok(st.remove_record.run());
          } else if constexpr (std::is_same_v<T, DefinitionPut>) {
            const StoredDefinition& d = c.definition;
            st.put_definition.bind(1, std::string_view(d.type));
            st.put_definition.bind(2, std::string_view(d.id));
            st.put_definition.bind_json(3, d.draft);
            st.put_definition.bind_json(4, d.published);
            st.put_definition.bind(5, std::string_view(d.published_fingerprint));
            st.put_definition.bind(6, int64_t{d.active ? 1 : 0});
            st.put_definition.bind(7, d.activated_at);
            st.put_definition.bind(8, d.last_tick);
            if (!ok(st.put_definition.run())) return false;
            if (d.published.is_null()) return true;
            st.put_definition_version.bind(1, std::string_view(d.type));
            st.put_definition_version.bind(2, std::string_view(d.id));
            st.put_definition_version.bind(3, std::string_view(d.published_fingerprint));
            st.put_definition_version.bind_json(4, d.published);
            return ok(st.put_definition_version.run());
          } else if constexpr (std::is_same_v<T, ScheduleTick>) {
            st.schedule_tick.bind(1, std::string_view(c.flow));
            st.schedule_tick.bind(2, c.at);
            return ok(st.schedule_tick.run());
          } else if constexpr (std::is_same_v<T, ContextPut>) {
            const StoredContext& x = c.context;
            // A context is in history once it has ended with its record, and live (in
            // `contexts`) until then; never in both.
            const bool to_history = is_final_context_status(x.status) && !x.record.is_null();
            st.remove_context.bind(1, static_cast<int64_t>(x.seq));
            if (to_history && !ok(st.remove_context.run())) return false;
            // The columns a live row and a history row share (kContextColumns' order).
            auto bind_row = [&](Stmt& p, const Value& trigger) {
              p.bind(1, static_cast<int64_t>(x.seq));
              p.bind(2, std::string_view(x.id));
              p.bind(3, std::string_view(x.flow));
              p.bind(4, std::string_view(x.status));
              p.bind(5, static_cast<int64_t>(x.commit_seq));
              p.bind_json(6, trigger);
              p.bind_json(7, x.inputs);
              p.bind_json(8, x.cause);
              p.bind_json(9, x.run_key);
              p.bind(10, x.started);
              p.bind(11, x.ended);
              p.bind_json(12, x.record);
            };
            if (!to_history) {
              bind_row(st.put_context, x.trigger);
              st.put_context.bind_json(13, x.checkpoint);
              return ok(st.put_context.run());
            }
            if (ended >= 0) {
              // A counted writer: the count grows unless the row replaces one in history.
              Stmt& q = st.in_history;
              q.bind(1, static_cast<int64_t>(x.seq));
              const int r = sqlite3_step(q.get());
              sqlite3_reset(q.get());
              if (r != SQLITE_ROW && r != SQLITE_DONE) return ok(r);
              if (r == SQLITE_DONE) ++ended;
            }
            bind_row(st.put_history, ended_trigger(x.trigger));
            return ok(st.put_history.run());
          } else if constexpr (std::is_same_v<T, ContextUpdate>) {
            auto bind = [&](Stmt& u) {
              u.bind(1, static_cast<int64_t>(c.seq));
              u.bind(2, std::string_view(c.status));
              u.bind(3, c.started);
              u.bind(4, c.ended);
              u.bind_json(5, c.record);
            };
            if (is_final_context_status(c.status)) {
              // A live context ending with its record leaves `contexts` for history.
              bind(st.move_to_history);
              if (!ok(st.move_to_history.run())) return false;
              if (sqlite3_changes(db_) > 0) {
                if (ended >= 0) ++ended;
                st.remove_context.bind(1, static_cast<int64_t>(c.seq));
                return ok(st.remove_context.run());
              }
            }
            // Live (an ended one without its record stays here, status and all), or else
            // in history already (an ended context whose record changes).
            bind(st.update_context);
            st.update_context.bind_json(6, c.checkpoint);
            if (!ok(st.update_context.run())) return false;
            if (sqlite3_changes(db_) > 0) return true;
            bind(st.update_history);
            return ok(st.update_history.run());
          } else if constexpr (std::is_same_v<T, LockPut>) {
            if (c.state.is_null()) {
              st.remove_lock.bind(1, std::string_view(c.name));
              return ok(st.remove_lock.run());
            }
            st.put_lock.bind(1, std::string_view(c.name));
            st.put_lock.bind_json(2, c.state);
            return ok(st.put_lock.run());
          } else if constexpr (std::is_same_v<T, RunOncePut>) {
            Stmt& r = c.flow.empty() ? st.run_once_clear : c.ran ? st.run_once_add : st.run_once_remove;
            r.bind(1, std::string_view(c.table));
            r.bind(2, std::string_view(c.sys_id));
            if (!c.flow.empty()) r.bind(3, std::string_view(c.flow));
            return ok(r.run());
          } else if constexpr (std::is_same_v<T, KeyedWritePut>) {
            Stmt& k = st.put_keyed_write;
            k.bind(1, std::string_view(c.caller));
            k.bind(2, std::string_view(c.key));
            k.bind(3, std::string_view(c.request));
            k.bind(4, static_cast<int64_t>(c.status));
            k.bind(5, std::string_view(c.headers));
            k.bind(6, std::string_view(c.body));
            k.bind(7, c.at);
            return ok(k.run());
          } else if constexpr (std::is_same_v<T, KeyedWritePrune>) {
            st.prune_keyed_writes.bind(1, c.before);
            return ok(st.prune_keyed_writes.run());
          } else if constexpr (std::is_same_v<T, RecoveryNote>) {
            st.add_recovery.bind(1, c.at);
            st.add_recovery.bind_json(2, c.report);
            return ok(st.add_recovery.run());
          } else if constexpr (std::is_same_v<T, HistoryPrune>) {
            if (c.ended_before >= 0) {
              st.prune_age.bind(1, c.ended_before);
              if (!ok(st.prune_age.run())) return false;
              const int64_t n = sqlite3_changes64(db_);
              pruned += n;
              if (ended >= 0) ended -= n;
            }
            if (c.keep == 0) return true;
            if (ended < 0) {
              // Counted once per writer (an index-only scan), then kept up to date.
              const int r = sqlite3_step(st.count_ended.get());
              if (r == SQLITE_ROW) ended = sqlite3_column_int64(st.count_ended.get(), 0);
              sqlite3_reset(st.count_ended.get());
              if (r != SQLITE_ROW) return ok(r);
            }
            if (ended <= static_cast<int64_t>(std::min<uint64_t>(c.keep, INT64_MAX))) return true;
            st.prune_oldest.bind(1, ended - static_cast<int64_t>(c.keep));
            if (!ok(st.prune_oldest.run())) return false;
            const int64_t n = sqlite3_changes64(db_);
            pruned += n;
            ended -= n;
            return true;
          }
          return true;
        },
        change);
    if (!done) break;
  }
  if (rc == SQLITE_DONE) {
    const StoreCounters& k = batch.counters;
    st.put_counters.bind(1, static_cast<int64_t>(k.commit_seq));
    st.put_counters.bind(2, static_cast<int64_t>(k.context_seq));
    st.put_counters.bind(3, k.fencing_token);
    st.put_counters.bind(4, static_cast<int64_t>(k.sys_id_seed));
    st.put_counters.bind(5, static_cast<int64_t>(k.sys_id_count));
    st.put_counters.bind(6, k.clock);
    rc = st.put_counters.run();
  }
  if (rc == SQLITE_DONE && pruned > 0 && incremental_vacuum_) {
    // The pages the deleted rows held go back to the file system, in this transaction.
    while ((rc = sqlite3_step(st.vacuum.get())) == SQLITE_ROW) {
    }
    sqlite3_reset(st.vacuum.get());
  }
  if (rc == SQLITE_DONE) rc = st.commit.run();
  if (rc == SQLITE_DONE) {
    ended_count_ = ended;
    return Status::ok();
  }
  ended_count_ = -1;
  Error e = misplaced.empty() ? error("cannot write a batch of " + std::to_string(batch.changes.size()) + " changes")
                              : Error{path_ + ": cannot write a batch of " + std::to_string(batch.changes.size()) +
                                      " changes: " + misplaced};
  st.rollback.run();
  for (const std::string& t : new_tables) st.tables.erase(t);  // not in the file after all
  return e;
}

}  // namespace flowrt
