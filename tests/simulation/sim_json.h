// Small helpers the simulation's checks share: reading times and strings out of JSON
// Values, deciding whether a context has ended, and recording a Violation.
#pragma once

#include <string>

#include "plans/time.h"
#include "plans/value.h"
#include "plans/value_json.h"
#include "tests/simulation/snapshot.h"

namespace flowrt::sim {

inline std::string str(const Value& v) { return std::string(v.as_string()); }

// An ISO time in ms, or -1 when the value is not a time (null: not yet).
inline TimeMs ms(const Value& t) {
  if (!t.is_string()) return -1;
  Result<TimeMs> r = parse_time(t.as_string());
  return r ? *r : -1;
}

// Pretty JSON, cut to a size a failure report can show.
inline std::string dump(const Value& v) {
  std::string s = to_pretty_json(v);
  if (s.size() > 8000) s = s.substr(0, 8000) + "\n...[" + std::to_string(s.size()) + " bytes]";
  return s;
}

inline bool terminal(const Value& ctx) {
  const std::string_view st = ctx["status"].as_string();
  return st == "completed" || st == "error" || st == "cancelled";
}

inline void add(Violations* out, std::string invariant, std::string message, const Value& offending = Value()) {
  out->push_back(Violation{std::move(invariant), std::move(message), offending.is_null() ? "" : dump(offending)});
}

}  // namespace flowrt::sim
