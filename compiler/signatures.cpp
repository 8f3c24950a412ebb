#include "compiler/signatures.h"

#include <array>

namespace flowrt {
namespace {

using P = ParamType;
using R = InputRole;

InputParam in(const char* name, P type, bool required = false, R role = R::kValue) {
  return InputParam{Param{name, type, required}, role};
}
Param out(const char* name, P type) { return Param{name, type, false}; }

struct Builtin {
  ActionKind kind;
  ActionSignature sig;
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> kAll = [] {
    std::vector<Builtin> b;
    b.push_back({ActionKind::kLog, {"log", {in("message", P::kAny, true), in("level", P::kString)}, {}}});
    b.push_back({ActionKind::kCreateRecord,
                 {"create_record",
                  {in("table", P::kString, true), in("values", P::kObject), in("while_holding", P::kString)},
                  {out("record", P::kRecord), out("sys_id", P::kString)}}});
    b.push_back({ActionKind::kUpdateRecord,
                 {"update_record",
                  {in("table", P::kString, true), in("sys_id", P::kString, true), in("values", P::kObject),
                   in("while_holding", P::kString)},
                  {out("record", P::kRecord)}}});
    b.push_back({ActionKind::kDeleteRecord,
                 {"delete_record",
                  {in("table", P::kString, true), in("sys_id", P::kString, true), in("while_holding", P::kString)},
                  {out("deleted", P::kBoolean)}}});
    b.push_back({ActionKind::kLookUpRecord,
                 {"look_up_record",
                  {in("table", P::kString, true), in("condition", P::kObject, false, R::kCondition),
                   in("order_by", P::kString)},
                  {out("record", P::kRecord), out("found", P::kBoolean)}}});
    b.push_back({ActionKind::kLookUpRecords,
                 {"look_up_records",
                  {in("table", P::kString, true), in("condition", P::kObject, false, R::kCondition),
                   in("order_by", P::kString), in("limit", P::kInteger)},
                  {out("records", P::kArray), out("count", P::kInteger)}}});
    b.push_back({ActionKind::kSetVariables,
                 {"set_variables", {in("values", P::kObject, true, R::kAssignments)}, {}}});
    b.push_back({ActionKind::kLock,
                 {"lock",
                  {in("key", P::kString, true), in("max_duration", P::kAny, false, R::kDuration),
                   in("max_attempts", P::kInteger), in("delay", P::kAny, false, R::kDuration),
                   in("weight", P::kInteger)},
                  {out("result", P::kString), out("state", P::kString), out("token", P::kInteger),
                   out("attempts", P::kInteger), out("waited_ms", P::kInteger)}}});
    b.push_back({ActionKind::kUnlock, {"unlock", {in("key", P::kString, true)}, {out("released", P::kBoolean)}}});
    b.push_back({ActionKind::kWait, {"wait", {in("duration", P::kAny, true, R::kDuration)}, {}}});
    b.push_back({ActionKind::kWaitForCondition,
                 {"wait_for_condition",
                  {in("table", P::kString, true), in("sys_id", P::kString, true),
                   in("condition", P::kObject, true, R::kCondition), in("timeout", P::kAny, false, R::kDuration)},
                  {out("record", P::kRecord), out("timed_out", P::kBoolean)}}});
    b.push_back({ActionKind::kCallSubflow,
                 {"call_subflow", {in("subflow", P::kString, true, R::kCallee), in("inputs", P::kObject)}, {}}});
    b.push_back({ActionKind::kStartFlow,
                 {"start_flow",
                  {in("flow", P::kString, true), in("inputs", P::kObject)},
                  {out("context_id", P::kString), out("skipped", P::kBoolean)}}});
    b.push_back({ActionKind::kFireEvent,
                 {"fire_event", {in("name", P::kString, true), in("payload", P::kAny)}, {}}});
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

}  // namespace flowrt
