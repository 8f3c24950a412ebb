// Model, the step half: a context's record read step by step against the definition
// version it ran, with the model's own frames (variables, inputs, step outputs, loop
// items, the call stack), checking each step's inputs as rendered, its outcome where the
// model can decide it, and handing writes, events and starts to the commit half.
#include <algorithm>

#include "tests/simulation/model.h"
#include "tests/simulation/model_rules.h"
#include "tests/simulation/sim_json.h"

namespace flowrt::sim {
namespace {

const std::string kInvS = "(s) steps follow their definition";
using model_rules::kInvE;

bool is_unit_call(const Scenario& s, const std::string& action) {
  auto it = s.versions.find(action);
  return it != s.versions.end() && !it->second.empty() && it->second[0]["type"].as_string() == "action";
}

std::string call_segment(const Scenario& s, const std::string& action) {
  if (action == "call_subflow") return ".subflow.";
  if (is_unit_call(s, action)) return ".action.";
  return "";
}

// "3.subflow.2.then.1" -> ("3.subflow.", "2.then.1")
std::pair<std::string, std::string> split_frame(const std::string& path) {
  size_t best = std::string::npos, len = 0;
  for (const char* seg : {".subflow.", ".action."}) {
    const size_t p = path.rfind(seg);
    if (p != std::string::npos && (best == std::string::npos || p > best)) {
      best = p;
      len = std::string(seg).size();
    }
  }
  if (best == std::string::npos) return {"", path};
  return {path.substr(0, best + len), path.substr(best + len)};
}

std::vector<std::string> tokens(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    out.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

int64_t duration_ms(const Value& v) {
  Result<DurationMs> d = parse_duration(v);
  return d ? *d : -1;
}

bool mentions(const Value& step, std::string_view text) {
  return step["error"].as_string().find(text) != std::string_view::npos ||
         step["outputs"]["error"].as_string().find(text) != std::string_view::npos;
}

}  // namespace

ModelScope Model::scope_for(const Ctx& x, const Frame& f, const Value& item, const std::string& item_name) const {
  ModelScope sc;
  sc.flow_id = Value(x.flow);
  sc.context_id = Value(x.id);
  sc.trigger = x.trigger;
  sc.has_previous = x.has_previous;
  sc.vars = f.vars;
  sc.inputs = f.inputs;
  sc.item = item;
  sc.item_name = item_name;
  sc.steps = &f.steps;
  return sc;
}

const Value* Model::node_at(Ctx& x, const Value& step, std::string* frame_key, Value* item, std::string* item_name,
                            Violations* out) {
  const std::string path = str(step["path"]);
  const auto [key, local] = split_frame(path);
  *frame_key = key;
  auto fit = x.frames.find(key);
  if (fit == x.frames.end()) {
    add(out, kInvS, x.id + " step " + path + " belongs to a call the model did not see", step);
    return nullptr;
  }
  Frame& f = fit->second;
  const std::vector<Value>& versions = s_.versions.at(f.unit);
  if (!f.version) {
    // The first step of every version is its marker: "version UNIT N".
    const std::string want = "version " + f.unit + " ";
    const std::string msg = str(step["inputs"]["message"]);
    if (local != "1" || !msg.starts_with(want)) {
      add(out, kInvS, x.id + ": " + f.unit + " began with step " + path + ", not its version marker", step);
      return nullptr;
    }
    const size_t v = static_cast<size_t>(std::stoul(msg.substr(want.size()))) - 1;
    // The version that runs is the one published when the context started (its plan);
    // test_flow's plan was fixed at the call.
    std::set<size_t> allowed;
    if (x.test) {
      allowed.insert(states_[std::min(op_at(x.start_commit), states_.size() - 1)].published.at(f.unit));
    } else if (!threads_) {
      allowed.insert(states_[x.first_run_state.value_or(states_.size() - 1)].published.at(f.unit));
    } else {
      for (const DriverState* st : states_for(x)) allowed.insert(st->published.at(f.unit));
    }
    if (v >= versions.size() || !allowed.count(v)) {
      std::string list;
      for (size_t a : allowed) list += " " + std::to_string(a + 1);
      add(out, kInvS, x.id + " ran version " + std::to_string(v + 1) + " of " + f.unit + "; the published one then was" + list, step);
      return nullptr;
    }
    f.version = v;
    count("versions " + std::to_string(v + 1) + " run");
    if (key.empty()) {
      const Value& init = versions[v]["variables"];
      if (init.is_object()) f.vars = init;
    }
  }
  const Value* block = &versions[*f.version]["actions"];
  const Value* node = nullptr;
  const Value* loop = nullptr;
  const std::vector<std::string> t = tokens(local);
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string& tok = t[i];
    if (!tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0]))) {
      const size_t hash = tok.find('#');
      const size_t idx = std::stoul(tok.substr(0, hash));
      if (!block->is_array() || idx < 1 || idx > block->size()) break;
      node = &block->items()[idx - 1];
      if (hash != std::string::npos && loop) {
        const size_t iteration = std::stoul(tok.substr(hash + 1));
        *item = (*loop)["for_each"].at(iteration - 1);
        *item_name = (*loop)["as"].is_string() ? str((*loop)["as"]) : "item";
      }
      continue;
    }
    if (!node) break;
    if (tok == "do") loop = node;
    if (tok == "else_if" && i + 2 < t.size()) {
      const size_t b = std::stoul(t[i + 1]);
      block = &(*node)["else_if"].at(b - 1)["then"];
      i += 2;
      continue;
    }
    block = &(*node)[tok];
  }
  if (!node) {
    add(out, kInvS, x.id + " step " + path + " names no step of " + f.unit + " version " + std::to_string(*f.version + 1), step);
    return nullptr;
  }
  return node;
}

void Model::replay(Ctx& x, const Snapshot& snap, bool until_commit, Violations* out) {
  const Value* rec = snap.context(x.id);
  if (!rec) {
    add(out, kInvS, x.id + " is not in the engine's contexts");
    return;
  }
  if (!x.first_run_state && !(*rec)["started_at"].is_null()) x.first_run_state = states_.size() - 1;
  const auto steps = (*rec)["steps"].items();
  while (x.cursor < steps.size()) {
    const Value& st = steps[x.cursor];
    const std::string_view status = st["status"].as_string();
    const std::string_view action = st["action"].as_string();
    const bool container = action == "if" || action == "for_each" || action == "try" || action == "end" ||
                           !call_segment(s_, std::string(action)).empty();
    if (!container && (status == "in_progress" || status == "waiting")) break;  // not ended yet
    const bool commits = replay_step(x, *rec, x.cursor, out);
    ++x.cursor;
    if (!out->empty()) return;
    if (commits && until_commit) return;
  }
  if (!x.finished && terminal(*rec) && x.cursor == steps.size()) finish_context(x, *rec, out);
}

bool Model::replay_step(Ctx& x, const Value& rec, size_t index, Violations* out) {
  const Value& st = rec["steps"].at(index);
  std::string key, item_name;
  Value item;
  const Value* node = node_at(x, st, &key, &item, &item_name, out);
  if (!node) return false;
  Frame& f = x.frames.at(key);
  ModelScope sc = scope_for(x, f, item, item_name);
  const std::string path = str(st["path"]);
  if (const size_t c = path.rfind(".catch."); c != std::string::npos) {
    // A catch block sees the error that ended its try: the last step in it that failed.
    const std::string in_try = path.substr(0, c) + ".try.";
    for (size_t i = index; i-- > 0;) {
      const Value& e = rec["steps"].at(i);
      if (e["path"].as_string().starts_with(in_try) && e["status"].as_string() == "error") {
        sc.error = Value::object({{"message", e["error"]}, {"step", e["path"]}});
        break;
      }
    }
  }
  const std::string status = str(st["status"]);
  const std::string what = x.id + " step " + path;
  if (node->contains("if")) {
    if (st["action"].as_string() != "if") {
      add(out, kInvS, what + " is a " + str(st["action"]) + ", the definition an if", st);
      return false;
    }
    // The branch the model takes: the first condition that holds.
    Value want;
    std::vector<Value> conditions = {(*node)["if"]};
    for (const Value& b : (*node)["else_if"].items()) conditions.push_back(b["if"]);
    for (size_t i = 0; i < conditions.size() && want.is_null(); ++i) {
      Result<bool> r = model_condition(conditions[i], sc);
      if (!r) {
        add(out, kInvS, what + ": the model cannot evaluate " + conditions[i].to_json() + ": " + r.message(), st);
        return false;
      }
      if (*r) want = i == 0 ? Value("then") : Value(std::string_view("else_if." + std::to_string(i)));
    }
    if (want.is_null() && node->contains("else")) want = Value("else");
    if (!(st["outputs"]["branch"] == want)) {
      add(out, kInvS, what + " took branch " + st["outputs"]["branch"].to_json() + ", the model's conditions give " + want.to_json(), rec);
    }
    count("branches decided");
    return false;
  }
  if (node->contains("for_each")) {
    Result<Value> items = model_render((*node)["for_each"], sc);
    if (!items) {
      add(out, kInvS, what + ": the model cannot render the items: " + items.message(), st);
      return false;
    }
    std::string fails;
    if (!items->is_null() && !items->is_array()) {
      fails = "for_each needs an array";
    } else if (items->is_array()) {
      std::set<bool> over;
      for (const DriverState* d : states_for(x)) over.insert(static_cast<int64_t>(items->size()) > d->max_iterations);
      if (over.size() == 1 && *over.begin()) fails = "max_iterations";
      if (over.size() > 1) fails = "?";
    }
    if (fails == "?") return false;
    // It failed itself (before any iteration), not for a step of its body.
    bool iterated = false;
    for (const Value& other : rec["steps"].items()) iterated = iterated || other["path"].as_string().starts_with(path + ".do.");
    const bool failed = !iterated && (mentions(st, "for_each needs an array") || mentions(st, "max_iterations"));
    if (!fails.empty() != failed) {
      add(out, kInvS, what + " (for_each over " + items->to_json() + ")" +
                          (fails.empty() ? " failed, but its items are within max_iterations" : " should fail: " + fails), rec);
    }
    if (fails == "max_iterations") count("for_each past max_iterations");
    return false;
  }
  if (node->contains("try")) return false;
  if (node->contains("end")) {
    x.has_end = true;
    return false;
  }
  bool commits = false;
  replay_action(x, f, *node, st, sc, index, key, &commits, out);
  return commits;
}

void Model::replay_action(Ctx& x, Frame& f, const Value& node, const Value& st, const ModelScope& sc, size_t index,
                          const std::string& key, bool* commits, Violations* out) {
  const std::string action = str(node["action"]);
  const std::string path = str(st["path"]);
  const std::string status = str(st["status"]);
  const std::string what = x.id + " step " + path + " (" + action + ")";
  const std::string id = str(node["id"]);
  if (st["action"].as_string() != action) {
    add(out, kInvS, what + " is recorded as " + str(st["action"]), st);
    return;
  }
  // The inputs as the model renders them must be the inputs recorded.
  Result<Value> in = model_render(node["inputs"].is_null() ? Value::empty_object() : node["inputs"], sc);
  if (!in) {
    // The engine fails such a step too (a transform of a wrong type).
    if (status != "error") add(out, kInvS, what + ": the model cannot render its inputs (" + in.message() + ") but it ran", st);
    return;
  }
  if (!(*in == st["inputs"]) && action != "sim_throw" && action != "sim_slow" && action != "sim_hang") {
    add(out, kInvS, what + " has inputs " + st["inputs"].to_json() + ", the model renders " + in->to_json(), st);
    return;
  }
  const bool done = status == "completed";
  auto outputs = [&](const Value& v) {
    if (!id.empty()) f.steps[id] = v;
  };
  if (!id.empty()) f.steps[id] = st["outputs"].is_null() ? Value::empty_object() : st["outputs"];
  if (action == "log" || action == "look_up_record" || action == "look_up_records" || action == "lock" ||
      action == "unlock" || action == "wait_for_condition") {
    if (action == "wait_for_condition" && done) {
      const Value& o = st["outputs"];
      const int64_t timeout = duration_ms((*in)["timeout"]);
      const TimeMs started = ms(st["started_at"]), ended = ms(st["ended_at"]);
      if (o["timed_out"].as_bool() && !real_clock_ && ended != started + timeout) {
        add(out, "(t) timing", what + " timed out at " + str(st["ended_at"]) + ", want started_at + " + std::to_string(timeout) + "ms", st);
      }
      if (!o["timed_out"].as_bool() && timeout >= 0 && ended > started + timeout) {
        add(out, "(t) timing", what + " ended after its timeout without timing out", st);
      }
      // The versions written while it waited (after its look, before its timeout): a
      // timed-out wait saw none meet its condition (else a wake-up was lost); a met one
      // ended on one that did.
      const Value& cond = (*in)["condition"];
      const auto* h = history(str((*in)["table"]), str((*in)["sys_id"]));
      if (h && !real_clock_) {
        bool found = false;
        for (size_t i = 1; i < h->size(); ++i) {
          const Version& v = (*h)[i];
          // A version written at the very instant the wait times out may come first (the
          // wait is met) or second (it times out): both are right.
          if (v.record.is_null() || v.at <= started || (timeout >= 0 && v.at > started + timeout)) continue;
          const bool at_deadline = timeout >= 0 && v.at == started + timeout;
          const bool meets = model_compare(cond["op"].as_string(), v.record[cond["field"].as_string()], cond["value"],
                                           (*h)[i - 1].record[cond["field"].as_string()]);
          if (meets && o["timed_out"].as_bool() && !at_deadline) {
            add(out, "(b) contexts ended or waiting on something that exists",
                what + " timed out, but version " + v.record["sys_mod_count"].to_json() + " written at " + format_time(v.at) +
                    " while it waited met its condition (a lost wake-up)", st);
            return;
          }
          found = found || (meets && v.record == o["record"]);
        }
        const bool at_once = ended == started && !o["timed_out"].as_bool();  // met when it looked
        const std::string_view op = cond["op"].as_string();
        // A write at the very instant of its look (after it, before the wait registered)
        // may have met it; without one, a changes op cannot have held.
        bool met_at_its_instant = false;
        for (size_t i = 1; i < h->size(); ++i) {
          const Version& v = (*h)[i];
          met_at_its_instant = met_at_its_instant ||
                               (!v.record.is_null() && v.at == started &&
                                model_compare(op, v.record[cond["field"].as_string()], cond["value"],
                                              (*h)[i - 1].record[cond["field"].as_string()]));
        }
        if (at_once && !found && !met_at_its_instant && op.starts_with("changes")) {
          add(out, "(b) contexts ended or waiting on something that exists",
              what + " was met by '" + std::string(op) + "' when it looked, before anything changed", st);
          return;
        }
        if (!o["timed_out"].as_bool() && !found && !at_once) {
          add(out, "(b) contexts ended or waiting on something that exists",
              what + " was woken with " + o["record"].to_json() + ", which is no version written while it waited that meets its condition", st);
          return;
        }
      }
      count(o["timed_out"].as_bool() ? "wait_for_condition timed out" : "wait_for_condition met");
    }
    return;
  }
  if (action == "set_variables" || action == "assign_outputs") {
    if (!done) return;
    Value& target = action == "set_variables" ? f.vars : f.outputs;
    for (const auto& m : (*in)["values"].members()) target = target.with(m.key.as_string(), m.value);
    return;
  }
  if (action == "wait") {
    const int64_t d = duration_ms((*in)["duration"]);
    if (done && !real_clock_ && ms(st["ended_at"]) != ms(st["started_at"]) + d) {
      add(out, "(t) timing", what + " ended at " + str(st["ended_at"]) + ", want its start + " + std::to_string(d) + "ms", st);
    }
    if (done) count("waits ended on time");
    return;
  }
  if (action == "fail") {
    if (status != "error") add(out, kInvS, what + " should fail", st);
    return;
  }
  if (action == "sim_echo") {
    if (done) {
      std::string up(str((*in)["text"]));
      for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      const Value want = Value::object({{"out", Value(std::string_view(up))}});
      if (!(st["outputs"] == want)) add(out, kInvS, what + " outputs " + st["outputs"].to_json() + ", want " + want.to_json(), st);
      outputs(want);
    }
    count("custom actions ran");
    return;
  }
  if (action == "sim_throw") {
    if (status != "error" || !mentions(st, "action 'sim_throw' threw: boom on purpose")) {
      add(out, kInvS, what + " should fail with \"action 'sim_throw' threw: boom on purpose\"", st);
    }
    count("custom action failures");
    return;
  }
  if (action == "sim_slow" || action == "sim_hang") {
    const std::string want = action == "sim_slow" ? "the context ran longer than max_run_time"
                                                  : "action 'sim_hang' did not return within max_run_time";
    if (status != "error" || !mentions(st, want)) {
      add(out, kInvS, what + " should fail with \"" + want + "\"", st);
    }
    x.must_error = want;
    count(action == "sim_slow" ? "quota errors" : "watchdog give-ups");
    return;
  }
  if (!call_segment(s_, action).empty()) {
    const std::string callee = action == "call_subflow" ? str((*in)["subflow"]) : action;
    const Value call_inputs = action == "call_subflow" ? (*in)["inputs"] : *in;
    // Direct recursion skips the call; past indirect_recursion_limit it fails.
    const bool direct = callee == f.unit;
    const int64_t runs = std::count(f.stack.begin(), f.stack.end(), callee);
    std::set<bool> over;
    for (const DriverState* d : states_for(x)) over.insert(runs >= std::max<int64_t>(1, d->recursion_limit));
    const bool indirect_failed = mentions(st, "indirect_recursion_limit");
    if (direct != (status == "skipped")) {
      add(out, kInvS, what + (direct ? " calls its own unit and should be skipped" : " was skipped but does not call its own unit"), st);
      return;
    }
    if (direct) {
      ++call_skips_seen_;
      count("subflow calls skipped (direct recursion)");
      return;
    }
    if (over.size() == 1 && *over.begin() != indirect_failed) {
      add(out, kInvS, what + (indirect_failed ? " failed for indirect_recursion_limit, but " + callee + " is on the stack " +
                                                    std::to_string(runs) + " times"
                                              : " should fail: " + callee + " is already on the stack " + std::to_string(runs) + " times"),
          st);
      return;
    }
    if (indirect_failed) {
      count("subflow calls past indirect_recursion_limit");
      return;
    }
    Frame callee_frame;
    callee_frame.unit = callee;
    callee_frame.inputs = call_inputs.is_object() ? call_inputs : Value::empty_object();
    callee_frame.stack = f.stack;
    callee_frame.stack.push_back(callee);
    x.frames[path + call_segment(s_, action)] = std::move(callee_frame);
    return;
  }
  // Writes, events and starts: a completed one made exactly one commit; a delete_record
  // that found no record to delete (deleted: false) made none.
  if (action == "delete_record" && done && st["outputs"]["deleted"] == Value(false)) {
    // Only right when the record was not there: not when it existed from before the step
    // to its end with no write between (a write at the step's own instants may come first).
    const TimeMs started = ms(st["started_at"]), ended = ms(st["ended_at"]);
    if (const auto* h = history(str((*in)["table"]), str((*in)["sys_id"]))) {
      const Version* before = nullptr;
      bool written_meanwhile = false;
      for (const Version& v : *h) {
        if (v.at < started) before = &v;
        else if (v.at <= ended) written_meanwhile = true;
      }
      if (before && !before->record.is_null() && !written_meanwhile) {
        add(out, kInvE, what + " deleted nothing (deleted: false) although " + str((*in)["table"]) + "/" +
                            str((*in)["sys_id"]) + " existed throughout",
            st);
        return;
      }
    }
    count("deletes of no record");
    return;
  }
  Value w;
  if (action == "create_record" || action == "update_record" || action == "delete_record" || action == "sim_stamp") {
    const std::string kind = action == "update_record" ? "update" : action == "delete_record" ? "delete" : "insert";
    w = Value::object({{"kind", Value(kind)},
                       {"table", action == "sim_stamp" ? Value(kSinkTable) : (*in)["table"]},
                       {"sys_id", (*in)["sys_id"]},
                       {"values", action == "sim_stamp" ? Value::object({{"tag", (*in)["tag"]}, {"by", Value(x.id)}}) : (*in)["values"]},
                       {"id", Value(id)}});
    // The counter pattern: the record it read under the lock must still be current.
    if (action == "update_record" && !(*in)["while_holding"].is_null()) {
      for (const auto& [sid, o] : f.steps) {
        if (o["record"]["sys_id"] == (*in)["sys_id"] && (node["inputs"]["values"].to_json().find("steps." + sid + ".") != std::string::npos)) {
          w = w.with("check_current", o["record"]);
        }
      }
    }
    if (!done) {
      const bool lost = mentions(st, "lock_lost");
      if (lost) count("lock_lost writes");
      // Legitimate failures: no such record (never written, deleted, or a lookup that
      // found nothing), lock_lost (model_locks.cpp checks the lease), a cancel.
      const std::string target = str((*in)["sys_id"]);
      const auto* h = history(str((*in)["table"]), target);
      const bool gone = !h || h->back().record.is_null();
      if (!lost && !gone && !mentions(st, "cancelled") && status != "in_progress" && kind != "insert") {
        add(out, kInvE, what + " failed (" + str(st["error"]) + ") although " + str((*in)["table"]) + "/" + target + " exists", st);
      }
      return;
    }
  } else if (action == "fire_event") {
    if (!done) return;
    w = Value::object({{"kind", "event"}, {"name", (*in)["name"]}, {"payload", (*in)["payload"]}});
  } else if (action == "start_flow") {
    const std::string flow = str((*in)["flow"]);
    const FlowSpec* fs = s_.flow(flow);
    std::set<bool> startable;
    for (const DriverState* d : states_for(x)) startable.insert(fs && fs->kind == FlowSpec::Kind::kApi && d->active.at(flow));
    if (startable.size() == 1 && *startable.begin() != done) {
      add(out, "(a) every trigger match started a context or was skipped", what + (done ? " started " + flow + ", which is not an active API flow" : " failed although " + flow + " is an active API flow"), st);
    }
    if (!done) return;
    w = Value::object({{"kind", "start"}, {"flow", Value(flow)}, {"inputs", (*in)["inputs"]}});
  } else {
    add(out, kInvS, what + ": the model does not know this action", st);
    return;
  }
  x.pending.push_back(PendingWrite{index, key, w});
  *commits = true;
}

void Model::finish_context(Ctx& x, const Value& rec, Violations* out) {
  x.finished = true;
  const std::string status = str(rec["status"]);
  if (!x.must_error.empty() && status != "error") {
    add(out, kInvS, x.id + " ended " + status + ", but a step ended it in error (" + x.must_error + ")", rec);
  }
  if (!x.must_error.empty() && status == "error" && rec["error"]["message"].as_string().find(x.must_error) == std::string_view::npos) {
    add(out, kInvS, x.id + " ended in error " + rec["error"].to_json() + ", want \"" + x.must_error + "\"", rec);
  }
  // The flow's variables as the model set them.
  const Frame& root = x.frames.at("");
  if (root.version && status == "completed" && rec["variables"].is_object()) {
    for (const auto& m : root.vars.members()) {
      if (!(rec["variables"][m.key.as_string()] == m.value)) {
        add(out, kInvS, x.id + " ended with variables " + rec["variables"].to_json() + ", the model's are " + root.vars.to_json(), rec);
        break;
      }
    }
  }
  // Calls that completed return what the called unit assigned.
  for (const Value& st : rec["steps"].items()) {
    auto fr = x.frames.find(str(st["path"]) + call_segment(s_, str(st["action"])));
    if (fr == x.frames.end() || st["status"].as_string() != "completed" || call_segment(s_, str(st["action"])).empty()) continue;
    for (const auto& m : fr->second.outputs.members()) {
      if (!(st["outputs"][m.key.as_string()] == m.value)) {
        add(out, kInvS, x.id + " step " + str(st["path"]) + " returned " + st["outputs"].to_json() + ", the model's outputs are " +
                            fr->second.outputs.to_json(), rec);
        break;
      }
    }
  }
  // A completed context ran every top-level step of its version (unless an `end` ended it).
  if (status == "completed" && !x.has_end && root.version) {
    const size_t n = s_.versions.at(x.flow)[*root.version]["actions"].size();
    std::set<std::string> top;
    for (const Value& st : rec["steps"].items()) {
      if (st["path"].as_string().find('.') == std::string_view::npos) top.insert(str(st["path"]));
    }
    if (top.size() != n) {
      add(out, kInvS, x.id + " completed after " + std::to_string(top.size()) + " of the " + std::to_string(n) + " top-level steps", rec);
    }
  }
  count("contexts " + status);
}

}  // namespace flowrt::sim
