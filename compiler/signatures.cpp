#include "compiler/signatures.h"

#include <array>

namespace flowrt {
namespace {

using P = ParamType;
using R = InputRole;

using C = InputCheck;

InputParam in(const char* name, P type, bool required = false, R role = R::kValue, C check = C::kNone) {
  if (role == R::kDuration && check == C::kNone) check = C::kDuration;
  return InputParam{Param{name, type, required}, role, check};
}
// A required string that may not be empty (a table, a key, a name).
InputParam name_in(const char* name, bool required = true) {
  return in(name, P::kString, required, R::kValue, C::kNonEmptyString);
}
Param out(const char* name, P type) { return Param{name, type, false}; }

struct Builtin {
  ActionKind kind;
  ActionSignature sig;
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> kAll = [] {
    std::vector<Builtin> b;
    b.push_back({ActionKind::kLog,
                 {"log", {in("message", P::kAny, true), in("level", P::kString, false, R::kValue, C::kLogLevel)}, {}}});
    b.push_back({ActionKind::kCreateRecord,
                 {"create_record",
                  {name_in("table"), in("values", P::kObject), name_in("while_holding", false)},
                  {out("record", P::kRecord), out("sys_id", P::kString)}}});
    b.push_back({ActionKind::kUpdateRecord,
                 {"update_record",
                  {name_in("table"), name_in("sys_id"), in("values", P::kObject), name_in("while_holding", false)},
                  {out("record", P::kRecord)}}});
    b.push_back({ActionKind::kDeleteRecord,
                 {"delete_record",
                  {name_in("table"), name_in("sys_id"), name_in("while_holding", false)},
                  {out("deleted", P::kBoolean)}}});
    b.push_back({ActionKind::kLookUpRecord,
                 {"look_up_record",
                  {name_in("table"), in("condition", P::kObject, false, R::kCondition), in("order_by", P::kString)},
                  {out("record", P::kRecord), out("found", P::kBoolean)}}});
    b.push_back({ActionKind::kLookUpRecords,
                 {"look_up_records",
                  {name_in("table"), in("condition", P::kObject, false, R::kCondition), in("order_by", P::kString),
                   in("limit", P::kInteger, false, R::kValue, C::kNonNegativeInteger)},
                  {out("records", P::kArray), out("count", P::kInteger)}}});
    b.push_back({ActionKind::kSetVariables,
                 {"set_variables", {in("values", P::kObject, true, R::kAssignments)}, {}}});
    b.push_back({ActionKind::kLock,
                 {"lock",
                  {name_in("key"), in("max_duration", P::kAny, false, R::kDuration, C::kPositiveDuration),
                   in("max_attempts", P::kInteger, false, R::kValue, C::kPositiveInteger),
                   in("delay", P::kAny, false, R::kDuration),
                   in("weight", P::kInteger, false, R::kValue, C::kPositiveInteger)},
                  {out("result", P::kString), out("state", P::kString), out("token", P::kInteger),
                   out("attempts", P::kInteger), out("waited_ms", P::kInteger)}}});
    b.push_back({ActionKind::kUnlock, {"unlock", {name_in("key")}, {out("released", P::kBoolean)}}});
    b.push_back({ActionKind::kWait, {"wait", {in("duration", P::kAny, true, R::kDuration)}, {}}});
    b.push_back({ActionKind::kWaitForCondition,
                 {"wait_for_condition",
                  {name_in("table"), name_in("sys_id"), in("condition", P::kObject, true, R::kCondition),
                   in("timeout", P::kAny, false, R::kDuration)},
                  {out("record", P::kRecord), out("timed_out", P::kBoolean)}}});
    b.push_back({ActionKind::kCallSubflow,
                 {"call_subflow", {in("subflow", P::kString, true, R::kCallee), in("inputs", P::kObject)}, {}}});
    b.push_back({ActionKind::kStartFlow,
                 {"start_flow",
                  {name_in("flow"), in("inputs", P::kObject)},
                  {out("context_id", P::kString), out("skipped", P::kBoolean)}}});
    b.push_back({ActionKind::kFireEvent,
                 {"fire_event", {name_in("name"), in("payload", P::kAny)}, {}}});
    b.push_back({ActionKind::kAssignOutputs,
                 {"assign_outputs", {in("values", P::kObject, true, R::kAssignments)}, {}}});
    b.push_back({ActionKind::kFail, {"fail", {in("message", P::kAny, true)}, {}}});
    return b;
  }();
  return kAll;
}

}  // namespace

const ActionSignature* find_builtin(std::string_view name, ActionKind* kind) {
  for (const Builtin& b : builtins()) {
    if (b.sig.name == name) {
      if (kind) *kind = b.kind;
      return &b.sig;
    }
  }
  return nullptr;
}

const ActionSignature& builtin_signature(ActionKind kind) {
  for (const Builtin& b : builtins()) {
    if (b.kind == kind) return b.sig;
  }
  static const ActionSignature kNone{"?", {}, {}};
  return kNone;
}

std::string_view builtin_name(ActionKind kind) { return builtin_signature(kind).name; }

const InputParam* builtin_input(ActionKind kind, std::string_view name) {
  for (const InputParam& p : builtin_signature(kind).inputs) {
    if (p.param.name == name) return &p;
  }
  return nullptr;
}

std::string check_builtin_input(ActionKind kind, std::string_view name, const Value& v) {
  const InputParam* p = builtin_input(kind, name);
  return p ? check_input_value(name, p->param.type, p->check, v) : std::string();
}

}  // namespace flowrt
