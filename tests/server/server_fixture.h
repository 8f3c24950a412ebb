// A `flowrt serve` for tests: a project written to a temporary directory (flows that cover
// records, events, API calls, locks and waits), served in this process on a free loopback
// port with its state in SQLite, and a client for it. Tests wait with Engine::settle (the
// engine's barrier) or with the API's own ?wait=, never with sleeps.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "runtime/engine.h"
#include "server/serve.h"
#include "tests/server/http_client.h"
#include "tests/support/test_support.h"

namespace flowrt::testing_http {

namespace fs = std::filesystem;

inline constexpr const char* kFlows[][2] = {
    {"on_incident.json", R"({"id": "on_incident", "trigger": {"type": "record", "table": "incident", "when": "created"},
      "actions": [{"id": "mark", "action": "update_record",
                   "inputs": {"table": "incident", "sys_id": "{{trigger.sys_id}}", "values": {"state": "seen"}}},
                  {"action": "log", "inputs": {"message": "seen {{trigger.record.number}}"}}]})"},
    {"greet.json", R"({"id": "greet", "trigger": {"type": "api"},
      "inputs": [{"name": "name", "type": "string", "required": true}],
      "actions": [{"action": "log", "inputs": {"message": "hello {{inputs.name}}"}}]})"},
    {"on_ping.json", R"({"id": "on_ping", "trigger": {"type": "event", "name": "ping"},
      "actions": [{"action": "log", "inputs": {"message": "pong {{trigger.payload.n}}"}}]})"},
    // Holds the lock "desk" until the gate record's open is true.
    {"hold_desk.json", R"({"id": "hold_desk", "trigger": {"type": "api"},
      "inputs": [{"name": "gate", "type": "string", "required": true}],
      "actions": [{"id": "take", "action": "lock", "inputs": {"key": "desk", "max_attempts": 3600, "delay": "1s"}},
                  {"id": "gate", "action": "wait_for_condition",
                   "inputs": {"table": "gate", "sys_id": "{{inputs.gate}}", "condition": {"field": "open", "op": "eq", "value": true},
                              "timeout": "1h"}},
                  {"action": "unlock", "inputs": {"key": "desk"}}]})"},
};

// The SHA-256 of each test token, as config.json holds it.
inline std::string config_with_tokens(const std::string& limits = "") {
  auto entry = [](const char* name, const char* role) {
    const std::string hex = server::to_hex(server::sha256(std::string(name) + "-secret"));
    return std::string("{\"name\": \"") + name + "\", \"role\": \"" + role + "\", \"token_sha256\": \"" + hex + "\"}";
  };
  return std::string("{\"server\": {\"tokens\": [") + entry("viewer", "viewer") + ", " + entry("operator", "operator") +
         ", " + entry("designer", "designer") + ", " + entry("admin", "admin") + "]" +
         (limits.empty() ? "" : ", \"limits\": " + limits) + "}}";
}

// The token of a test role ("viewer" -> "viewer-secret").
inline std::string token(const std::string& role) { return role + "-secret"; }

class ServerFixture : public ::testing::Test {
 protected:
  // Writes the project (config.json's text: "" for none) and starts serving it.
  void serve(const std::string& config = "") {
    dir_ = fs::path(test_support::temp_path("flowrt-serve-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flows");
    for (const auto& f : kFlows) std::ofstream(dir_ / "flows" / f[0]) << f[1];
    if (!config.empty()) std::ofstream(dir_ / "config.json") << config;
    start();
  }
  // Starts (again) on the project as it is.
  void start() {
    server::ServeOptions options;
    options.dir = dir_.string();
    options.listen = "127.0.0.1:0";
    options.log_level = "error";
    options.feed_period_ms = 10;
    auto s = server::Service::open(options);
    ASSERT_TRUE(s) << s.error().describe();
    service_ = std::move(s).value();
    client_ = std::make_unique<HttpClient>(service_->port());
  }
  void TearDown() override {
    client_.reset();
    service_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  Engine& engine() { return service_->engine(); }
  HttpClient& client() { return *client_; }
  // Every context that can run has run (waiting ones wait on).
  void settle() { engine().settle(0); }

  fs::path dir_;
  std::unique_ptr<server::Service> service_;
  std::unique_ptr<HttpClient> client_;
};

}  // namespace flowrt::testing_http
