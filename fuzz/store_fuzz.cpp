// Fuzz target: bytes -> a damaged flowrt data file, opened and loaded by SqliteStore.
//
// At start the target makes a few valid data files with SqliteStore itself, rewritten with
// 1 KiB pages by VACUUM (so that b-trees have interior pages, and no process id or time is
// left in free space: the files are the same every run), and keeps their bytes:
//   0  a new file: the schema and nothing else;
//   1  a file holding records, definitions, contexts (queued, running, ended), a lock, run
//      once marks and a recovery report, checkpointed;
//   2  file 1 with two more transactions of flowrt rows in its WAL, not checkpointed (a
//      data file and its -wal; SQLite's random salt is seeded).
// Input: byte 0 picks the base (its value modulo 3) and, with bit 7, a batch to write after
// a read-write load. The rest is a list of edits, each an op byte then its operands; an
// edit whose op byte has bit 7 set edits the -wal file (when the base has one) instead of
// the data file. Offsets are 3 bytes, big-endian, modulo the file's size:
//   op % 5 == 0  overwrite: offset, length byte, then that many bytes (fewer at the end);
//   op % 5 == 1  a 4-byte big-endian integer (page numbers, sizes, cell pointers): offset, 4 bytes;
//   op % 5 == 2  xor a byte: offset, mask;
//   op % 5 == 3  truncate at the offset (modulo the size + 1);
//   op % 5 == 4  zero a whole 1 KiB page: a page-number byte (modulo the pages).
// The files are written to a temporary directory and opened with SqliteStore::open, read
// only (load), then read-write (load, and the batch when asked). Checks: never a crash, leak
// or UB; every open, load and write is OK or an error whose message names the file.
// FLOWRT_FUZZ_PRINT=1 prints the bases' sizes and digests (they are the same every run).
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "plans/value_json.h"
#include "store/sqlite_store.h"

namespace {

using namespace flowrt;

constexpr size_t kMaxInput = 4096;
constexpr size_t kPage = 1024;

struct Base {
  std::string db;
  std::string wal;  // "" when none
};

std::string g_dir;
std::vector<Base> g_bases;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "store_fuzz: %s\n", what.c_str());
  std::abort();
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("cannot write " + path);
}

void remove_files(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

Value json(const char* text) {
  Result<Value> v = parse_json(text);
  if (!v) fail(std::string("bad JSON in the target: ") + text);
  return *v;
}

// A batch of every kind of change; `n` makes its ids and values differ.
StoreBatch batch_of(int n) {
  const std::string k = std::to_string(n);
  StoreBatch b;
  for (int i = 0; i < 6; ++i) {
    b.changes.push_back(RecordPut{"order", Value::object({{"sys_id", Value("o" + k + "-" + std::to_string(i))},
                                                          {"item", Value(std::string(40 + i * 30, 'x'))},
                                                          {"n", Value(i)}}),
                                  static_cast<uint64_t>(n * 10 + i)});
  }
  b.changes.push_back(RecordRemove{"order", "o" + k + "-2", static_cast<uint64_t>(n * 10 + 2)});
  StoredDefinition d;
  d.type = "flow";
  d.id = "ship" + k;
  d.published = json(R"({"id": "ship", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "x"}}]})");
  d.published_fingerprint = "fp" + k;
  d.active = true;
  d.activated_at = 5;
  b.changes.push_back(DefinitionPut{d});
  b.changes.push_back(ScheduleTick{"ship" + k, 7});
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    StoredContext c;
    c.seq = static_cast<uint64_t>(n) * 10 + seq;
    c.id = "ctx-" + std::to_string(c.seq);
    c.flow = "ship" + k;
    c.status = std::string(kQueuedStatus);
    c.commit_seq = c.seq;
    c.trigger = json(R"({"type": "api"})");
    c.inputs = json(R"({"a": 1})");
    b.changes.push_back(ContextPut{c});
  }
  b.changes.push_back(ContextUpdate{static_cast<uint64_t>(n) * 10 + 2, "in_progress", 3, -1, Value(), Value()});
  b.changes.push_back(ContextUpdate{static_cast<uint64_t>(n) * 10 + 3, "completed", 3, 4,
                                    json(R"({"id": "ctx", "status": "completed", "steps": []})"), Value()});
  b.changes.push_back(LockPut{"printer" + k, json(R"({"name": "printer", "limit": 1, "held": 1, "last_token": 4,
    "holders": [{"context": "ctx-2", "weight": 1, "token": 4}], "waiters": []})")});
  b.changes.push_back(RunOncePut{"order", "o" + k + "-1", "ship" + k, true});
  b.changes.push_back(RecoveryNote{9, json(R"({"started": ["ctx-1"], "failed": []})")});
  b.counters.commit_seq = static_cast<uint64_t>(n) * 10 + 9;
  b.counters.context_seq = static_cast<uint64_t>(n) * 10 + 3;
  b.counters.fencing_token = n + 4;
  b.counters.sys_id_seed = 1;
  b.counters.sys_id_count = 3;
  b.counters.clock = 1000 * n;
  return b;
}

std::unique_ptr<SqliteStore> open_or_fail(const std::string& path) {
  Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(path, SyncMode::kOff);
  if (!s) fail("cannot make a base file: " + s.message());
  return std::move(s).value();
}

void write_or_fail(SqliteStore& s, const StoreBatch& b) {
  if (Status st = s.write(b); !st) fail("cannot make a base file: " + st.message());
}

void exec_or_fail(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    fail(std::string("cannot make a base file: ") + sql + ": " + (message ? message : "?"));
  }
}

// Rewrites the file at `path` with 1 KiB pages and nothing in its free space (the holder
// row a store writes, with a process id and a time, is gone), so that it is the same every run.
void vacuum(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) fail("cannot make a base file");
  exec_or_fail(db, "PRAGMA journal_mode=DELETE; PRAGMA page_size=1024; VACUUM; PRAGMA journal_mode=WAL;");
  sqlite3_close(db);
}

// Two more transactions of flowrt rows, left in the WAL of the file at `path`.
const char* const kWalTransactions = R"sql(
BEGIN;
INSERT INTO records(tbl, sys_id, position, body) VALUES
  ('order', 'o9-1', 900, '{"sys_id":"o9-1","item":"late","n":9}'),
  ('order', 'o9-2', 901, '{"sys_id":"o9-2","item":"later","n":10}'),
  ('invoice', 'i1', 902, '{"sys_id":"i1","order":"o9-1"}');
INSERT INTO record_tables(name, position) VALUES('invoice', 902);
DELETE FROM records WHERE tbl = 'order' AND sys_id = 'o1-0';
INSERT INTO contexts(seq, id, flow, status, commit_seq, trigger, inputs, cause, run_key, started, ended, record)
  VALUES(91, 'ctx-91', 'ship1', 'queued', 95, '{"type":"api"}', NULL, '{"context":"ctx-1","flow":"ship1","chain":[]}',
         NULL, -1, -1, NULL);
INSERT OR REPLACE INTO locks(name, state) VALUES('gate', '{"name":"gate","limit":2,"held":0,"last_token":9,"holders":[],"waiters":[]}');
UPDATE counters SET commit_seq = 99, context_seq = 91, fencing_token = 9, clock = 9000;
COMMIT;
BEGIN;
UPDATE contexts SET status = 'completed', started = 9001, ended = 9002,
  record = '{"id":"ctx-91","status":"completed","steps":[]}' WHERE seq = 91;
UPDATE counters SET commit_seq = 100, clock = 9002;
COMMIT;
)sql";

void make_bases() {
  const char* tmp = std::getenv("TMPDIR");
  char templ[4096];
  std::snprintf(templ, sizeof templ, "%s/flowrt-store-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (::mkdtemp(templ) == nullptr) fail("cannot make a temporary directory");
  g_dir = templ;
  std::atexit([] { std::filesystem::remove_all(g_dir); });
  const std::string path = g_dir + "/base.db";

  // 0: a new file.
  remove_files(path);
  open_or_fail(path).reset();
  vacuum(path);
  g_bases.push_back(Base{read_all(path), ""});

  // 1: state of every kind, checkpointed.
  remove_files(path);
  {
    std::unique_ptr<SqliteStore> s = open_or_fail(path);
    for (int n = 1; n <= 3; ++n) write_or_fail(*s, batch_of(n));
  }
  vacuum(path);
  g_bases.push_back(Base{read_all(path), ""});

  // 2: base 1 with two more transactions in its WAL, copied while a connection has it open
  // (closing would checkpoint it). SQLite's random numbers (the WAL's salt) are seeded.
  sqlite3_test_control(SQLITE_TESTCTRL_PRNG_SEED, 1, nullptr);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) fail("cannot make a base file");
  exec_or_fail(db, kWalTransactions);
  g_bases.push_back(Base{read_all(path), read_all(path + "-wal")});
  sqlite3_close(db);
  if (g_bases.back().wal.empty()) fail("base 2 has no WAL");
  remove_files(path);
}

uint32_t offset24(const uint8_t*& p, const uint8_t* end) {
  uint32_t v = 0;
  for (int i = 0; i < 3; ++i) v = (v << 8) | (p < end ? *p++ : 0);
  return v;
}

void apply_edits(const uint8_t* p, const uint8_t* end, std::string& db, std::string& wal) {
  while (p < end) {
    const uint8_t op = *p++;
    std::string& f = (op & 0x80) && !wal.empty() ? wal : db;
    switch ((op & 0x7f) % 5) {
      case 0: {
        const uint32_t at = offset24(p, end);
        size_t len = p < end ? *p++ : 0;
        len = std::min<size_t>(len, static_cast<size_t>(end - p));
        if (!f.empty()) {
          const size_t o = at % f.size();
          for (size_t i = 0; i < len && o + i < f.size(); ++i) f[o + i] = static_cast<char>(p[i]);
        }
        p += len;
        break;
      }
      case 1: {
        const uint32_t at = offset24(p, end);
        for (int i = 0; i < 4; ++i) {
          const uint8_t b = p < end ? *p++ : 0;
          if (!f.empty() && at % f.size() + i < f.size()) f[at % f.size() + i] = static_cast<char>(b);
        }
        break;
      }
      case 2: {
        const uint32_t at = offset24(p, end);
        const uint8_t mask = p < end ? *p++ : 0xff;
        if (!f.empty()) f[at % f.size()] = static_cast<char>(f[at % f.size()] ^ mask);
        break;
      }
      case 3: {
        const uint32_t at = offset24(p, end);
        f.resize(at % (f.size() + 1));
        break;
      }
      default: {
        const uint8_t page = p < end ? *p++ : 0;
        const size_t pages = f.size() / kPage;
        if (pages > 0) {
          const size_t o = (page % pages) * kPage;
          std::fill(f.begin() + static_cast<std::ptrdiff_t>(o), f.begin() + static_cast<std::ptrdiff_t>(o + kPage), '\0');
        }
        break;
      }
    }
  }
}

// An error must name the file.
void check_error(const std::string& path, const std::string& what, const std::string& message) {
  if (message.find(path) == std::string::npos) fail(what + ": an error that does not name the file: " + message);
}

}  // namespace

// FNV-1a of `bytes`, for FLOWRT_FUZZ_PRINT.
uint64_t digest(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (const char c : bytes) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  make_bases();
  // FLOWRT_FUZZ_PRINT=1: the bases' sizes and digests (the same every run).
  if (const char* print = std::getenv("FLOWRT_FUZZ_PRINT"); print && *print == '1') {
    for (size_t i = 0; i < g_bases.size(); ++i) {
      std::fprintf(stderr, "store_fuzz: base %zu: %zu bytes (%016llx), wal %zu bytes (%016llx)\n", i,
                   g_bases[i].db.size(), static_cast<unsigned long long>(digest(g_bases[i].db)), g_bases[i].wal.size(),
                   static_cast<unsigned long long>(digest(g_bases[i].wal)));
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > kMaxInput) return -1;
  const Base& base = g_bases[data[0] % g_bases.size()];
  const bool write_batch = (data[0] & 0x80) != 0;
  std::string db = base.db;
  std::string wal = base.wal;
  apply_edits(data + 1, data + size, db, wal);

  const std::string path = g_dir + "/fuzzed.db";
  remove_files(path);
  write_all(path, db);
  if (!base.wal.empty()) write_all(path + "-wal", wal);

  {
    Result<std::unique_ptr<SqliteStore>> ro = SqliteStore::open(path, SyncMode::kOff, /*read_only=*/true);
    if (!ro) {
      check_error(path, "read-only open", ro.message());
    } else if (Result<StoredState> state = (*ro)->load(); !state) {
      check_error(path, "read-only load", state.message());
    }
  }
  {
    Result<std::unique_ptr<SqliteStore>> rw = SqliteStore::open(path, SyncMode::kOff);
    if (!rw) {
      check_error(path, "open", rw.message());
    } else if (Result<StoredState> state = (*rw)->load(); !state) {
      check_error(path, "load", state.message());
    } else if (write_batch) {
      if (Status s = (*rw)->write(batch_of(6)); !s) check_error(path, "write", s.message());
    }
  }
  remove_files(path);
  return 0;
}
