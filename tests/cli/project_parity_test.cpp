// A project opened by the library (open_project, then its events file through Harness)
// gives what `flowrt run DIR` gives, for every example: the same contexts (flow, status,
// plan version, logs), the same skipped starts and the same tables. The command line
// opens projects with the same call, and this keeps it so.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "plans/value_json.h"
#include "tests/support/run_command.h"
#include "runtime/harness.h"
#include "runtime/project.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

// What must agree between two runs of a project: everything but timings, sys_ids, and the
// order in which contexts that race (several workers) were numbered.
Value Summary(const Value& doc) {
  std::vector<Value> contexts;
  for (const Value& c : doc["contexts"].items()) {
    std::vector<Value> logs;
    for (const Value& l : c["logs"].items()) logs.push_back(l["message"]);
    contexts.push_back(Value::object({{"flow", c["flow"]},
                                      {"status", c["status"]},
                                      {"plan_version", c["plan_version"]},
                                      {"started_at", c["started_at"]},
                                      {"ended_at", c["ended_at"]},
                                      {"logs", Value::array(std::move(logs))}}));
  }
  auto by_json = [](const Value& a, const Value& b) { return a.to_json() < b.to_json(); };
  std::sort(contexts.begin(), contexts.end(), by_json);
  std::vector<Value> skipped;
  for (const Value& s : doc["skipped"].items()) skipped.push_back(Value::object({{"flow", s["flow"]}, {"reason", s["reason"]}}));
  std::sort(skipped.begin(), skipped.end(), by_json);
  std::vector<Member> tables;
  for (const auto& t : doc["records"].members()) tables.push_back(Member{t.key, Value(static_cast<long long>(t.value.size()))});
  return Value::object({{"contexts", Value::array(std::move(contexts))},
                        {"skipped", Value::array(std::move(skipped))},
                        {"tables", Value::object(std::move(tables))},
                        {"errors", doc["errors"]}});
}

Value ByTheCommandLine(const std::string& dir) {
  const std::string cmd = std::string(FLOWRT_BINARY) + " run " + dir + " --format json";
  const auto [code, out] = test_support::run_command(cmd);
  EXPECT_EQ(code, 0) << cmd;
  Result<Value> doc = parse_json(out);
  EXPECT_TRUE(doc.is_ok()) << doc.message() << "\n" << out;
  return doc ? *doc : Value();
}

Value ByTheLibrary(const std::string& dir) {
  Result<Project, Diagnostics> project = read_project(dir);
  EXPECT_TRUE(project.is_ok()) << project.error().describe();
  if (!project) return Value();
  Result<std::unique_ptr<Engine>, Diagnostics> engine = open_project(*project);
  EXPECT_TRUE(engine.is_ok()) << engine.error().describe();
  if (!engine) return Value();
  Status ran = Harness(**engine).run_file(project->files.events);
  EXPECT_TRUE(ran.is_ok()) << ran.message();
  return (*engine)->document();
}

class ProjectParityTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ProjectParityTest, LibraryAndCommandLine_GiveTheSameRun) {
  const std::string dir = std::string(FLOWRT_SOURCE_DIR) + "/examples/" + GetParam();
  const Value cli = Summary(ByTheCommandLine(dir));
  const Value lib = Summary(ByTheLibrary(dir));
  EXPECT_FALSE(cli["contexts"].items().empty());
  EXPECT_EQ(lib, cli);
}

// `v` with every "runtime_ms" (a measured time) set to 0.
Value WithoutRunTimes(const Value& v) {
  if (v.is_array()) {
    std::vector<Value> items;
    for (const Value& i : v.items()) items.push_back(WithoutRunTimes(i));
    return Value::array(std::move(items));
  }
  if (!v.is_object()) return v;
  std::vector<Member> members;
  for (const auto& m : v.members()) {
    members.push_back(Member{m.key, m.key.as_string() == "runtime_ms" ? Value(0) : WithoutRunTimes(m.value)});
  }
  return Value::object(std::move(members));
}

// With worker_threads 1 a project is a golden file: twenty runs of every example, its
// config set to one worker, print the same JSON byte for byte but for runtime_ms (sys_ids
// included: they are numbered in commit order).
TEST_P(ProjectParityTest, WithOneWorker_TwentyRunsPrintTheSameDocument) {
  const std::filesystem::path source = std::filesystem::path(FLOWRT_SOURCE_DIR) / "examples" / GetParam();
  const std::filesystem::path dir = std::filesystem::path(test_support::temp_path(std::string("one-worker-") + GetParam()));
  std::filesystem::remove_all(dir);
  std::filesystem::copy(source, dir, std::filesystem::copy_options::recursive);
  Value config = Value::empty_object();
  if (std::ifstream in(dir / "config.json"); in) {
    std::stringstream text;
    text << in.rdbuf();
    Result<Value> parsed = parse_json(text.str());
    ASSERT_TRUE(parsed.is_ok()) << parsed.message();
    config = *parsed;
  }
  const Value props = config["properties"].is_object() ? config["properties"] : Value::empty_object();
  config = config.with("properties", props.with("worker_threads", Value(1)));
  std::ofstream(dir / "config.json") << config.to_json();

  std::string first;
  for (int run = 0; run < 20; ++run) {
    const std::string doc = WithoutRunTimes(ByTheCommandLine(dir.string())).to_json();
    if (run == 0) {
      first = doc;
      EXPECT_NE(doc.find("\"sys_id\""), std::string::npos) << "the example writes records";
      continue;
    }
    ASSERT_EQ(doc, first) << "run " << run + 1 << " of " << GetParam() << " differs";
  }
  std::filesystem::remove_all(dir);
}

// What `flowrt validate DIR` says and what `flowrt run DIR` says before it runs anything:
// the exit code and the set of error lines (validate prints them on stdout, run on stderr).
struct Verdict {
  int code;
  std::set<std::string> lines;
};

Verdict Command(const std::string& args, bool stderr_only) {
  const auto [code, out] = test_support::run_command(std::string(FLOWRT_BINARY) + " " + args +
                                                      (stderr_only ? " 2>&1 >/dev/null" : " 2>/dev/null"));
  Verdict v{code, {}};
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    // validate's closing count ("N errors", "N definitions, no errors") is its own.
    if (line.find(": ") == std::string::npos || line.find(", no errors") != std::string::npos) continue;
    v.lines.insert(line);
  }
  return v;
}

TEST_P(ProjectParityTest, ValidateAndRun_Agree) {
  const std::string dir = std::string(FLOWRT_SOURCE_DIR) + "/examples/" + GetParam();
  const Verdict validate = Command("validate " + dir, false);
  EXPECT_EQ(validate.code, 0);
  EXPECT_TRUE(validate.lines.empty());
}

std::vector<std::string> CompilerCases() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(FLOWRT_SOURCE_DIR) + "/tests/compiler/cases")) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every compiler case, written as a project (its definitions in flows/, its config as
// config.json): validate and run report the same errors and exit the same way.
class CompilerCaseParityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CompilerCaseParityTest, ValidateAndRun_Agree) {
  std::ifstream in(std::string(FLOWRT_SOURCE_DIR) + "/tests/compiler/cases/" + GetParam());
  std::stringstream text;
  text << in.rdbuf();
  Result<Value> c = parse_json(text.str());
  ASSERT_TRUE(c.is_ok()) << c.message();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("flowrt-parity-" + std::to_string(getpid()) + "-" + GetParam());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "flows");
  std::ofstream(dir / "flows" / "case.json")
      << ((*c)["text"].is_string() ? std::string((*c)["text"].as_string()) : (*c)["definitions"].to_json());
  if (const Value* config = c->find("config")) std::ofstream(dir / "config.json") << config->to_json();
  std::ofstream(dir / "events.jsonl") << "";
  const Verdict validate = Command("validate " + dir.string(), false);
  const Verdict run = Command("run " + dir.string(), true);
  EXPECT_EQ(validate.code, (*c)["errors"].size() == 0 ? 0 : 1);
  EXPECT_EQ(validate.code, run.code);
  EXPECT_EQ(validate.lines, run.lines);
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Cases, CompilerCaseParityTest, ::testing::ValuesIn(CompilerCases()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param.substr(0, p.param.size() - 5);
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

INSTANTIATE_TEST_SUITE_P(Examples, ProjectParityTest,
                         ::testing::Values("incident-triage", "subflows", "schedules", "wait-for-approval", "embedding"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name;
                           for (const char* p = param.param; *p; ++p) name += (*p == '-') ? '_' : *p;
                           return name;
                         });

}  // namespace
}  // namespace flowrt
