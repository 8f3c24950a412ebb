// `flowrt bench` with a durable store (--store sqlite or postgresql), run as a user runs it:
// whichever way the clients commit (a thread per client that waits for each commit, or
// --in-flight: commits kept in flight and waited for oldest first), the run reports how,
// and leaves every record and every context, completed, in the store; a store that is not
// new is refused, and so are options that do not fit the store. (What --in-flight does to
// the rate is a benchmark's to measure: docs/PERFORMANCE.md.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "plans/value_json.h"
#include "tests/cli/cli_fixture.h"
#include "tests/support/postgres_support.h"

namespace flowrt {
namespace {

using namespace flowrt::cli_testing;
using namespace flowrt::test_support;
namespace fs = std::filesystem;

// Sqlite: a new file in the test's directory; Postgres: a fresh schema of the test server.
class BenchStoreTest : public CliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  // A --data that no store has used yet, as one shell word.
  std::string fresh_data(const std::string& name) {
    if (GetParam() == "Postgres") {
      const std::string url = fresh_postgres_schema(name);
      EXPECT_FALSE(url.empty());
      return "'" + url + "'";
    }
    return (dir_ / (name + ".db")).string();
  }
  std::string store() const { return GetParam() == "Postgres" ? "postgresql" : "sqlite"; }

  // `flowrt bench ARGS --json`, parsed; null (and a failure) when it did not run.
  Value bench(const std::string& args) {
    Output out = run("bench " + args + " --json", " 2>/dev/null");
    EXPECT_EQ(out.code, 0) << args << "\n" << out.out;
    Result<Value> doc = parse_json(out.out);
    EXPECT_TRUE(doc.is_ok()) << args << "\n" << out.out;
    return out.code == 0 && doc ? *doc : Value();
  }
  // What `flowrt inspect` finds in the store.
  Value inspect(const std::string& data) {
    Output out = run("inspect --data " + data + " --format json", " 2>/dev/null");
    EXPECT_EQ(out.code, 0) << out.out;
    Result<Value> doc = parse_json(out.out);
    EXPECT_TRUE(doc.is_ok()) << out.out;
    return doc ? *doc : Value();
  }
};
INSTANTIATE_TEST_SUITE_P(Stores, BenchStoreTest, ::testing::Values("Sqlite", "Postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(BenchStoreTest, BothWaysOfCommitting_LeaveEveryRecordAndContextInTheStore_AUsedStoreIsRefused) {
  struct Way {
    const char* name;
    std::string options;
    int clients;
    int in_flight;
  };
  for (const Way& way : {Way{"threads", "--clients 4", 4, 0}, Way{"in_flight", "--clients 2 --in-flight 32", 2, 32}}) {
    SCOPED_TRACE(way.name);
    const std::string data = fresh_data(way.name);
    const Value doc = bench("--workload triage --events 2000 --store " + store() + " --data " + data + " " + way.options);
    ASSERT_TRUE(doc.is_object());
    EXPECT_EQ(doc["contexts"], Value(2000));
    EXPECT_EQ(doc["clients"], Value(way.clients));
    EXPECT_EQ(doc["in_flight"], Value(way.in_flight));
    EXPECT_GT(doc["store_batches"].as_double(), 0);
    EXPECT_EQ(doc["contexts_kept"], Value(0.0)) << "finished contexts leave memory for the store";
    // Every incident and every context is in the store, and nothing is left to start.
    const Value held = inspect(data);
    EXPECT_EQ(held["records"]["incident"], Value(2000)) << held["records"].to_json();
    EXPECT_EQ(held["counters"]["contexts"], Value(2000)) << held["counters"].to_json();
    ASSERT_EQ(held["contexts"].size(), 2000u);
    size_t completed = 0;
    for (const Value& c : held["contexts"].items()) completed += c["status"] == Value("completed");
    EXPECT_EQ(completed, 2000u);
    EXPECT_EQ(held["queued"].size(), 0u);
    EXPECT_EQ(held["locks"].size(), 0u);
    // A benchmark starts from an empty store: a used one is refused, and left as it was.
    Output again = run("bench --events 100 --store " + store() + " --data " + data);
    EXPECT_EQ(again.code, 2) << again.out;
    EXPECT_EQ(inspect(data)["records"]["incident"], Value(2000));
  }
}

TEST_P(BenchStoreTest, OptionsThatDoNotFitTheStore_AreBadUsage) {
  const std::string data = fresh_data("usage");
  for (const std::string bad : {"--in-flight 0", "--in-flight many", "--in-flight 70000", "--in-flight 4 --in-flight 5"}) {
    Output out = run("bench --events 100 --store " + store() + " --data " + data + " " + bad);
    EXPECT_EQ(out.code, 2) << bad << "\n" << out.out;
  }
  Output memory = run("bench --events 100 --in-flight 8");
  EXPECT_EQ(memory.code, 2) << memory.out;
  EXPECT_NE(memory.out.find("--in-flight goes with --store sqlite or postgresql"), std::string::npos) << memory.out;
  EXPECT_EQ(run("bench --events 100 --store " + store()).code, 2) << "a durable store needs --data";
  EXPECT_EQ(run("bench --events 100 --store memory --data " + data).code, 2) << "--data goes with a durable store";
}

// A store given by --data that does not open is the user's error: exit 1 with the store's
// message naming it (no password), never "internal error" (exit 70, until 2026-12-07),
// whichever workload; the recovery workload without a SQLite file is bad usage. No
// server is needed: nothing listens on port 1.
TEST_F(CliTest, Bench_AStoreThatDoesNotOpen_IsTheUsersError_NamingIt) {
  const std::string missing = (dir_ / "no_such_directory" / "bench.db").string();
  for (const char* workload : {"triage", "fanout", "events", "locks", "recovery"}) {
    Output out = run(std::string("bench --events 10 --workload ") + workload + " --store sqlite --data " + missing);
    EXPECT_EQ(out.code, 1) << workload << "\n" << out.out;
    EXPECT_NE(out.out.find("flowrt bench: " + missing + ": cannot open for writing"), std::string::npos)
        << workload << "\n" << out.out;
    EXPECT_EQ(out.out.find("internal error"), std::string::npos) << workload << "\n" << out.out;
  }
  Output refused = run("bench --events 10 --store postgresql --data 'postgresql://app:s3cret@127.0.0.1:1/appdb'");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("flowrt bench: postgresql database 127.0.0.1:1/appdb: cannot connect"), std::string::npos)
      << refused.out;
  Output garbled = run("bench --events 10 --store postgresql --data 'postgresql://app:s3cret@[::1'");
  EXPECT_EQ(garbled.code, 1) << garbled.out;
  EXPECT_NE(garbled.out.find("not a connection URL"), std::string::npos) << garbled.out;
  for (const Output& out : {refused, garbled}) EXPECT_EQ(out.out.find("s3cret"), std::string::npos) << out.out;
  Output memory = run("bench --events 10 --workload recovery");
  EXPECT_EQ(memory.code, 2) << memory.out;
  EXPECT_NE(memory.out.find("--workload recovery needs --store sqlite --data NEWFILE"), std::string::npos) << memory.out;
}

}  // namespace
}  // namespace flowrt
