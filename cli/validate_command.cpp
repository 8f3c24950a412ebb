// flowrt validate: compile every definition and print every error.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "compiler/loader.h"
#include "runtime/engine.h"

namespace flowrt::cli {

int validate_command(const std::vector<std::string>& raw) {
  ParsedArgs args = parse_args(raw, {});
  if (args.positional.empty()) throw UsageError{"validate needs at least one PATH"};
  Engine engine;
  Diagnostics diags;
  std::vector<Definition> defs = load_definitions(args.positional, &diags, engine.load_options());
  if (diags.empty()) diags = engine.load(args.positional);
  if (diags.empty()) {
    std::cout << defs.size() << " definitions, no errors\n";
    return 0;
  }
  for (const Diagnostic& d : diags.list()) std::cout << d.describe() << "\n";
  if (diags.omitted() > 0) std::cout << "... and " << diags.omitted() << " more errors\n";
  std::cout << diags.size() << (diags.size() == 1 ? " error\n" : " errors\n");
  return 1;
}

}  // namespace flowrt::cli
