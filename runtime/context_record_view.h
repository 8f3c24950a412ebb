// ContextRecord: a snapshot of one context execution record (SPEC section 10), with typed
// accessors over its JSON. An immutable value; cheap to copy.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "flowrt/plans/value.h"

namespace flowrt {

class ContextRecord {
 public:
  explicit ContextRecord(Value v) : v_(std::move(v)) {}

  const Value& value() const { return v_; }
  std::string id() const { return std::string(v_["id"].as_string()); }
  int64_t seq() const { return v_["seq"].as_int(); }
  std::string flow() const { return std::string(v_["flow"].as_string()); }
  // in_progress | waiting | completed | cancelled | error
  std::string status() const { return std::string(v_["status"].as_string()); }
  std::string plan_version() const { return std::string(v_["plan_version"].as_string()); }
  const Value& steps() const { return v_["steps"]; }
  const Value& logs() const { return v_["logs"]; }
  const Value& variables() const { return v_["variables"]; }
  const Value& error() const { return v_["error"]; }
  std::string error_message() const { return std::string(v_["error"]["message"].as_string()); }
  // The first step with this id; null when none.
  const Value& step(std::string_view id) const {
    for (const Value& s : steps().items()) {
      if (s["id"].as_string() == id) return s;
    }
    return null_value();
  }
  // Messages of every log line, in order.
  std::vector<std::string> log_messages() const {
    std::vector<std::string> out;
    for (const Value& l : logs().items()) out.emplace_back(l["message"].as_string());
    return out;
  }

 private:
  Value v_;
};

// How GoogleTest prints a context record (a failed matcher's "Actual:"): its JSON,
// indented, so a failure shows the status, steps, logs and error as they were.
void PrintTo(const ContextRecord& record, std::ostream* os);

}  // namespace flowrt
