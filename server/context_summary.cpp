#include "server/context_summary.h"

namespace flowrt::server {

Value context_summary(const Value& r) {
  return Value::object({{"id", r["id"]},
                        {"seq", r["seq"]},
                        {"flow", r["flow"]},
                        {"status", r["status"]},
                        {"trigger", r["trigger"]},
                        {"started_at", r["started_at"]},
                        {"ended_at", r["ended_at"]},
                        {"runtime_ms", r["runtime_ms"]},
                        {"error", r["error"]},
                        {"steps", Value(r["steps"].size())}});
}

}  // namespace flowrt::server
