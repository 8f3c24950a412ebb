// A project opened by the library (open_project, then its events file through Harness)
// gives what `flowrt run DIR` gives, for every example: the same contexts (flow, status,
// plan version, logs), the same skipped starts and the same tables. The command line
// opens projects with the same call, and this keeps it so.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <sys/wait.h>

#include "plans/value_json.h"
#include "runtime/harness.h"
#include "runtime/project.h"

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
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 0) << cmd;
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

INSTANTIATE_TEST_SUITE_P(Examples, ProjectParityTest,
                         ::testing::Values("incident-triage", "subflows", "schedules", "wait-for-approval", "embedding"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name;
                           for (const char* p = param.param; *p; ++p) name += (*p == '-') ? '_' : *p;
                           return name;
                         });

}  // namespace
}  // namespace flowrt
