#include "cli/table_output.h"

#include <algorithm>
#include <cstdio>

namespace flowrt::cli {
namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string run_time(const Value& ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms.as_double());
  return buf;
}

}  // namespace

void print_locks(const Value& locks, std::ostream& out) {
  for (const Value& l : locks.items()) {
    out << "  " << l["name"].as_string() << " (limit " << l["limit"].as_int() << ", held " << l["held"].as_int()
        << ")\n";
    for (const Value& h : l["holders"].items()) {
      out << "    held by " << h["context"].as_string() << " weight " << h["weight"].as_int() << " token "
          << h["token"].as_int() << " since " << h["acquired_at"].as_string() << ", lease until "
          << h["expires_at"].as_string() << "\n";
    }
    size_t position = 1;
    for (const Value& w : l["waiters"].items()) {
      out << "    waiting #" << position++ << ": " << w["context"].as_string() << " weight " << w["weight"].as_int()
          << " since " << w["requested_at"].as_string() << ", gives up at " << w["gives_up_at"].as_string() << "\n";
    }
  }
}

void print_table(const Engine& engine, const std::vector<std::string>& errors, std::ostream& out) {
  std::vector<ContextRecord> contexts = engine.contexts();
  size_t id_w = 7, flow_w = 4;
  for (const ContextRecord& c : contexts) {
    id_w = std::max(id_w, c.id().size());
    flow_w = std::max(flow_w, c.flow().size());
  }
  out << pad("CONTEXT", id_w + 2) << pad("FLOW", flow_w + 2) << pad("STATUS", 13) << pad("RUN TIME", 13)
      << pad("STEPS", 7) << "STARTED -> ENDED\n";
  size_t failed = 0;
  for (const ContextRecord& c : contexts) {
    const Value& v = c.value();
    std::string times = std::string(v["started_at"].as_string());
    if (v["ended_at"].is_string()) times += " -> " + std::string(v["ended_at"].as_string());
    out << pad(c.id(), id_w + 2) << pad(c.flow(), flow_w + 2) << pad(c.status(), 13)
        << pad(run_time(v["runtime_ms"]), 13) << pad(std::to_string(c.steps().size()), 7) << times << "\n";
    if (!c.error().is_null()) {
      ++failed;
      out << "    error";
      if (c.error()["step"].is_string()) out << " at step " << c.error()["step"].as_string();
      out << ": " << c.error_message() << "\n";
    }
  }
  std::vector<Value> skipped = engine.skipped();
  if (!skipped.empty()) {
    out << "\nSKIPPED STARTS\n";
    for (const Value& s : skipped) {
      out << "  " << s["flow"].as_string() << ": " << s["reason"].as_string() << " (event " << s["event"].to_json()
          << ")\n";
    }
  }
  const Value locks = engine.locks();
  if (locks.size() > 0) {
    out << "\nLOCKS\n";
    print_locks(locks, out);
  }
  out << "\n" << contexts.size() << " contexts, " << failed << " ended in error, " << skipped.size()
      << " starts skipped\n";
  if (const uint64_t dropped = engine.dropped_contexts(); dropped > 0) {
    out << dropped << " older finished context records dropped (context_retention "
        << engine.properties().context_retention << ")\n";
  }
  for (const std::string& e : errors) out << "error: " << e << "\n";
}

}  // namespace flowrt::cli
