// flowrt validate: compile every definition and print every error, without running.
//
// `flowrt validate DIR`, DIR a project (it has flows/), reads the project exactly as
// `flowrt run DIR` does (runtime/project.h): config.json's properties and lock limits apply.
// Other PATHs (definition files or directories of them) are compiled with the defaults.
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "runtime/engine.h"
#include "runtime/flow_registry.h"
#include "runtime/engine_core.h"
#include "runtime/project.h"

namespace flowrt::cli {

bool is_project_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::is_directory(std::filesystem::path(path) / "flows", ec);
}

int validate_command(const CommandArgs& args) {
  if (args.positional.empty()) throw UsageError{"validate needs at least one PATH"};
  Diagnostics diags;
  size_t definitions = 0;
  if (args.positional.size() == 1 && is_project_dir(args.positional[0])) {
    // One call does what run does before it applies the events file: every error of the
    // config, or (the config read) every error of every definition, all at once.
    Result<Project, Diagnostics> project = read_project(args.positional[0]);
    if (!project) {
      diags = project.error();
    } else {
      // Checking never touches the project's data file (its store): the definitions alone.
      project->options.store = "memory";
      project->options.data_file.clear();
      Result<std::unique_ptr<Engine>, Diagnostics> opened = open_project(*project);
      if (opened) {
        definitions = (*opened)->core().flows.all_definitions().size();
      } else {
        diags = opened.error();
      }
    }
  } else {
    // Engine::load reports syntax and shape errors of some files together with the compile
    // errors of every definition that was read.
    Engine engine;
    diags = engine.load(args.positional);
    definitions = engine.core().flows.all_definitions().size();
  }
  if (diags.empty()) {
    std::cout << definitions << (definitions == 1 ? " definition" : " definitions") << ", no errors\n";
    return 0;
  }
  for (const Diagnostic& d : diags.list()) std::cout << d.describe() << "\n";
  if (diags.omitted() > 0) std::cout << "... and " << diags.omitted() << " more errors\n";
  std::cout << diags.size() << (diags.size() == 1 ? " error\n" : " errors\n");
  return 1;
}

}  // namespace flowrt::cli
