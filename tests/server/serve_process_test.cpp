// `flowrt serve` as a process: it prints where it listens, answers, and on SIGTERM drains —
// a request in flight is answered — then exits 0; on a second start it goes on from its
// data file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/support/postgres_support.h"
#include "tests/support/run_command.h"

#include "tests/server/server_fixture.h"

namespace flowrt::testing_http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A running `flowrt serve DIR --listen 127.0.0.1:0`, its stdout read through a pipe.
class ServeProcess {
 public:
  // `extra`: more arguments (--data URL).
  explicit ServeProcess(const fs::path& dir, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {FLOWRT_BINARY, "serve", dir.string(), "--listen", "127.0.0.1:0", "--log-level", "error"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      execv(FLOWRT_BINARY, argv.data());
      _exit(127);
    }
    close(out[1]);
    out_ = fdopen(out[0], "r");
    // The first line says where it listens.
    const std::string line = read_line();
    const size_t colon = line.rfind(':');
    EXPECT_THAT(line, HasSubstr("listening on 127.0.0.1:"));
    if (colon != std::string::npos) port_ = static_cast<uint16_t>(std::stoi(line.substr(colon + 1)));
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) fclose(out_);
  }
  std::string read_line() {
    char buf[512];
    if (!fgets(buf, sizeof buf, out_)) return "";
    return buf;
  }
  // Sends `sig` and returns the exit status (or -1 when it did not exit normally).
  int stop(int sig) {
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string rest() {
    std::string all;
    for (std::string l = read_line(); !l.empty(); l = read_line()) all += l;
    return all;
  }
  uint16_t port() const { return port_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  uint16_t port_ = 0;
};

class ServeProcessTest : public ServerFixture {
 protected:
  void SetUp() override {
    serve();
    service_.reset();  // the project only: the process serves it
  }
};

TEST_F(ServeProcessTest, SigtermDrainsAndExitsZero) {
  ServeProcess p(dir_);
  ASSERT_NE(p.port(), 0);
  HttpClient c(p.port());
  const std::string gate(c.post("/api/tables/gate/records", R"({"open": false})").json()["sys_id"].as_string());
  // A call that waits (up to 30 s) is in flight when the signal comes: it is answered.
  c.write_raw("POST /api/flows/hold_desk/call?wait=30s HTTP/1.1\r\nHost: x\r\nContent-Length: " +
              std::to_string(12 + gate.size()) + "\r\n\r\n{\"gate\": \"" + gate + "\"}");
  // Once its context waits at the gate (read through another connection, a bounded number
  // of round trips), the signal comes while the call is still being waited for.
  HttpClient other(p.port());
  Value waiting;
  for (int i = 0; i < 5000 && waiting != Value("waiting"); ++i) {
    waiting = other.get("/api/contexts?flow=hold_desk").json()["contexts"].at(0)["status"];
  }
  ASSERT_EQ(waiting, Value("waiting"));
  EXPECT_EQ(p.stop(SIGTERM), 0);
  std::optional<HttpReply> answered = c.read_reply();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 202);  // the context goes on waiting: it resumes at the next start
  EXPECT_EQ(answered->json()["status"], Value("waiting"));
  EXPECT_THAT(p.rest(), HasSubstr("stopped"));

  // Started again on its data file, the waiting context is still there and resumes.
  ServeProcess again(dir_);
  HttpClient d(again.port());
  const Value contexts = d.get("/api/contexts?flow=hold_desk").json()["contexts"];
  ASSERT_EQ(contexts.size(), 1u);
  EXPECT_EQ(contexts.at(0)["status"], Value("waiting"));
  d.request(http::verb::patch, "/api/tables/gate/records/" + gate, R"({"open": true})");
  const std::string id(contexts.at(0)["id"].as_string());
  // It ends: the call's own ?wait= is not there to wait on, so read until it has (bounded).
  Value status;
  for (int i = 0; i < 2000 && status != Value("completed"); ++i) {
    status = d.get("/api/contexts/" + id).json()["status"];
    if (status != Value("completed")) (void)d.get("/api/flows/greet/plan");  // a round trip, not a sleep
  }
  EXPECT_EQ(status, Value("completed"));
  EXPECT_EQ(again.stop(SIGINT), 0);
}

// Writes with an Idempotency-Key through kill -9: a client that got no answer sends each
// write again with its key, and every write is there exactly once; one that was answered
// gets the same answer again (API.md, "Idempotency keys").
TEST_F(ServeProcessTest, KeyedWritesSentAgainAfterAKill_AreEachAppliedExactlyOnce) {
  constexpr int kRounds = 3, kPerRound = 30, kReadBeforeKill = 10;
  auto body_of = [](int n) { return R"({"number": "KW)" + std::to_string(n) + R"("})"; };
  auto key_of = [](int n) { return "kw-" + std::to_string(n); };
  std::map<int, std::string> answered;  // the first answer's body, of those read before a kill
  for (int round = 0; round < kRounds; ++round) {
    ServeProcess p(dir_);
    ASSERT_NE(p.port(), 0);
    HttpClient c(p.port());
    std::string pipelined;
    for (int n = round * kPerRound; n < (round + 1) * kPerRound; ++n) {
      const std::string body = body_of(n);
      pipelined += "POST /api/tables/incident/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Idempotency-Key: " + key_of(n) + "\r\nContent-Length: " + std::to_string(body.size()) +
                   "\r\n\r\n" + body;
    }
    c.write_raw(pipelined);
    for (int i = 0; i < kReadBeforeKill; ++i) {
      std::optional<HttpReply> r = c.read_reply();
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 201) << r->body;
      answered[round * kPerRound + i] = r->body;
    }
    EXPECT_EQ(p.stop(SIGKILL), -1);  // the rest in flight: some applied, some not
  }
  ServeProcess last(dir_);
  HttpClient c(last.port());
  int replayed = 0;
  for (int n = 0; n < kRounds * kPerRound; ++n) {
    HttpReply again = c.post_keyed("/api/tables/incident/records", body_of(n), key_of(n));
    if (auto it = answered.find(n); it != answered.end()) {
      EXPECT_EQ(again.status, 201) << n << ": " << again.body;
      EXPECT_EQ(again.body, it->second) << n;
      EXPECT_EQ(again.header("Idempotent-Replayed"), "true") << n;
    } else {
      // Not answered before the kill: applied now, or applied before (its answer kept, or not).
      EXPECT_TRUE(again.status == 201 || (again.status == 200 && again.json()["applied"] == Value(true)))
          << n << ": " << again.status << " " << again.body;
    }
    replayed += again.header("Idempotent-Replayed") == "true" ? 1 : 0;
  }
  EXPECT_GE(replayed, kRounds * kReadBeforeKill);
  std::map<std::string, int> count;
  const Value records = c.get("/api/tables/incident/records?limit=1000").json()["records"];
  for (const Value& r : records.items()) ++count[std::string(r["number"].as_string())];
  for (int n = 0; n < kRounds * kPerRound; ++n) EXPECT_EQ(count["KW" + std::to_string(n)], 1) << "KW" << n;
  EXPECT_EQ(records.size(), static_cast<size_t>(kRounds * kPerRound));
  EXPECT_EQ(last.stop(SIGTERM), 0);
}

// The same service with its state in PostgreSQL (--data postgresql://...): a context that
// waits when the server stops resumes in the next one, and nothing is kept in DIR.
TEST_F(ServeProcessTest, OnPostgres_AWaitingContextResumesInTheNextServer) {
  const std::string url = test_support::fresh_postgres_schema("serve_process");
  ASSERT_FALSE(url.empty());
  for (const char* f : {"flowrt.db", "flowrt.db-wal", "flowrt.db-shm"}) fs::remove(dir_ / f);  // the fixture's own
  std::string gate;
  std::string id;
  {
    ServeProcess p(dir_, {"--data", url});
    ASSERT_NE(p.port(), 0);
    HttpClient c(p.port());
    gate = std::string(c.post("/api/tables/gate/records", R"({"open": false})").json()["sys_id"].as_string());
    HttpReply called = c.post("/api/flows/hold_desk/call", "{\"gate\": \"" + gate + "\"}");
    ASSERT_EQ(called.status, 202) << called.body;
    id = std::string(called.json()["context_id"].as_string());
    Value status;
    for (int i = 0; i < 5000 && status != Value("waiting"); ++i) status = c.get("/api/contexts/" + id).json()["status"];
    ASSERT_EQ(status, Value("waiting"));
    EXPECT_EQ(p.stop(SIGTERM), 0);
  }
  EXPECT_FALSE(fs::exists(dir_ / "flowrt.db")) << "the state went to PostgreSQL, not to a file in DIR";

  ServeProcess again(dir_, {"--data", url});
  HttpClient d(again.port());
  EXPECT_EQ(d.get("/api/contexts/" + id).json()["status"], Value("waiting"));
  EXPECT_EQ(d.get("/api/tables/gate/records").json()["records"].size(), 1u);
  d.request(http::verb::patch, "/api/tables/gate/records/" + gate, R"({"open": true})");
  Value status;
  for (int i = 0; i < 5000 && status != Value("completed"); ++i) status = d.get("/api/contexts/" + id).json()["status"];
  EXPECT_EQ(status, Value("completed"));
  EXPECT_EQ(again.stop(SIGTERM), 0);
}

TEST_F(ServeProcessTest, NotAProjectIsAnError) {
  const std::string out = [] {
    std::string s;
    FILE* f = popen((std::string(FLOWRT_BINARY) + " serve /nonexistent 2>&1; echo exit=$?").c_str(), "r");
    char buf[512];
    while (fgets(buf, sizeof buf, f)) s += buf;
    pclose(f);
    return s;
  }();
  EXPECT_THAT(out, HasSubstr("is not a project"));
  EXPECT_THAT(out, HasSubstr("exit=1"));
}

// --node's unhappy paths: each a clear message and exit 1 (bad values) or 2 (bad usage),
// before anything listens or joins.
TEST_F(ServeProcessTest, NodeAndServerOptions_BadValuesAreClearErrors) {
  auto run = [&](const std::string& args) {
    return test_support::run_command(std::string(FLOWRT_BINARY) + " serve " + dir_.string() + " --listen 127.0.0.1:0 " +
                                     args + " 2>&1");
  };
  // Runs with `args`; expects exit status `code` and `says` in the output. Returns it.
  auto expect = [&](const std::string& args, int code, const std::string& says) {
    test_support::Output out = run(args);
    EXPECT_EQ(out.code, code) << args << ": " << out.out;
    EXPECT_THAT(out.out, HasSubstr(says)) << args;
    return out;
  };
  const std::string unreachable = " --data postgresql://nobody@127.0.0.1:1/x";
  const std::string need_node = "--lease-ms, --forward-timeout-ms and --advertise need --node";
  expect("--node a --data " + (dir_ / "state.db").string(), 1, "several nodes share a postgresql store");
  expect("--node 'a b'" + unreachable, 1, "'a b' is not a node name");
  expect("--lease-ms 1000", 2, need_node);
  expect("--advertise node-a.example:8480", 2, need_node);
  expect("--node a --advertise ''", 2, "--advertise needs HOST or HOST:PORT");
  test_support::Output out = expect("--node a --advertise 'h:99999'" + unreachable, 1,
                                    "'h:99999' is not HOST or HOST:PORT: the port must be a number from 1 to 65535");
  EXPECT_THAT(out.out, Not(HasSubstr("cannot connect"))) << "checked before the database is reached";
  expect("--node a --lease-ms 5", 2, "--lease-ms must be a number from 300 to 600000");
  out = expect("--node a" + unreachable, 1, "postgresql database 127.0.0.1:1/x");
  EXPECT_THAT(out.out, HasSubstr("cannot connect"));
  EXPECT_THAT(out.out, Not(HasSubstr("could not leave"))) << "it never joined: nothing to leave";
  for (const char* bad : {"0", "65", "x", "-1", ""}) {
    expect(std::string("--io-threads '") + bad + "'", 2, "--io-threads must be a number from 1 to 64");
  }
}

}  // namespace
}  // namespace flowrt::testing_http
