// flowrt::testing: a GoogleTest fixture and matchers for testing flows.
//
// FlowTest gives each test a fresh Engine on a virtual clock (starting 2026-01-01T00:00:00Z)
// with two workers, and short helpers for what tests do most: load definitions (or a whole
// project directory, as `flowrt run` opens it), write records, fire events, settle, and
// read contexts. Matchers read context records; a failed one prints the record as JSON
// (with `using flowrt::Value; using ::testing::ElementsAre;` and `using namespace
// flowrt::testing;`, as examples/embedding/expense_test.cpp has):
//
//   ASSERT_TRUE(LoadProject(MY_PROJECT_DIR));   // or Load(R"({"id": "greet", ...})")
//   Insert("customer", Value::object({{"tier", "gold"}}));
//   Settle();
//   EXPECT_THAT(Contexts("greet"), ElementsAre(HasStatus("completed")));
//   EXPECT_THAT(OnlyContext("greet"), HasLog("greeted ada"));
//
// Installed as <flowrt/testing/flow_test.h>; link flowrt::testing (GoogleTest and GoogleMock
// come with it).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowrt/engine.h"
#include "flowrt/plans/value_json.h"

namespace flowrt::testing {

// One fresh engine per test, destroyed after it. Helpers that act fail the test on an
// error (naming it) rather than returning one; engine() gives the whole API for the rest.
class FlowTest : public ::testing::Test {
 protected:
  // Override to change the engine before it is built (clock, workers, properties).
  virtual EngineOptions Options() const {
    EngineOptions o;
    o.virtual_clock = true;
    o.properties.worker_threads = 2;
    return o;
  }
  void SetUp() override {
    const EngineOptions o = Options();
    // The engine would bring it into range; a test that asks for another time is wrong.
    const Status start = check_time(o.start_time);
    ASSERT_TRUE(start.is_ok()) << "Options().start_time: " << start.message();
    engine_ = std::make_unique<Engine>(o);
  }
  void TearDown() override { engine_.reset(); }

  Engine& engine() { return *engine_; }

  // Loads definitions from JSON text (one object or an array). Fails with every diagnostic.
  ::testing::AssertionResult Load(std::string_view json) {
    Diagnostics d = engine_->load_text(json, "test.json");
    if (d.empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << d.describe();
  }
  // Replaces the engine with project directory `dir` opened exactly as `flowrt run DIR`
  // opens it (runtime/project.h): its config.json's properties, lock limits and
  // start_time, and every definition under flows/. Options() does not apply. Nothing of
  // its events file is applied (RunEvents does that). Fails with every problem found.
  ::testing::AssertionResult LoadProject(const std::string& dir) {
    Result<Project, Diagnostics> project = read_project(dir);
    if (!project) return ::testing::AssertionFailure() << project.error().describe();
    Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(*project);
    if (!opened) return ::testing::AssertionFailure() << opened.error().describe();
    engine_ = std::move(*opened);
    project_ = std::move(*project);
    return ::testing::AssertionSuccess();
  }
  // The project LoadProject opened (its files and options); empty before.
  const Project& project() const { return project_; }
  // Applies an events file (SPEC section 11) as `flowrt run` does, ending with its implicit
  // settle. Fails with the bad line's "FILE:LINE: message"; nothing after it is applied.
  ::testing::AssertionResult RunEvents(const std::string& path) {
    Status s = Harness(*engine_).run_file(path);
    if (s) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << s.message();
  }
  // Parses JSON text into a Value (test input written as JSON).
  static Value Json(std::string_view text) {
    Result<Value> v = parse_json(text);
    EXPECT_TRUE(v.is_ok()) << v.message();
    return v ? *v : Value();
  }
  // Inserts a record and returns it (with its sys_id). Fails the test on error.
  Value Insert(std::string_view table, const Value& values) {
    Result<Value> r = engine_->insert(table, values);
    EXPECT_TRUE(r.is_ok()) << r.message();
    return r ? *r : Value();
  }
  Value Update(std::string_view table, std::string_view sys_id, const Value& values) {
    Result<Value> r = engine_->update(table, sys_id, values);
    EXPECT_TRUE(r.is_ok()) << r.message();
    return r ? *r : Value();
  }
  void FireEvent(std::string_view name, const Value& payload = Value()) {
    Status s = engine_->fire_event(name, payload);
    EXPECT_TRUE(s.is_ok()) << s.message();
  }
  std::string CallFlow(std::string_view flow, const Value& inputs = Value::empty_object()) {
    Result<std::string> id = engine_->call_flow(flow, inputs);
    EXPECT_TRUE(id.is_ok()) << id.message();
    return id ? *id : std::string();
  }
  // Waits until no context can run, moving the clock to each timer a context waits on, up
  // to 24h from now: a timeout or lock give-up within a day fires (SPEC section 11).
  void Settle() { engine_->settle(); }
  // The same up to `until` from now ("30m", "2d"): a timer later than that has not fired
  // when it returns, so a test can look at contexts still waiting. A duration that does
  // not parse fails the test.
  void Settle(std::string_view until) {
    Result<DurationMs> d = parse_duration(until);
    ASSERT_TRUE(d.is_ok()) << "Settle(\"" << until << "\"): " << d.message();
    engine_->settle(*d);
  }
  // Advances the clock; an advance that fails (a duration too large, the schedule budget
  // passed) fails the test with its error. Call engine().advance to expect an error.
  void Advance(std::string_view duration) {
    Result<DurationMs> d = parse_duration(duration);
    ASSERT_TRUE(d.is_ok()) << d.message();
    Status s = engine_->advance(*d);
    EXPECT_TRUE(s.is_ok()) << "advance " << duration << ": " << s.message();
  }

  std::vector<ContextRecord> Contexts(std::string_view flow = {}) const { return engine_->contexts(flow); }
  // The one context of `flow`; fails the test when there is not exactly one.
  ContextRecord OnlyContext(std::string_view flow) const {
    std::vector<ContextRecord> all = engine_->contexts(flow);
    EXPECT_EQ(all.size(), 1u) << "contexts of flow " << flow;
    return all.empty() ? ContextRecord(Value()) : all.front();
  }
  ContextRecord ContextById(std::string_view id) const {
    std::optional<ContextRecord> c = engine_->context(id);
    EXPECT_TRUE(c.has_value()) << "no context " << id;
    return c ? *c : ContextRecord(Value());
  }
  std::vector<Value> Records(std::string_view table) const { return engine_->records(table); }
  std::vector<Value> Skipped() const { return engine_->skipped(); }
  // An ISO time on the engine clock (for Options().start_time, comparisons with now()).
  // A text that is not a real time within 1970-01-01 to 9999-12-31 fails the test, naming
  // it, and gives -1.
  static TimeMs At(std::string_view iso_time) {
    Result<TimeMs> t = parse_time(iso_time);
    EXPECT_TRUE(t.is_ok()) << t.message();
    return t ? *t : -1;
  }
  // Milliseconds of an ISO time after 2026-01-01T00:00:00Z; a value that is not a time
  // (as At) fails the test and gives -1.
  static int64_t Ms(const Value& iso_time) {
    if (!iso_time.is_string()) {
      ADD_FAILURE() << iso_time.to_json() << " is not a time";
      return -1;
    }
    const TimeMs t = At(iso_time.as_string());
    return t < 0 ? -1 : t - kDefaultVirtualStart;
  }

 private:
  std::unique_ptr<Engine> engine_;
  Project project_;
};

// A context whose status is `status` (in_progress, waiting, completed, cancelled, error).
MATCHER_P(HasStatus, status, "has status " + std::string(status)) {
  *result_listener << "whose status is " << arg.status();
  if (arg.status() == "error") *result_listener << " (" << arg.error_message() << ")";
  return arg.status() == status;
}

// A context with a log line whose message is exactly `message`.
MATCHER_P(HasLog, message, "has a log line \"" + std::string(message) + "\"") {
  for (const std::string& m : arg.log_messages()) {
    if (m == message) return true;
  }
  *result_listener << "whose logs are " << arg.logs().to_json();
  return false;
}

// A context that ended in error with a message containing `text`.
MATCHER_P(FailedWith, text, "failed with a message containing \"" + std::string(text) + "\"") {
  *result_listener << "whose status is " << arg.status() << " and error " << arg.error().to_json();
  return arg.status() == "error" && arg.error_message().find(text) != std::string::npos;
}

// A context with a step `id` whose status is `status` (a context without such a step never
// matches, whatever `status` is).
MATCHER_P2(HasStep, id, status, "has step '" + std::string(id) + "' " + std::string(status)) {
  const Value& step = arg.step(id);
  if (!step.is_object()) {
    *result_listener << "which has no step '" << std::string(id) << "'";
    return false;
  }
  *result_listener << "whose step is " << step.to_json();
  return step["status"].is_string() && step["status"].as_string() == std::string_view(status);
}

}  // namespace flowrt::testing
