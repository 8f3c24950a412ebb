// Custom C++ action types: running one (CustomActionRunner) and their registry.
#include "actions/custom_action.h"

#include <exception>
#include <mutex>

#include "actions/action_registry.h"

#include "compiler/definition.h"

namespace flowrt {

namespace {

// Runs a custom type: catches what it throws and puts its outputs in declared order.
// A call holds the type for as long as it runs, not the runner: an action the engine gave
// up on (runtime/watchdog.h) may return after the engine and its registry are gone.
class CustomActionRunner final : public Action {
 public:
  explicit CustomActionRunner(std::shared_ptr<const CustomActionType> type) : type_ptr_(std::move(type)) {}

  StepOutcome start(const StepCall& call) const override {
    const std::shared_ptr<const CustomActionType> hold = type_ptr_;  // `this` is not used past here
    const CustomActionType& type = *hold;
    CustomActionContext ctx(call);
    Result<Value> result = Error{""};
    try {
      result = type.run(ctx);
    } catch (const std::exception& e) {
      return StepOutcome::failed("action '" + type.name + "' threw: " + e.what());
    } catch (...) {
      return StepOutcome::failed("action '" + type.name + "' threw an exception");
    }
    if (!result) return StepOutcome::failed(result.message().empty() ? "action '" + type.name + "' failed" : result.message());
    const Value& produced = *result;
    if (!produced.is_null() && !produced.is_object()) {
      return StepOutcome::failed("action '" + type.name + "' returned " + std::string(type_name(produced.type())) +
                                 "; it must return an object of outputs");
    }
    std::vector<Member> outputs;
    outputs.reserve(type.outputs.size());
    for (const Param& p : type.outputs) {
      const Value& v = produced[p.name];
      if (!value_fits(v, p.type)) {
        return StepOutcome::failed("action '" + type.name + "' output '" + p.name + "' must be " +
                                   std::string(param_type_name(p.type)) + ", got " + std::string(type_name(v.type())));
      }
      outputs.push_back(Member{Value(std::string_view(p.name)), v});
    }
    return StepOutcome::done(Value::object(std::move(outputs)));
  }

 private:
  const std::shared_ptr<const CustomActionType> type_ptr_;
};

}  // namespace

struct ActionRegistry::Entry {
  explicit Entry(CustomActionType t)
      : type(std::make_shared<const CustomActionType>(std::move(t))), runner(type) {
    signature.name = type->name;
    for (const Param& p : type->inputs) signature.inputs.push_back(InputParam{p, InputRole::kValue});
    signature.outputs = type->outputs;
  }
  std::shared_ptr<const CustomActionType> type;
  ActionSignature signature;
  CustomActionRunner runner;
};

ActionRegistry::ActionRegistry() = default;

ActionRegistry::~ActionRegistry() {
  for (auto& e : entries_) delete e.load(std::memory_order_relaxed);
}

Status ActionRegistry::add(CustomActionType type) {
  if (!valid_id(type.name)) return Error{"action type name '" + type.name + "' must be 1 to 128 of A-Z a-z 0-9 _ . -"};
  if (find_builtin(type.name, nullptr)) return Error{"'" + type.name + "' is a built-in action"};
  if (!type.run) return Error{"action type '" + type.name + "' has no run function"};
  std::unique_lock lock(mu_);
  if (by_name_.count(type.name)) return Error{"action type '" + type.name + "' is already registered"};
  const uint32_t index = size_.load(std::memory_order_relaxed);
  if (index >= kCapacity) return Error{"more than " + std::to_string(kCapacity) + " action types"};
  by_name_.emplace(type.name, index);
  entries_[index].store(new Entry(std::move(type)), std::memory_order_release);
  size_.store(index + 1, std::memory_order_release);
  return Status::ok();
}

const ActionSignature* ActionRegistry::find(std::string_view name, uint32_t* index) const {
  std::shared_lock lock(mu_);
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return nullptr;
  if (index) *index = it->second;
  return &entries_[it->second].load(std::memory_order_acquire)->signature;
}

const Action* ActionRegistry::action(uint32_t index) const {
  if (index >= kCapacity) return nullptr;
  const Entry* e = entries_[index].load(std::memory_order_acquire);
  return e ? &e->runner : nullptr;
}

}  // namespace flowrt
