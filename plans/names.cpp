// Names of the plan enums as they appear in definitions and records.
#include <array>
#include <utility>

#include "plans/plan.h"

namespace flowrt {
namespace {

constexpr std::array<std::pair<std::string_view, CompareOp>, 16> kOps{{
    {"eq", CompareOp::kEq}, {"ne", CompareOp::kNe}, {"lt", CompareOp::kLt}, {"le", CompareOp::kLe},
    {"gt", CompareOp::kGt}, {"ge", CompareOp::kGe}, {"in", CompareOp::kIn}, {"not_in", CompareOp::kNotIn},
    {"contains", CompareOp::kContains}, {"starts_with", CompareOp::kStartsWith},
    {"ends_with", CompareOp::kEndsWith}, {"is_empty", CompareOp::kIsEmpty},
    {"is_not_empty", CompareOp::kIsNotEmpty}, {"changes", CompareOp::kChanges},
    {"changes_to", CompareOp::kChangesTo}, {"changes_from", CompareOp::kChangesFrom},
}};

constexpr std::array<std::pair<std::string_view, TransformKind>, 12> kTransforms{{
    {"add", TransformKind::kAdd}, {"sub", TransformKind::kSub}, {"mul", TransformKind::kMul},
    {"div", TransformKind::kDiv}, {"mod", TransformKind::kMod}, {"upper", TransformKind::kUpper},
    {"lower", TransformKind::kLower}, {"trim", TransformKind::kTrim}, {"length", TransformKind::kLength},
    {"default", TransformKind::kDefault}, {"json", TransformKind::kJson}, {"not", TransformKind::kNot},
}};

constexpr std::array<std::pair<std::string_view, ParamType>, 8> kParamTypes{{
    {"string", ParamType::kString}, {"integer", ParamType::kInteger}, {"number", ParamType::kNumber},
    {"boolean", ParamType::kBoolean}, {"object", ParamType::kObject}, {"array", ParamType::kArray},
    {"record", ParamType::kRecord}, {"any", ParamType::kAny},
}};

template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& table, E e) {
  for (const auto& [name, value] : table) {
    if (value == e) return name;
  }
  return "?";
}

template <class E, size_t N>
bool parse_name(const std::array<std::pair<std::string_view, E>, N>& table, std::string_view name, E* out) {
  for (const auto& [n, value] : table) {
    if (n == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string_view op_name(CompareOp op) { return name_of(kOps, op); }
bool parse_op(std::string_view name, CompareOp* op) { return parse_name(kOps, name, op); }
bool op_needs_previous(CompareOp op) {
  return op == CompareOp::kChanges || op == CompareOp::kChangesTo || op == CompareOp::kChangesFrom;
}
bool op_takes_value(CompareOp op) {
  return op != CompareOp::kIsEmpty && op != CompareOp::kIsNotEmpty && op != CompareOp::kChanges;
}

std::string_view transform_name(TransformKind k) { return name_of(kTransforms, k); }
bool parse_transform(std::string_view name, TransformKind* k) { return parse_name(kTransforms, name, k); }
bool transform_takes_argument(TransformKind k) {
  switch (k) {
    case TransformKind::kAdd:
    case TransformKind::kSub:
    case TransformKind::kMul:
    case TransformKind::kDiv:
    case TransformKind::kMod:
    case TransformKind::kDefault: return true;
    default: return false;
  }
}

std::string_view param_type_name(ParamType t) { return name_of(kParamTypes, t); }
bool parse_param_type(std::string_view name, ParamType* t) { return parse_name(kParamTypes, name, t); }

bool value_fits(const Value& v, ParamType t) {
  if (v.is_null()) return true;
  switch (t) {
    case ParamType::kString: return v.is_string();
    case ParamType::kInteger: return v.is_int() || (v.is_double() && v.as_double() == static_cast<double>(v.as_int()));
    case ParamType::kNumber: return v.is_number();
    case ParamType::kBoolean: return v.is_bool();
    case ParamType::kObject: return v.is_object();
    case ParamType::kArray: return v.is_array();
    case ParamType::kRecord: return v.is_object();
    case ParamType::kAny: return true;
  }
  return false;
}

std::string_view unit_type_name(UnitType t) {
  switch (t) {
    case UnitType::kFlow: return "flow";
    case UnitType::kSubflow: return "subflow";
    case UnitType::kAction: return "action";
  }
  return "?";
}

std::string_view trigger_type_name(TriggerType t) {
  switch (t) {
    case TriggerType::kRecord: return "record";
    case TriggerType::kSchedule: return "schedule";
    case TriggerType::kEvent: return "event";
    case TriggerType::kApi: return "api";
  }
  return "?";
}

std::string_view when_name(RecordWhen w) {
  switch (w) {
    case RecordWhen::kCreated: return "created";
    case RecordWhen::kUpdated: return "updated";
    case RecordWhen::kCreatedOrUpdated: return "created_or_updated";
    case RecordWhen::kDeleted: return "deleted";
  }
  return "?";
}

std::string_view run_option_name(RunOption r) {
  switch (r) {
    case RunOption::kAlways: return "always";
    case RunOption::kOnce: return "once";
    case RunOption::kForEachUniqueChange: return "for_each_unique_change";
    case RunOption::kForEveryUpdate: return "for_every_update";
  }
  return "?";
}

std::string_view operation_name(RecordOperation op) {
  switch (op) {
    case RecordOperation::kInsert: return "insert";
    case RecordOperation::kUpdate: return "update";
    case RecordOperation::kDelete: return "delete";
  }
  return "?";
}

bool TriggerSpec::listens_to(RecordOperation op) const {
  if (type != TriggerType::kRecord) return false;
  switch (when) {
    case RecordWhen::kCreated: return op == RecordOperation::kInsert;
    case RecordWhen::kUpdated: return op == RecordOperation::kUpdate;
    case RecordWhen::kCreatedOrUpdated: return op == RecordOperation::kInsert || op == RecordOperation::kUpdate;
    case RecordWhen::kDeleted: return op == RecordOperation::kDelete;
  }
  return false;
}

int ActionStep::input_index(std::string_view name) const {
  for (size_t i = 0; i < input_names.size(); ++i) {
    if (input_names[i].as_string() == name) return static_cast<int>(i);
  }
  return -1;
}

const Template* ActionStep::input(std::string_view name) const {
  int i = input_index(name);
  return i < 0 ? nullptr : &inputs[static_cast<size_t>(i)];
}

}  // namespace flowrt
