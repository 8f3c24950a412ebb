// flowrt plan: print the compiled plan of one flow.
#include <iostream>

#include "cli/commands.h"
#include "compiler/plan_printer.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/flow_slot.h"

namespace flowrt::cli {

int plan_command(const CommandArgs& args) {
  if (args.positional.empty()) throw UsageError{"plan needs at least one PATH"};
  if (!args.has("flow")) throw UsageError{"plan needs --flow ID"};
  Engine engine;
  Diagnostics diags = engine.load(args.positional);
  if (!diags.empty()) {
    for (const Diagnostic& d : diags.list()) std::cout << d.describe() << "\n";
    return 1;
  }
  const std::string id = args.get("flow");
  FlowSlot* slot = engine.core().flows.slot(id);
  if (!slot) {
    std::cerr << "flowrt plan: no flow '" << id << "'\n";
    return 1;
  }
  FlowRegistry::PlanResult plan = engine.core().flows.plan_for_test(id, engine.core().compile_options());
  if (!plan.plan) {
    std::cout << plan.error << "\n";
    return 1;
  }
  std::cout << to_pretty_json(plan_to_value(*plan.plan)) << "\n";
  return 0;
}

}  // namespace flowrt::cli
