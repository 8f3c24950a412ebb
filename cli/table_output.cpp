#include "cli/table_output.h"

#include <algorithm>
#include <cstdio>

#include "plans/time.h"
#include "runtime/context_record.h"

namespace flowrt::cli {

TableFilter table_filter(const CommandArgs& args) {
  TableFilter filter{args.get("flow"), args.get("status")};
  if (args.has("status") && !context_status_named(filter.status)) {
    throw UsageError{"--status must be " + std::string(kContextStatusNames) + ", not '" + filter.status + "'"};
  }
  return filter;
}

namespace {

// The columns a string takes in a terminal: one per code point (UTF-8 continuation bytes
// take none).
size_t display_width(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string run_time(const Value& ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms.as_double());
  return buf;
}

// What a waiting context waits for, from its step that waits: a timer and until when, a
// record condition on which record, or a lock and behind whom.
std::string waits_for(const ContextRecord& c, const Value& locks) {
  const Value* waiting = nullptr;
  for (const Value& st : c.steps().items()) {
    if (st["status"].as_string() == "waiting") waiting = &st;
  }
  if (!waiting) return "";
  const Value& st = *waiting;
  const std::string_view action = st["action"].as_string();
  const Value& in = st["inputs"];
  auto until = [&](const Value& duration, std::string_view word = " until ") -> std::string {
    Result<TimeMs> started = parse_time(st["started_at"].as_string());
    Result<DurationMs> d = parse_duration(duration);
    if (!started || !d) return "";
    return std::string(word) + format_time(add_duration(*started, *d));
  };
  if (action == "wait") return "a timer" + until(in["duration"]) + " (step " + std::string(st["path"].as_string()) + ")";
  if (action == "wait_for_condition") {
    std::string text = "a condition on " + std::string(in["table"].as_string()) + "/" + std::string(in["sys_id"].as_string()) +
                       ": " + in["condition"].to_json();
    if (!in["timeout"].is_null()) text += ", times out" + until(in["timeout"], " at ");
    return text + " (step " + std::string(st["path"].as_string()) + ")";
  }
  if (action == "lock") {
    const std::string key(in["key"].as_string());
    std::string text = "lock '" + key + "'";
    for (const Value& l : locks.items()) {
      if (l["name"].as_string() != key) continue;
      std::string holders;
      for (const Value& h : l["holders"].items()) holders += (holders.empty() ? "" : ", ") + std::string(h["context"].as_string());
      if (!holders.empty()) text += ", held by " + holders;
      size_t position = 1;
      for (const Value& w : l["waiters"].items()) {
        if (w["context"].as_string() == c.id()) text += ", #" + std::to_string(position) + " in its queue";
        ++position;
      }
    }
    return text + " (step " + std::string(st["path"].as_string()) + ")";
  }
  return std::string(action) + " (step " + std::string(st["path"].as_string()) + ")";
}

// A skipped start as a sentence: which flow, why, on which event, caused by whom.
std::string skipped_row(const Value& s) {
  const Value& e = s["event"];
  std::string event(e["type"].as_string());
  if (event == "record") {
    event = "record " + std::string(e["table"].as_string()) + "/" + std::string(e["sys_id"].as_string()) + " " +
            std::string(e["operation"].as_string());
  } else if (event == "event") {
    event = "event '" + std::string(e["name"].as_string()) + "'";
  } else if (event == "schedule") {
    event = "schedule at " + std::string(e["time"].as_string());
  } else if (event == "api") {
    event = "a call";
  }
  std::string text = std::string(s["flow"].as_string()) + ": " + std::string(s["reason"].as_string()) + ", on " + event;
  if (s["cause"].is_object()) {
    text += ", caused by " + std::string(s["cause"]["context"].as_string()) + " (" + std::string(s["cause"]["flow"].as_string()) + ")";
  }
  return text;
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
  const Value locks = engine.locks();
  out << pad_to_width("CONTEXT", id_w + 2) << pad_to_width("FLOW", flow_w + 2) << pad_to_width("STATUS", 13) << pad_to_width("RUN TIME", 13)
      << pad_to_width("STEPS", 7) << pad_to_width("ERRORS", 8) << "STARTED -> ENDED\n";
  size_t failed = 0;
  for (const ContextRecord& c : contexts) {
    const Value& v = c.value();
    std::string times = std::string(v["started_at"].as_string());
    if (v["ended_at"].is_string()) times += " -> " + std::string(v["ended_at"].as_string());
    // Steps that failed, also those the context went on past (on_error: continue).
    std::vector<const Value*> failed_steps;
    for (const Value& st : c.steps().items()) {
      if (st["status"].as_string() == "error") failed_steps.push_back(&st);
    }
    out << pad_to_width(c.id(), id_w + 2) << pad_to_width(c.flow(), flow_w + 2) << pad_to_width(c.status(), 13)
        << pad_to_width(run_time(v["runtime_ms"]), 13) << pad_to_width(std::to_string(c.steps().size()), 7)
        << pad_to_width(std::to_string(failed_steps.size()), 8) << times << "\n";
    const std::string error_step = c.error()["step"].is_string() ? std::string(c.error()["step"].as_string()) : "";
    const Value& error_message = c.error().is_null() ? c.error() : c.error()["message"];
    for (const Value* st : failed_steps) {
      if (!c.error().is_null() && (*st)["path"].as_string() == error_step) continue;  // the context's own error, below
      // A step that failed with the context's own error was ended by it (the blocks and
      // calls around the failing step, or the open steps of a context ended by a budget).
      if (!c.error().is_null() && (*st)["error"] == error_message) continue;
      out << "    step " << (*st)["path"].as_string() << " (" << (*st)["action"].as_string() << ") failed, went on: "
          << (*st)["error"].as_string() << "\n";
    }
    if (!c.error().is_null()) {
      ++failed;
      out << "    error";
      if (!error_step.empty()) out << " at step " << error_step;
      out << ": " << c.error_message() << "\n";
    }
    if (c.status() == "waiting") {
      if (const std::string w = waits_for(c, locks); !w.empty()) out << "    waits for " << w << "\n";
    }
  }
  std::vector<Value> skipped = engine.skipped();
  if (!skipped.empty()) {
    out << "\nSKIPPED STARTS\n";
    for (const Value& s : skipped) {
      out << "  " << skipped_row(s) << "\n";
    }
  }
  if (locks.size() > 0) {
    out << "\nLOCKS\n";
    print_locks(locks, out);
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

std::string pad_to_width(std::string s, size_t width) {
  if (const size_t w = display_width(s); w < width) s.append(width - w, ' ');
  return s;
}

}  // namespace flowrt::cli
