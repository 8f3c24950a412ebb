// Projects (runtime/project.h): a directory read and opened as `flowrt run DIR` does it, and
// every way it can be wrong, each reported at once with file and JSON pointer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "plans/time.h"
#include "runtime/harness.h"
#include "runtime/project.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr const char* kFlow = R"({"id": "greet", "trigger": {"type": "record", "table": "guest", "when": "created"},
  "actions": [{"action": "log", "inputs": {"message": "hello {{trigger.record.name}}"}}]})";

class ProjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(test_support::temp_path("flowrt-project-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flows");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  std::string Dir() const { return dir_.string(); }
  std::string Path(const std::string& rel) const { return (dir_ / rel).string(); }

  fs::path dir_;
};

TEST_F(ProjectTest, Files_FlowsAlways_ConfigAndEventsWhenPresent) {
  Result<ProjectFiles> bare = project_files(Dir());
  ASSERT_TRUE(bare.is_ok()) << bare.message();
  EXPECT_EQ(bare->flows, Path("flows"));
  EXPECT_EQ(bare->config, "");
  EXPECT_EQ(bare->events, "");

  Write("config.json", "{}");
  Write("events.jsonl", "");
  Result<ProjectFiles> full = project_files(Dir());
  ASSERT_TRUE(full.is_ok()) << full.message();
  EXPECT_EQ(full->config, Path("config.json"));
  EXPECT_EQ(full->events, Path("events.jsonl"));
}

TEST_F(ProjectTest, Files_NotADirectory_IsAnError) {
  Write("config.json", "{}");
  Result<ProjectFiles> file = project_files(Path("config.json"));
  ASSERT_FALSE(file.is_ok());
  EXPECT_THAT(file.message(), HasSubstr("is not a directory"));
  EXPECT_FALSE(project_files(Path("nowhere")).is_ok());
  Result<Project, Diagnostics> read = read_project(Path("nowhere"));
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.error().describe(), Path("nowhere") + ": /: not a directory");
}

TEST_F(ProjectTest, Read_NoConfig_GivesTheDefaultsOnAVirtualClock) {
  Result<Project, Diagnostics> p = read_project(Dir());
  ASSERT_TRUE(p.is_ok()) << p.error().describe();
  EXPECT_TRUE(p->options.virtual_clock);
  EXPECT_EQ(p->options.start_time, kDefaultVirtualStart);
  EXPECT_EQ(p->options.properties.max_actions, EngineProperties{}.max_actions);
  EXPECT_TRUE(p->options.lock_limits.empty());
}

TEST_F(ProjectTest, Read_Config_PropertiesLockLimitsAndStartTime) {
  Write("config.json", R"({"properties": {"max_actions": 7, "worker_threads": 1, "max_run_time": "5m"},
                            "locks": {"db-pool": {"limit": 12}}, "start_time": "2026-06-01T08:00:00Z"})");
  Result<Project, Diagnostics> p = read_project(Dir());
  ASSERT_TRUE(p.is_ok()) << p.error().describe();
  EXPECT_EQ(p->options.properties.max_actions, 7u);
  EXPECT_EQ(p->options.properties.worker_threads, 1u);
  EXPECT_EQ(p->options.properties.max_run_time, 5 * 60 * 1000);
  EXPECT_EQ(p->options.lock_limits.at("db-pool"), 12);
  EXPECT_EQ(format_time(p->options.start_time), "2026-06-01T08:00:00.000Z");
}

TEST_F(ProjectTest, Read_BadConfig_EveryProblemAtOnce_WithItsPointer) {
  Write("config.json", R"({"properties": {"max_actions": "many", "no_such": 1}, "locks": {"a": {"limit": 0}},
                            "start_time": "2026-02-30T00:00:00Z", "extra": true})");
  Result<Project, Diagnostics> p = read_project(Dir());
  ASSERT_FALSE(p.is_ok());
  const std::string all = p.error().describe();
  const std::string config = Path("config.json");
  EXPECT_EQ(p.error().size(), 5u) << all;
  EXPECT_THAT(all, HasSubstr(config + ": /extra: unknown config key"));
  EXPECT_THAT(all, HasSubstr(config + ": /properties/max_actions: property max_actions must be an integer"));
  EXPECT_THAT(all, HasSubstr(config + ": /properties/no_such: "));
  EXPECT_THAT(all, HasSubstr(config + ": /locks/a: a lock needs {\"limit\": N} with N >= 1"));
  EXPECT_THAT(all, HasSubstr(config + ": /start_time: \"2026-02-30T00:00:00Z\" is not a real date"));
}

// "$schema" (the JSON Schema editors check config.json with) is allowed and ignored, but
// must be a string; a lock key other than "limit" is an error beside the others.
TEST_F(ProjectTest, Read_Config_SchemaAllowed_LockKeysChecked) {
  Write("config.json", R"({"$schema": "../schemas/config.schema.json", "locks": {"db": {"limit": 2}}})");
  Result<Project, Diagnostics> ok = read_project(Dir());
  ASSERT_TRUE(ok.is_ok()) << ok.error().describe();
  EXPECT_EQ(ok->options.lock_limits.at("db"), 2);

  Write("config.json", R"({"$schema": 1, "locks": {"db": {"limit": 2, "limt": 3}, "io": {"limt": 3}}})");
  Result<Project, Diagnostics> bad = read_project(Dir());
  ASSERT_FALSE(bad.is_ok());
  const std::string all = bad.error().describe();
  const std::string config = Path("config.json");
  EXPECT_EQ(bad.error().size(), 4u) << all;
  EXPECT_THAT(all, HasSubstr(config + ": /$schema: must be a string"));
  EXPECT_THAT(all, HasSubstr(config + ": /locks/db/limt: unknown lock property (expected limit)"));
  EXPECT_THAT(all, HasSubstr(config + ": /locks/io/limt: unknown lock property (expected limit)"));
  EXPECT_THAT(all, HasSubstr(config + ": /locks/io: a lock needs {\"limit\": N} with N >= 1"));
}

TEST_F(ProjectTest, Read_ConfigNotJson_NamesLineAndColumn) {
  Write("config.json", "{\n  \"properties\": {,}\n}");
  Result<Project, Diagnostics> p = read_project(Dir());
  ASSERT_FALSE(p.is_ok());
  EXPECT_THAT(p.error().describe(), HasSubstr(Path("config.json") + ": /properties: line 2, column"));
}

TEST_F(ProjectTest, Read_ConfigNamedButMissing_IsAnError) {
  ProjectFiles files;
  files.flows = Path("flows");
  files.config = Path("missing.json");
  Result<Project, Diagnostics> p = read_project(files);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.error().describe(), Path("missing.json") + ": /: no such file");
}

TEST_F(ProjectTest, Open_LoadsAndActivatesTheFlows_OnTheConfiguredClock) {
  Write("flows/greet.json", kFlow);
  Write("config.json", R"({"start_time": "2026-06-01T08:00:00Z", "properties": {"worker_threads": 1}})");
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(Dir());
  ASSERT_TRUE(opened.is_ok()) << opened.error().describe();
  Engine& engine = **opened;
  EXPECT_EQ(format_time(engine.now()), "2026-06-01T08:00:00.000Z");
  EXPECT_EQ(engine.properties().worker_threads, 1u);
  ASSERT_TRUE(engine.insert("guest", Value::object({{"name", "ada"}})).is_ok());
  engine.settle();
  std::vector<ContextRecord> cs = engine.contexts("greet");
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].status(), "completed");
  EXPECT_EQ(cs[0].log_messages(), std::vector<std::string>{"hello ada"});
}

TEST_F(ProjectTest, Open_LockLimitsFromTheConfig_Apply) {
  Write("flows/pool.json", R"({"id": "pool", "trigger": {"type": "api"}, "actions": [
    {"id": "l", "action": "lock", "inputs": {"key": "db-pool", "weight": 2}},
    {"action": "wait", "inputs": {"duration": "1m"}}]})");
  Write("config.json", R"({"locks": {"db-pool": {"limit": 4}}})");
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(Dir());
  ASSERT_TRUE(opened.is_ok()) << opened.error().describe();
  Engine& engine = **opened;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(engine.call_flow("pool").is_ok());
  engine.settle(1000);  // both hold 2 of 4 at once, then wait
  EXPECT_EQ(engine.locks().at(0)["held"], Value(4));
  engine.settle();
  for (const ContextRecord& c : engine.contexts("pool")) EXPECT_EQ(c.status(), "completed") << c.error_message();
}

TEST_F(ProjectTest, Open_BadDefinitions_EveryErrorAndNoEngine) {
  Write("flows/a.json", R"({"id": "a", "trigger": {"type": "api"}, "actions": [{"action": "nope"}]})");
  Write("flows/b.json", R"({"id": "b", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": "{{x.y}}"}}]})");
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(Dir());
  ASSERT_FALSE(opened.is_ok());
  const std::string all = opened.error().describe();
  EXPECT_THAT(all, HasSubstr("a.json: /actions/0/action: unknown action 'nope'"));
  EXPECT_THAT(all, HasSubstr("b.json: /actions/0/inputs/message"));
}

TEST_F(ProjectTest, Open_NoFlowsDirectory_SaysSo) {
  fs::remove_all(dir_ / "flows");
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(Dir());
  ASSERT_FALSE(opened.is_ok());
  EXPECT_EQ(opened.error().describe(), Path("flows") + ": /: no such file or directory");
}

TEST_F(ProjectTest, Open_BadConfig_BuildsNoEngine) {
  Write("flows/greet.json", kFlow);
  Write("config.json", R"({"properties": {"max_actions": -1}})");
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(Dir());
  ASSERT_FALSE(opened.is_ok());
  EXPECT_THAT(opened.error().describe(), HasSubstr("/properties/max_actions"));
}

// A Project's options may be changed before it is opened (here, another start time).
TEST_F(ProjectTest, Open_ReadProjectThenChangeOptions) {
  Write("flows/greet.json", kFlow);
  Result<Project, Diagnostics> p = read_project(Dir());
  ASSERT_TRUE(p.is_ok()) << p.error().describe();
  p->options.start_time = kDefaultVirtualStart + 3600000;
  Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(*p);
  ASSERT_TRUE(opened.is_ok()) << opened.error().describe();
  EXPECT_EQ(format_time((*opened)->now()), "2026-01-01T01:00:00.000Z");
}

}  // namespace
}  // namespace flowrt
