#include "cli/table_output.h"

#include <algorithm>
#include <cstdio>

namespace flowrt::cli {
namespace {

// The columns a string takes in a terminal: one per code point (UTF-8 continuation bytes
// take none).
size_t display_width(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad(std::string s, size_t width) {
  if (const size_t w = display_width(s); w < width) s.append(width - w, ' ');
  return s;
}

std::string run_time(const Value& ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms.as_double());
  return buf;
}

}  // namespace

void print_table(const Engine& engine, const std::vector<std::string>& errors, std::ostream& out,
                 const TableFilter& filter) {
  std::vector<ContextRecord> all = engine.contexts();
  std::vector<ContextRecord> contexts;
  for (ContextRecord& c : all) {
    if (!filter.flow.empty() && c.flow() != filter.flow) continue;
    if (!filter.status.empty() && c.status() != filter.status) continue;
    contexts.push_back(std::move(c));
  }
  size_t id_w = 7, flow_w = 4;
  for (const ContextRecord& c : contexts) {
    id_w = std::max(id_w, display_width(c.id()));
    flow_w = std::max(flow_w, display_width(c.flow()));
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
  out << "\n" << contexts.size() << (contexts.size() == 1 ? " context" : " contexts");
  if (contexts.size() != all.size()) out << " of " << all.size();
  out << ", " << failed << " ended in error, " << skipped.size() << (skipped.size() == 1 ? " start" : " starts")
      << " skipped\n";
  if (const uint64_t dropped = engine.dropped_contexts(); dropped > 0) {
    out << dropped << " older finished context records dropped (context_retention "
        << engine.properties().context_retention << ")\n";
  }
  for (const std::string& e : errors) out << "error: " << e << "\n";
}

}  // namespace flowrt::cli
