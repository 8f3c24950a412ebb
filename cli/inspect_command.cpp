// flowrt inspect --data FILE: what a data file holds, read only (also while an engine has it
// open): its contexts (filtered by flow and status), the trigger events queued and not yet
// started, the locks, and what the last engine did when it opened the file (the recovery
// reports). A table for people, or --format json for programs.
#include <algorithm>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "cli/table_output.h"
#include "plans/time.h"
#include "plans/value_json.h"
#include "store/store.h"

namespace flowrt::cli {
namespace {

// "1 record", "2 records": a count with its noun.
std::string count_of(size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}


Value time_or_null(TimeMs t) { return t < 0 ? Value() : Value(std::string_view(format_time(t))); }

// The trigger as a context record shows it: {"type", ...} without the record's fields.
Value trigger_summary(const Value& stored) {
  std::vector<Member> m;
  for (const auto& f : stored.members()) {
    const std::string_view k = f.key.as_string();
    if (k == "type" || k == "table" || k == "operation" || k == "sys_id" || k == "name") m.push_back(Member{f.key, f.value});
    if (k == "time" && stored["type"] == Value("schedule")) m.push_back(Member{f.key, time_or_null(f.value.as_int())});
  }
  return Value::object(std::move(m));
}

Value context_row(const StoredContext& c) {
  const Value r = c.record.value();
  return Value::object({{"id", Value(std::string_view(c.id))},
                        {"seq", Value(static_cast<long long>(c.seq))},
                        {"flow", Value(std::string_view(c.flow))},
                        {"status", Value(std::string_view(c.status))},
                        {"trigger", trigger_summary(c.trigger)},
                        {"cause", c.cause.is_object() ? Value::object({{"context", c.cause["context"]}, {"flow", c.cause["flow"]}})
                                                      : Value()},
                        {"started_at", r.is_object() ? r["started_at"] : time_or_null(c.started)},
                        {"ended_at", r.is_object() ? r["ended_at"] : time_or_null(c.ended)},
                        {"steps", Value(static_cast<long long>(r.is_object() ? r["steps"].size() : 0))},
                        {"error", r.is_object() ? r["error"] : Value()}});
}

std::string text(const Value& v) { return v.is_string() ? std::string(v.as_string()) : std::string("-"); }

void print(const Value& doc, std::ostream& out) {
  const Value& counters = doc["counters"];
  out << "data file " << doc["file"].as_string() << ": clock " << text(counters["clock"]) << ", "
      << counters["contexts"].as_int() << " contexts started, " << counters["commits"].as_int() << " commits, "
      << "last fencing token " << counters["fencing_token"].as_int() << "\n";
  for (const auto& t : doc["records"].members()) out << "  table " << t.key.as_string() << ": " << count_of(static_cast<size_t>(t.value.as_int()), "record", "records") << "\n";

  const Value& contexts = doc["contexts"];
  size_t id_w = 7, flow_w = 4;
  for (const Value& c : contexts.items()) {
    id_w = std::max(id_w, c["id"].as_string().size());
    flow_w = std::max(flow_w, c["flow"].as_string().size());
  }
  out << "\n" << pad_to_width("CONTEXT", id_w + 2) << pad_to_width("FLOW", flow_w + 2) << pad_to_width("STATUS", 13) << pad_to_width("STEPS", 7)
      << "STARTED -> ENDED\n";
  for (const Value& c : contexts.items()) {
    std::string times = text(c["started_at"]);
    if (c["ended_at"].is_string()) times += " -> " + std::string(c["ended_at"].as_string());
    out << pad_to_width(std::string(c["id"].as_string()), id_w + 2) << pad_to_width(std::string(c["flow"].as_string()), flow_w + 2)
        << pad_to_width(std::string(c["status"].as_string()), 13) << pad_to_width(std::to_string(c["steps"].as_int()), 7) << times << "\n";
    if (c["error"].is_object()) out << "    error: " << c["error"]["message"].as_string() << "\n";
  }
  out << count_of(contexts.size(), "context", "contexts") << " shown\n";

  const Value& queued = doc["queued"];
  out << "\nQUEUED TRIGGER EVENTS (" << queued.size() << ")\n";
  for (const Value& q : queued.items()) {
    out << "  " << q["id"].as_string() << " " << q["flow"].as_string() << " " << q["trigger"].to_json() << "\n";
  }
  const Value& locks = doc["locks"];
  out << "\nLOCKS (" << locks.size() << ")\n";
  print_locks(locks, out);
  const Value& recoveries = doc["recoveries"];
  if (recoveries.size() > 0) {
    const Value& last = recoveries.at(recoveries.size() - 1);
    out << "\nLAST RECOVERY (" << last["at"].as_string() << ", of " << recoveries.size() << "): "
        << count_of(last["resumed"].size(), "context", "contexts") << " resumed, " << last["restarted"].size()
        << " started again, " << last["expired"].size() << " waits or leases ran out while stopped, "
        << count_of(last["started"].size(), "queued context", "queued contexts") << " started, "
        << last["failed"].size() << " ended in error, " << count_of(last["locks_released"].size(), "lock", "locks")
        << " released\n";
    for (const Value& f : last["failed"].items()) out << "  " << f["context"].as_string() << ": " << f["reason"].as_string() << "\n";
    for (const Value& m : last["schedules_missed"].items()) {
      out << "  flow " << m["flow"].as_string() << ": "
          << count_of(static_cast<size_t>(m["occurrences"].as_int()), "schedule occurrence", "schedule occurrences")
          << " fell due while stopped; fired once for " << m["fires_for"].as_string() << "\n";
    }
    for (const Value& p : last["problems"].items()) out << "  " << p.as_string() << "\n";
  }
}

}  // namespace

int inspect_command(const CommandArgs& args) {
  if (!args.positional.empty()) throw UsageError{"inspect takes no positional arguments (--data FILE)"};
  if (!args.has("data") || args.get("data").empty()) throw UsageError{"inspect needs --data FILE"};
  const std::string format = args.get("format", "table");
  if (format != "table" && format != "json") throw UsageError{"--format must be table or json"};
  const TableFilter filter = table_filter(args);
  const std::string &flow = filter.flow, &status = filter.status;

  StoreOptions options;
  // A SQLite file, or a PostgreSQL database (a postgresql:// URL).
  options.kind = is_postgres_url(args.get("data")) ? "postgresql" : "sqlite";
  options.path = args.get("data");
  options.url = args.get("data");
  options.read_only = true;
  Result<std::unique_ptr<Store>> store = open_store(options);
  if (!store) {
    std::cerr << store.message() << "\n";
    return 1;
  }
  Result<StoredState> state = (*store)->load();
  if (!state) {
    std::cerr << state.message() << "\n";
    return 1;
  }

  std::vector<Value> contexts, queued;
  for (const StoredContext& c : state->contexts) {
    if (!flow.empty() && c.flow != flow) continue;
    if (c.status == kQueuedStatus) {
      queued.push_back(Value::object({{"id", Value(std::string_view(c.id))},
                                      {"flow", Value(std::string_view(c.flow))},
                                      {"commit", Value(static_cast<long long>(c.commit_seq))},
                                      {"trigger", trigger_summary(c.trigger)}}));
    }
  }
  // Every context, ended ones (history, not loaded) included, a page at a time.
  ContextQuery query;
  query.flow = flow;
  query.status = status;
  while (true) {
    Result<std::vector<StoredContext>> page = (*store)->list_contexts(query);
    if (!page) {
      std::cerr << page.message() << "\n";
      return 1;
    }
    if (page->empty()) break;
    query.after_seq = page->back().seq;
    for (const StoredContext& c : *page) contexts.push_back(context_row(c));
  }
  std::vector<Value> locks;
  for (const StoredLock& l : state->locks) locks.push_back(l.state);
  std::vector<Value> recoveries;
  for (const RecoveryNote& r : state->recoveries) recoveries.push_back(r.report);
  std::vector<Member> records;
  for (const StoredState::Table& t : state->tables) {
    records.push_back(Member{Value(std::string_view(t.name)), Value(static_cast<long long>(t.records.size()))});
  }
  const StoreCounters& k = state->counters;
  const Value doc = Value::object(
      {{"file", Value(data_for_display(options.path))},
       {"counters", Value::object({{"clock", time_or_null(k.clock)},
                                   {"commits", Value(static_cast<long long>(k.commit_seq))},
                                   {"contexts", Value(static_cast<long long>(k.context_seq))},
                                   {"fencing_token", Value(static_cast<long long>(k.fencing_token))}})},
       {"records", Value::object(std::move(records))},
       {"contexts", Value::array(std::move(contexts))},
       {"queued", Value::array(std::move(queued))},
       {"locks", Value::array(std::move(locks))},
       {"recoveries", Value::array(std::move(recoveries))}});
  if (format == "json") {
    std::cout << doc.to_json() << "\n";
  } else {
    print(doc, std::cout);
  }
  return 0;
}

}  // namespace flowrt::cli
