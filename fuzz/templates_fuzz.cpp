// Fuzz target: bytes -> a template/condition and a record; compile, render, evaluate.
//
// Input: the first line is a JSON value (a template such as "{{trigger.record.n | add: 1}}"
// or {"a": ["{{vars.a}}"]}, or a condition such as {"field": "n", "op": "gt", "value": 2});
// the rest is the record, a JSON value. Text that does not parse is still used: the first
// line as one JSON string, the record as null.
//
// The value is compiled with the public compiler API (compiler/expr_compiler.h, the code
// that compiles every template and condition of a definition) against a PillResolver
// that knows every pill root (trigger.*, steps.s0/s1, vars.a/b, inputs.x or by name, item
// and for_each "it", context.id, flow.id, error.* ) and as a record condition
// (compile_record_condition, the events file's `where`). What compiled cleanly is rendered
// and evaluated (plans/eval.h: render, evaluate, bind_condition) in a Scope where every
// root reads the record. Checks:
//   - a template or condition that does not compile gives at least one diagnostic;
//   - a constant template renders to the value it came from; a text template to a string;
//   - a run-time error has a message;
//   - a bound condition (a wait's) says the same as the condition it came from.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/expr_compiler.h"
#include "plans/eval.h"
#include "plans/value_json.h"

namespace {

using namespace flowrt;

constexpr size_t kMaxInput = 16 * 1024;

[[noreturn]] void fail(const std::string& what, const Value& source) {
  std::fprintf(stderr, "templates_fuzz: %s\nsource: %s\n", what.c_str(), source.to_json().c_str());
  std::abort();
}

// Every pill root, with a fixed layout of slots.
class FuzzResolver : public PillResolver {
 public:
  std::string resolve(const std::vector<std::string>& path, Pill* pill) const override {
    const std::string& root = path[0];
    if (root == "trigger") {
      if (path.size() < 2) return "trigger needs a part";
      static const std::pair<const char*, PillRoot> kParts[] = {
          {"record", PillRoot::kTriggerRecord},   {"previous", PillRoot::kTriggerPrevious},
          {"table", PillRoot::kTriggerTable},     {"operation", PillRoot::kTriggerOperation},
          {"sys_id", PillRoot::kTriggerSysId},    {"time", PillRoot::kTriggerTime},
          {"payload", PillRoot::kTriggerPayload}, {"type", PillRoot::kTriggerType},
      };
      for (const auto& [name, r] : kParts) {
        if (path[1] == name) {
          pill->root = r;
          pill->path = ExprCompiler::make_path(path, 2);
          return "";
        }
      }
      return "unknown trigger part '" + path[1] + "'";
    }
    if (root == "steps") {
      // s0 outputs {record, count}; s1 outputs {records}
      if (path.size() < 3) return "a step pill is steps.ID.OUTPUT";
      const std::vector<std::string>* outputs = nullptr;
      static const std::vector<std::string> kS0 = {"record", "count"}, kS1 = {"records"};
      if (path[1] == "s0") outputs = &kS0, pill->slot = 0;
      else if (path[1] == "s1") outputs = &kS1, pill->slot = 1;
      else return "unknown step '" + path[1] + "'";
      pill->root = PillRoot::kStep;
      pill->name = Value(std::string_view(path[2]));
      pill->path = ExprCompiler::make_path(path, 3);
      for (uint32_t i = 0; i < outputs->size(); ++i) {
        if ((*outputs)[i] == path[2]) {
          pill->index = i;
          return "";
        }
      }
      if (path[2] == "error") {
        pill->index = static_cast<uint32_t>(outputs->size());
        return "";
      }
      return "step '" + path[1] + "' has no output '" + path[2] + "'";
    }
    if (root == "vars") {
      if (path.size() < 2) return "a variable pill is vars.NAME";
      if (path[1] != "a" && path[1] != "b") return "unknown variable '" + path[1] + "'";
      pill->root = PillRoot::kVariable;
      pill->slot = path[1] == "a" ? 0 : 1;
      pill->path = ExprCompiler::make_path(path, 2);
      return "";
    }
    if (root == "inputs") {
      if (path.size() < 2) return "an input pill is inputs.NAME";
      pill->root = PillRoot::kInput;
      pill->name = Value(std::string_view(path[1]));
      pill->path = ExprCompiler::make_path(path, 2);
      if (path[1] == "x") pill->slot = 0;
      else pill->by_name = true;
      return "";
    }
    if (root == "context" || root == "flow") {
      if (path.size() != 2 || path[1] != "id") return "the only part of " + root + " is " + root + ".id";
      pill->root = root == "context" ? PillRoot::kContextId : PillRoot::kFlowId;
      return "";
    }
    if (root == "error") {
      if (path.size() != 2 || (path[1] != "message" && path[1] != "step")) return "error has message and step";
      pill->root = path[1] == "message" ? PillRoot::kErrorMessage : PillRoot::kErrorStep;
      return "";
    }
    if (root == "item" || root == "it") {  // for_each "it" (outer), item (inner)
      pill->root = PillRoot::kItem;
      pill->slot = root == "it" ? 0 : 1;
      pill->path = ExprCompiler::make_path(path, 1);
      return "";
    }
    return "unknown data pill root '" + root + "'";
  }
  bool has_previous(PillRoot root) const override { return root == PillRoot::kTriggerRecord; }
};

struct World {
  explicit World(const Value& record) : record(record) {
    previous = record["previous"];
    trigger.type = TriggerType::kRecord;
    trigger.operation = RecordOperation::kUpdate;
    trigger.has_previous = true;
    trigger.time = 1767225600000;
    trigger.table = Value("ticket");
    trigger.sys_id = record["sys_id"];
    trigger.record = record;
    trigger.previous = previous;
    trigger.payload = record;
    trigger.event_name = Value("fuzz");
    steps = {Value::object({{"record", record}, {"count", Value(record.size())}}),
             Value::object({{"records", Value::array({record, previous})}})};
    variables = {record, record["a"]};
    inputs = {record["x"]};
    items = {record, record["items"]};
    error = Value::object({{"message", Value("boom")}, {"step", Value("3")}});
    context_id = Value("ctx-1");
    flow_id = Value("fuzz_flow");
  }
  Scope scope() const {
    Scope s;
    s.trigger = &trigger;
    s.steps = steps;
    s.variables = variables;
    s.inputs = inputs;
    s.input_object = &record;
    s.items = items;
    s.error = &error;
    s.context_id = &context_id;
    s.flow_id = &flow_id;
    s.record = &record;
    s.previous = &previous;
    return s;
  }
  // What a wait tests a bound condition with: the record alone.
  Scope record_scope() const {
    Scope s;
    s.record = &record;
    s.previous = &previous;
    return s;
  }

  Value record, previous;
  TriggerData trigger;
  std::vector<Value> steps, variables, inputs, items;
  Value error, context_id, flow_id;
};

void check_condition(const Condition& c, const World& w, const Value& source) {
  Result<bool> r = evaluate(c, w.scope());
  if (!r) {
    if (r.message().empty()) fail("a condition failed without a message", source);
    return;
  }
  Result<Condition> bound = bind_condition(c, w.scope());
  if (!bound) {
    if (bound.message().empty()) fail("bind_condition failed without a message", source);
    return;
  }
  Result<bool> again = evaluate(*bound, w.record_scope());
  if (!again) fail("a bound condition failed: " + again.message(), source);
  if (*again != *r) {
    fail(std::string("a bound condition says ") + (*again ? "true" : "false") + ", the condition " +
             (*r ? "true" : "false"),
         source);
  }
}

void run(const Value& source, const Value& record) {
  World w(record);
  FuzzResolver resolver;

  {  // as a template
    Diagnostics diags;
    ExprCompiler expr(resolver, "fuzz", &diags);
    Template t = expr.compile_template(source, "");
    if (diags.reported() == 0) {
      Result<Value> out = render(t, w.scope());
      if (!out) {
        if (out.message().empty()) fail("render failed without a message", source);
      } else {
        // A constant renders as itself, which is its source unless the source escapes braces
        // ("\{{" is the text "{{").
        if (t.kind == Template::Kind::kConstant && !(*out == t.constant)) {
          fail("a constant template rendered as " + out->to_json(), source);
        }
        if (t.kind == Template::Kind::kConstant && !(t.constant == source) &&
            source.to_json().find(R"(\\{{)") == std::string::npos) {
          fail("a constant template differs from its source, which escapes no braces: " + t.constant.to_json(), source);
        }
        if (t.kind == Template::Kind::kText && !out->is_string()) {
          fail("a text template rendered as " + out->to_json(), source);
        }
        std::string text;
        append_text(*out, text);
      }
    }
  }
  // as a condition, in every place a condition can be
  for (FieldMode mode : {FieldMode::kNotAllowed, FieldMode::kRecordUnderTest, FieldMode::kTriggerRecord}) {
    for (bool has_previous : {false, true}) {
      if (mode == FieldMode::kNotAllowed && has_previous) continue;
      Diagnostics diags;
      ExprCompiler expr(resolver, "fuzz", &diags);
      Condition c = expr.compile_condition(source, "", mode, has_previous);
      if (diags.reported() == 0) check_condition(c, w, source);
    }
  }
  {  // as the `where` of the events file
    Diagnostics diags;
    Condition c;
    const bool ok = compile_record_condition(source, "where", "", &c, &diags);
    if (!ok && diags.empty()) fail("compile_record_condition failed without a diagnostic", source);
    if (ok) {
      Result<bool> r = evaluate(c, w.record_scope());
      if (!r && r.message().empty()) fail("a record condition failed without a message", source);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t nl = text.find('\n');
  const std::string_view first = text.substr(0, nl);
  const std::string_view rest = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);

  Value source;
  JsonParseError error;
  if (!parse_json(first, &source, &error)) source = Value(first);
  Value record;
  if (!parse_json(rest, &record, &error)) record = Value();
  run(source, record);
  return 0;
}
