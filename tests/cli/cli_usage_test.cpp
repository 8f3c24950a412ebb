// The flowrt command's bench, usage, help, version and option handling, run as a user
// runs it: exit codes and output shapes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "plans/value_json.h"
#include "tests/cli/cli_fixture.h"

namespace flowrt {
namespace {

using namespace flowrt::cli_testing;
using namespace flowrt::test_support;
namespace fs = std::filesystem;

TEST_F(CliTest, Bench_JsonReportsEveryFigure) {
  for (const char* workload : {"triage", "fanout", "events", "locks"}) {
    const Value doc = BenchJson(std::string("--workload ") + workload + " --events 2000 --json");
    ASSERT_TRUE(doc.is_object()) << workload;
    EXPECT_EQ(doc["workload"], Value(workload));
    EXPECT_EQ(doc["events"], Value(2000));
    EXPECT_EQ(doc["contexts"], Value(2000)) << "every event starts one context, and each is kept";
    for (const char* key : {"seconds", "contexts_per_s", "peak_rss_bytes", "bytes_per_context", "cpu_us_per_context",
                            "steady_rss_growth_bytes_per_context", "steady_minor_faults_per_context"}) {
      EXPECT_TRUE(doc[key].is_number()) << workload << " " << key;
    }
    for (const char* p : {"p50", "p99", "p999"}) EXPECT_GT(doc["latency_us"][p].as_double(), 0) << p;
    // The wait to be taken by a thread is part of each context's latency: never above it.
    ASSERT_TRUE(doc["wait_p50_us"].is_number() && doc["wait_p99_us"].is_number()) << workload;
    EXPECT_GE(doc["wait_p50_us"].as_double(), 0) << workload;
    EXPECT_LE(doc["wait_p50_us"].as_double(), doc["latency_us"]["p50"].as_double()) << workload;
    EXPECT_LE(doc["wait_p99_us"].as_double(), doc["latency_us"]["p99"].as_double()) << workload;
    // The memory store keeps finished contexts frozen: the run says how large the records are.
    EXPECT_GT(doc["frozen_record_bytes"].as_double(), 0) << workload;
    if (std::string_view(workload) == "locks") {
      EXPECT_EQ(doc["contended_handoffs"], Value(2000.0)) << "every job of the gated phase waited its turn";
      EXPECT_GT(doc["contended_handoffs_per_s"].as_double(), 0);
      // CPU time is counted in the kernel's ticks: a short phase may show none.
      ASSERT_TRUE(doc["contended_cpu_us_per_handoff"].is_number());
      EXPECT_GE(doc["contended_cpu_us_per_handoff"].as_double(), 0);
    }
  }
  // With a retention limit every context still counts, but only that many are kept.
  const Value kept = BenchJson("--workload events --events 3000 --retention 100 --json");
  EXPECT_EQ(kept["contexts"], Value(3000));
  EXPECT_EQ(kept["contexts_kept"], Value(100.0));
  // A closed loop: the producer waits while max_queued contexts wait to start, so the
  // backlog it samples (every 16 operations) never passes the limit by more than those 16.
  const Value closed = BenchJson("--workload events --events 3000 --max-queued 50 --json");
  EXPECT_EQ(closed["contexts"], Value(3000));
  EXPECT_EQ(closed["max_queued"], Value(50.0));
  ASSERT_TRUE(closed["peak_queued_sampled"].is_number());
  EXPECT_LE(closed["peak_queued_sampled"].as_double(), 50.0 + 16.0);
  const Value compile = BenchJson("--workload compile --events 100 --json=true");
  EXPECT_GT(compile["compiles"].as_double(), 0);
  EXPECT_GT(compile["cache_hit_ns"].as_double(), 0);
}

TEST_F(CliTest, Bench_TableByDefault_BadOptionsExit2) {
  Output table = run("bench --events 1000");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_NE(table.out.find("contexts/s"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("latency p99"), std::string::npos) << table.out;
  EXPECT_EQ(run("bench --workload nonesuch").code, 2);
  EXPECT_EQ(run("bench --events 0").code, 2);
  EXPECT_EQ(run("bench --events many").code, 2);
  EXPECT_EQ(run("bench --max-queued 0").code, 2);
  EXPECT_EQ(run("bench --json=maybe").code, 2);
  EXPECT_EQ(run("bench extra").code, 2);
  EXPECT_EQ(run("bench --json --json").code, 2);
  EXPECT_EQ(run("bench --workers 2 --workers 3").code, 2);
  EXPECT_EQ(run("bench --producer-runs").code, 2) << "it goes with --rate";
  EXPECT_EQ(run("bench --rate 1000 --producer-runs --producer-runs").code, 2);
}

// A number out of an option's range is bad usage naming the range, never a run with a
// wrapped or cut value (a "-1" read as 2^64 - 1) nor an internal error.
TEST_F(CliTest, Bench_NumbersOutOfRange_AreBadUsage_NamingTheRange) {
  for (const char* args : {"--events 99999999999999999999", "--events 1000000001", "--rate -1", "--retention -5",
                           "--max-queued 18446744073709551616", "--workers 4294967297", "--workers 257",
                           "--events +5", "--events 1e6", "--clients 0"}) {
    Output o = run(std::string("bench ") + args);
    EXPECT_EQ(o.code, 2) << args << ": " << o.out;
    EXPECT_NE(o.out.find("must be an integer from 1 to "), std::string::npos) << args << ": " << o.out;
  }
}

TEST_F(CliTest, Bench_ProducerRuns_SaysHowManyContextsTheProducerRan) {
  Output paced = run("bench --events 2000 --rate 200000 --producer-runs --json");
  ASSERT_EQ(paced.code, 0) << paced.out;
  Result<Value> doc = parse_json(paced.out);
  ASSERT_TRUE(doc.is_ok()) << paced.out;
  EXPECT_TRUE((*doc)["producer_ran_contexts"].is_number()) << paced.out;
  EXPECT_LE((*doc)["producer_ran_contexts"].as_double(), (*doc)["contexts"].as_double());
  Output unpaced = run("bench --events 2000 --rate 200000 --json");
  ASSERT_EQ(unpaced.code, 0) << unpaced.out;
  EXPECT_EQ(unpaced.out.find("producer_ran_contexts"), std::string::npos) << "only when asked";
}

TEST_F(CliTest, BadUsage_Exit2) {
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("run").code, 2);
  EXPECT_EQ(run("run " + dir() + " --format xml").code, 2);
  EXPECT_EQ(run("run " + dir() + " --bogus 1").code, 2);
  EXPECT_EQ(run("plan " + dir()).code, 2);
  EXPECT_EQ(run("validate").code, 2);
  // An unknown option is bad usage whatever its shape, and so is an option given twice or
  // one without its value.
  EXPECT_EQ(run("run " + dir() + " --bogus").code, 2);
  EXPECT_EQ(run("run " + dir() + " --bogus=1").code, 2);
  EXPECT_EQ(run("run " + dir() + " -x").code, 2);
  EXPECT_EQ(run("validate " + dir() + " --format json").code, 2);
  EXPECT_EQ(run("--bogus").code, 2);
  EXPECT_EQ(run("run " + dir() + " --format json --format table").code, 2);
  EXPECT_EQ(run("run " + dir() + " --out").code, 2);
  Output unknown = run("run " + dir() + " --bogus 1");
  EXPECT_NE(unknown.out.find("flowrt run: unknown option --bogus"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("usage:"), std::string::npos) << unknown.out;
}

// A --status that names no context status is bad usage, as the API's ?status= is a 400:
// "complete" for "completed" would otherwise list nothing and look like an answer (until
// 2026-12-07 it did, for run and inspect).
TEST_F(CliTest, AStatusThatIsNoContextStatus_IsBadUsage_NamingTheStatuses) {
  write("flows/f.json", R"({"id": "f", "trigger": {"type": "api"}, "actions": []})");
  write("events.jsonl", "{\"op\": \"call_flow\", \"flow\": \"f\"}\n");
  const std::string data = dir() + "/state.db";
  ASSERT_EQ(run("run " + dir() + " --data " + data).code, 0);
  const std::string says = "--status must be in_progress, waiting, completed, cancelled or error, not 'complete'";
  for (const std::string& command : {"run " + dir() + " --status complete", "inspect --data " + data + " --status complete"}) {
    Output bad = run(command);
    EXPECT_EQ(bad.code, 2) << command << "\n" << bad.out;
    EXPECT_NE(bad.out.find(says), std::string::npos) << command << "\n" << bad.out;
  }
  Output listed = run("inspect --data " + data + " --status completed");
  EXPECT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("1 context shown"), std::string::npos) << listed.out;
  Output ran = run("run " + dir() + " --status completed");
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_NE(ran.out.find("ctx-1"), std::string::npos) << ran.out;
}

TEST_F(CliTest, Help_TopLevelAndPerCommand_Exit0) {
  for (const char* args : {"--help", "-h", "help"}) {
    Output o = run(args);
    EXPECT_EQ(o.code, 0) << args << o.out;
    EXPECT_NE(o.out.find("flowrt run DIR"), std::string::npos) << args << o.out;
    EXPECT_NE(o.out.find("exit codes:"), std::string::npos) << args << o.out;
  }
  Output no_args = run("");
  EXPECT_EQ(no_args.code, 2);
  EXPECT_NE(no_args.out.find("usage:"), std::string::npos) << no_args.out;
  // Each command lists its own options, and only those.
  Output r = run("run --help");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* option : {"--flows", "--events", "-c,--config", "-f,--format", "-o,--out", "--log-level", "--flow",
                             "--status"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option << r.out;
  }
  EXPECT_EQ(r.out.find("--workload"), std::string::npos) << r.out;
  Output b = run("bench -h");
  EXPECT_EQ(b.code, 0) << b.out;
  for (const char* option : {"--workload", "--events", "--workers", "--rate", "--retention", "--json"}) {
    EXPECT_NE(b.out.find(option), std::string::npos) << option << b.out;
  }
  EXPECT_EQ(b.out.find("--format"), std::string::npos) << b.out;
  Output v = run("validate --help");
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("flowrt validate"), std::string::npos) << v.out;
  Output p = run("plan --help");
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("--flow"), std::string::npos) << p.out;
  // --help wins over what else is wrong: nothing runs.
  Output help_first = run("run /nonexistent --help");
  EXPECT_EQ(help_first.code, 0) << help_first.out;
}

TEST_F(CliTest, Version_PrintsTheProjectVersion) {
  Output o = run("--version", "");
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_EQ(o.out, std::string("flowrt ") + FLOWRT_VERSION + "\n");
}

TEST_F(CliTest, MistypedCommandOrOption_Exit2_SuggestsTheNearest) {
  Output command = run("rnu " + dir());
  EXPECT_EQ(command.code, 2) << command.out;
  EXPECT_NE(command.out.find("unknown command 'rnu' (did you mean 'run'?)"), std::string::npos) << command.out;
  Output validate = run("valdiate " + dir());
  EXPECT_EQ(validate.code, 2) << validate.out;
  EXPECT_NE(validate.out.find("(did you mean 'validate'?)"), std::string::npos) << validate.out;
  Output option = run("run " + dir() + " --fromat json");
  EXPECT_EQ(option.code, 2) << option.out;
  EXPECT_NE(option.out.find("unknown option --fromat (did you mean '--format'?)"), std::string::npos) << option.out;
  Output with_value = run("run " + dir() + " --stauts=waiting");
  EXPECT_EQ(with_value.code, 2) << with_value.out;
  EXPECT_NE(with_value.out.find("unknown option --stauts (did you mean '--status'?)"), std::string::npos)
      << with_value.out;
  Output bench = run("bench --worker 3");
  EXPECT_EQ(bench.code, 2) << bench.out;
  EXPECT_NE(bench.out.find("(did you mean '--workers'?)"), std::string::npos) << bench.out;
  Output version = run("--verison");
  EXPECT_EQ(version.code, 2) << version.out;
  EXPECT_NE(version.out.find("(did you mean '--version'?)"), std::string::npos) << version.out;
  // Nothing near: no suggestion, still exit 2.
  Output far = run("frobnicate");
  EXPECT_EQ(far.code, 2) << far.out;
  EXPECT_NE(far.out.find("unknown command 'frobnicate'"), std::string::npos) << far.out;
  EXPECT_EQ(far.out.find("did you mean"), std::string::npos) << far.out;
  Output short_option = run("run " + dir() + " -x");
  EXPECT_EQ(short_option.code, 2) << short_option.out;
  EXPECT_EQ(short_option.out.find("did you mean"), std::string::npos) << short_option.out;
}

TEST_F(CliTest, DoubleDash_EndsTheOptions) {
  write("flows/f.json", R"({"id": "f", "trigger": {"type": "api"}, "actions": []})");
  write("events.jsonl", "{\"op\": \"call_flow\", \"flow\": \"f\"}\n");
  Output r = run("run --format json -- " + dir());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(parse_json(r.out).is_ok()) << r.out;
  Output v = run("validate -- " + dir());
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("1 definition, no errors"), std::string::npos) << v.out;
  // After "--" a word that begins with '-' is a PATH, not an option (here one that does
  // not exist, in the test's working directory).
  Output dashed = run("validate " + dir() + "/flows/f.json -- -g.json");
  EXPECT_EQ(dashed.code, 1) << dashed.out;
  EXPECT_NE(dashed.out.find("-g.json: /: no such file or directory"), std::string::npos) << dashed.out;
  EXPECT_EQ(dashed.out.find("unknown option"), std::string::npos) << dashed.out;
  Output plan = run("plan --flow f -- " + dir() + "/flows");
  EXPECT_EQ(plan.code, 0) << plan.out;
}

TEST_F(CliTest, ShortOptions_MeanTheirLongNames) {
  write("flows/f.json", R"({"id": "f", "trigger": {"type": "api"}, "actions": []})");
  write("events.jsonl", "{\"op\": \"call_flow\", \"flow\": \"f\"}\n");
  Output r = run("run " + dir() + " -f json -o " + dir() + "/out.jsonl");
  ASSERT_EQ(r.code, 0) << r.out;
  Result<Value> doc = parse_json(r.out);
  ASSERT_TRUE(doc.is_ok()) << r.out;
  EXPECT_EQ((*doc)["contexts"].size(), 1u);
  std::ifstream lines(dir() + "/out.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ((*parse_json(line))["id"], Value("ctx-1"));
  // -c is --config: a config that is not JSON is read, and is bad config (exit 1).
  write("bad-config.json", "not json");
  const std::string flows_and_events = "run --flows " + dir() + "/flows --events " + dir() + "/events.jsonl";
  EXPECT_EQ(run(flows_and_events).code, 0);
  EXPECT_EQ(run(flows_and_events + " -c " + dir() + "/bad-config.json").code, 1);
  EXPECT_EQ(run(flows_and_events + " --config " + dir() + "/bad-config.json").code, 1);
  EXPECT_EQ(run("run " + dir() + " -f xml").code, 2);
  EXPECT_EQ(run("run " + dir() + " -f").code, 2);
}

}  // namespace
}  // namespace flowrt
