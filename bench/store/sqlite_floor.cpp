// flowrt_sqlite_floor: what SQLite alone does on this machine with the rows one `triage`
// context leaves in a data file, with no engine around it: the floor under
// `flowrt bench --workload triage --store sqlite` (docs/PERFORMANCE.md).
//
// Per context, as the sqlite store writes them (data schema 5, the sizes measured in a
// `triage` file): a batch inserts the incident record and the context's queued row (its
// trigger with the record); the next batch updates the record, appends the context to
// history (its trigger summary and its 1.7 kB record) and deletes its live row. One
// transaction per batch, in WAL mode with synchronous=NORMAL (durability `normal`), the
// store's page cache, SQLite's automatic checkpoint. Each batch holds --batch contexts;
// the engine's batches hold about 16 with 128 clients.
//
//   build/release/bench/flowrt_sqlite_floor [--contexts N] [--batch B] [--file PATH]
//                                          [--record BYTES] [--trigger BYTES] [--history BYTES]
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

struct Options {
  long contexts = 200000;
  long batch = 16;
  std::string file = "/tmp/flowrt-sqlite-floor.db";
  long record = 246;    // an incident record's JSON
  long trigger = 490;   // a queued context's trigger, its record included
  long history = 1670;  // an ended context's record
  long summary = 122;   // history's trigger, without the record
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr, "flowrt_sqlite_floor: %s\nusage: flowrt_sqlite_floor [--contexts N] [--batch B] [--file PATH] "
                       "[--record BYTES] [--trigger BYTES] [--history BYTES]\n", message);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage("each option takes a value");
    const char* value = argv[++i];
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    const bool number = end && *end == '\0' && n > 0;
    if (flag == "--file") o.file = value;
    else if (!number) usage("a count must be a positive integer");
    else if (flag == "--contexts") o.contexts = n;
    else if (flag == "--batch") o.batch = n;
    else if (flag == "--record") o.record = n;
    else if (flag == "--trigger") o.trigger = n;
    else if (flag == "--history") o.history = n;
    else usage("unknown option");
  }
  return o;
}

class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) fail("open");
  }
  ~Db() { sqlite3_close(db_); }
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) fail(sql);
    return s;
  }
  void run(sqlite3_stmt* s) {
    if (sqlite3_step(s) != SQLITE_DONE) fail(sqlite3_sql(s));
    sqlite3_reset(s);
  }
  [[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "flowrt_sqlite_floor: %s: %s\n", what, sqlite3_errmsg(db_));
    std::exit(1);
  }

 private:
  sqlite3* db_ = nullptr;
};

void bind_text(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((o.file + suffix).c_str());
  Db db(o.file);
  db.exec("PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;");
  db.exec("CREATE TABLE records(position INTEGER PRIMARY KEY, tbl TEXT NOT NULL, sys_id TEXT NOT NULL, body TEXT NOT NULL);"
          "CREATE TABLE contexts(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, flow TEXT NOT NULL, status TEXT NOT NULL,"
          "  commit_seq INTEGER NOT NULL, trigger TEXT, started INTEGER NOT NULL, ended INTEGER NOT NULL);"
          "CREATE TABLE history(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, flow TEXT NOT NULL, status TEXT NOT NULL,"
          "  commit_seq INTEGER NOT NULL, trigger TEXT, started INTEGER NOT NULL, ended INTEGER NOT NULL, record TEXT NOT NULL);"
          "CREATE INDEX history_by_flow ON history(flow, seq); CREATE INDEX history_by_status ON history(status, seq);"
          "CREATE INDEX history_by_ended ON history(ended);");
  sqlite3_stmt* begin = db.prepare("BEGIN IMMEDIATE");
  sqlite3_stmt* commit = db.prepare("COMMIT");
  sqlite3_stmt* insert_record = db.prepare("INSERT INTO records VALUES(?1, 'incident', ?2, ?3)");
  sqlite3_stmt* update_record = db.prepare("UPDATE records SET body = ?2 WHERE position = ?1");
  sqlite3_stmt* queue = db.prepare("INSERT INTO contexts VALUES(?1, ?2, 'triage', 'queued', ?1, ?3, ?1, -1)");
  sqlite3_stmt* append = db.prepare("INSERT INTO history VALUES(?1, ?2, 'triage', 'completed', ?1, ?3, ?1, ?1, ?4)");
  sqlite3_stmt* forget = db.prepare("DELETE FROM contexts WHERE seq = ?1");

  const std::string sys_id(32, 'f');
  std::string record(static_cast<size_t>(o.record), 'r'), trigger(static_cast<size_t>(o.trigger), 't');
  std::string history(static_cast<size_t>(o.history), 'h'), summary(static_cast<size_t>(o.summary), 's');
  const auto start = std::chrono::steady_clock::now();
  // Batch k queues contexts [k*B, (k+1)*B) and ends those the batch before queued.
  const long batches = (o.contexts + o.batch - 1) / o.batch;
  for (long k = 0; k <= batches; ++k) {
    db.run(begin);
    for (long i = k * o.batch; k < batches && i < std::min(o.contexts, (k + 1) * o.batch); ++i) {
      record[0] = trigger[0] = static_cast<char>('a' + i % 26);
      sqlite3_bind_int64(insert_record, 1, i + 1);
      bind_text(insert_record, 2, sys_id);
      bind_text(insert_record, 3, record);
      db.run(insert_record);
      sqlite3_bind_int64(queue, 1, i + 1);
      bind_text(queue, 2, sys_id);
      bind_text(queue, 3, trigger);
      db.run(queue);
    }
    for (long i = (k - 1) * o.batch; k > 0 && i < std::min(o.contexts, k * o.batch); ++i) {
      sqlite3_bind_int64(update_record, 1, i + 1);
      bind_text(update_record, 2, record);
      db.run(update_record);
      sqlite3_bind_int64(append, 1, i + 1);
      bind_text(append, 2, sys_id);
      bind_text(append, 3, summary);
      bind_text(append, 4, history);
      db.run(append);
      sqlite3_bind_int64(forget, 1, i + 1);
      db.run(forget);
    }
    db.run(commit);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("contexts            %ld\nbatch               %ld\nseconds             %.3f\ncontexts/s          %.0f\n"
              "us per context      %.2f\n",
              o.contexts, o.batch, seconds, static_cast<double>(o.contexts) / seconds,
              seconds * 1e6 / static_cast<double>(o.contexts));
  for (sqlite3_stmt* s : {begin, commit, insert_record, update_record, queue, append, forget}) sqlite3_finalize(s);
  return 0;
}
