// ActionRegistry: the custom C++ action types an engine knows (Engine::register_action),
// as the compiler looks them up (ActionTypeLookup) and the interpreter runs them. Internal
// to the engine; users register types through Engine.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "actions/action.h"
#include "actions/custom_action.h"
#include "compiler/signatures.h"

namespace flowrt {

// The registry of custom action types. Registration takes a lock; looking a type up by
// index (what a running step does) takes none. Types cannot be removed or replaced.
class ActionRegistry final : public ActionTypeLookup {
 public:
  static constexpr size_t kCapacity = 4096;

  ActionRegistry();
  ~ActionRegistry() override;

  // Fails when the name is invalid, is a built-in action, or is already registered.
  Status add(CustomActionType type);

  const ActionSignature* find(std::string_view name, uint32_t* index) const override;
  // The Action that runs type `index`, or nullptr.
  const Action* action(uint32_t index) const;

 private:
  struct Entry;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, uint32_t> by_name_;  // guarded by mu_
  std::array<std::atomic<const Entry*>, kCapacity> entries_{};  // published after construction
  std::atomic<uint32_t> size_{0};
};

}  // namespace flowrt
