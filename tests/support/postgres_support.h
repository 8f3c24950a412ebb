// The PostgreSQL server the postgresql store's tests run against, and a schema of its own
// for each test. The server is scripts/pg-test-server.sh's, started by the CTest fixture
// `postgres` (tests/CMakeLists.txt), which writes its URL to the file FLOWRT_PG_URL_FILE
// (a compile definition). No server is a failure, never a skip: the tests that need one
// say how to start it. Header-only; for tests only.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "store/postgres_cluster.h"

namespace flowrt::test_support {

// The server's URL (postgresql://postgres@127.0.0.1:PORT/postgres); "" (and the test
// fails) when no server was started.
inline std::string postgres_server_url() {
#ifdef FLOWRT_PG_URL_FILE
  std::ifstream in(FLOWRT_PG_URL_FILE);
  std::string url;
  if (in && std::getline(in, url) && !url.empty()) return url;
  ADD_FAILURE() << "no PostgreSQL test server: " << FLOWRT_PG_URL_FILE
                << " is missing (ctest starts one through the fixture `postgres`; by hand: "
                   "scripts/pg-test-server.sh start DIR, with DIR the folder of that file)";
#else
  ADD_FAILURE() << "built without FLOWRT_PG_URL_FILE";
#endif
  return "";
}

// Runs `sql` on the server at `url`; its error message, "" when it succeeded.
inline std::string postgres_exec(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  std::string error;
  if (PQstatus(c) != CONNECTION_OK) {
    error = PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) error = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(c);
  return error;
}

// The first column of the first row `sql` returns on the server at `url` ("" when none).
inline std::string postgres_value(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  std::string out;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

// A new, empty schema on the test server named after `name` (and this process), and the
// URL whose search_path is that schema: a store opened with it keeps its tables there, so
// tests (and ctest -j's processes) never see each other's. "" (a failure) without a server.
inline std::string fresh_postgres_schema(const std::string& name) {
  static std::atomic<int> counter{0};
  const std::string server = postgres_server_url();
  if (server.empty()) return "";
  std::string schema = "t_";
  for (char c : name) {
    if (schema.size() >= 40) break;
    schema += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '_';
  }
  schema += "_" + std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1));
  const std::string error = postgres_exec(server, "CREATE SCHEMA " + schema);
  EXPECT_EQ(error, "") << "cannot create schema " << schema;
  return server + (server.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
}

// Drops the schema a URL of fresh_postgres_schema names, with everything in it.
inline void drop_postgres_schema(const std::string& url) {
  const std::string marker = "search_path%3D";
  const size_t at = url.find(marker);
  if (at == std::string::npos) return;
  const std::string schema = url.substr(at + marker.size());
  EXPECT_EQ(postgres_exec(postgres_server_url(), "DROP SCHEMA IF EXISTS " + schema + " CASCADE"), "");
}

#ifdef FLOWRT_SOURCE_DIR
// A PostgreSQL server of one test's own (scripts/pg-test-server.sh in a directory of its
// own), for faults the shared server must not see: restarted, as cleanly or as a crash.
// Stopped, and its files deleted, when this goes. For one thread.
class PrivatePostgresServer {
 public:
  explicit PrivatePostgresServer(const std::string& name)
      : state_(std::filesystem::temp_directory_path() / ("flowrt-pg-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(state_);
    if (!script("start")) {
      ADD_FAILURE() << "the private PostgreSQL server did not start (" << state_ << ")";
      return;
    }
    std::ifstream in(state_ / "url");
    std::getline(in, url_);
  }
  ~PrivatePostgresServer() {
    (void)script("stop");
    std::filesystem::remove_all(state_);
  }
  PrivatePostgresServer(const PrivatePostgresServer&) = delete;
  PrivatePostgresServer& operator=(const PrivatePostgresServer&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/postgres; "" when it did not start.
  const std::string& url() const { return url_; }
  // Restarts it on its port: "fast" (sessions end cleanly) or "immediate" (as a crash).
  bool restart(const std::string& mode) { return script("restart", " " + mode); }

 private:
  bool script(const std::string& action, const std::string& more = "") const {
    const std::string command = std::string("'") + FLOWRT_SOURCE_DIR + "/scripts/pg-test-server.sh' " + action + " '" +
                                state_.string() + "'" + more + " > /dev/null";
    return std::system(command.c_str()) == 0;
  }

  std::filesystem::path state_;
  std::string url_;
};
#endif

// The entry numbers of what an inbox append did (PostgresCluster::append), in order.
inline std::vector<uint64_t> entry_numbers(const std::vector<InboxAppended>& appended) {
  std::vector<uint64_t> out;
  for (const InboxAppended& a : appended) out.push_back(a.seq);
  return out;
}

}  // namespace flowrt::test_support
