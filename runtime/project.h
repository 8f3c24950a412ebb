// Projects: a directory of flows as `flowrt run DIR` reads it (SPEC section 12), for the
// command line and for programs and tests that embed the engine, so that the two can never
// differ. A project directory holds:
//
//   flows/         definitions (*.json, read recursively)
//   config.json    optional: "properties", "locks" (limits), "start_time" of the clock
//   events.jsonl   optional: the events file (runtime/harness.h applies it)
//
// read_project finds the files and reads the config into EngineOptions (a virtual clock);
// open_project builds an Engine from those options and loads every definition, all or
// nothing. Errors are values: every problem at once, each as file: /json/pointer: message.
// Free functions; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "flowrt/compiler/diagnostics.h"
#include "flowrt/plans/result.h"
#include "flowrt/runtime/engine.h"
#include "flowrt/runtime/engine_options.h"

namespace flowrt {

// Where a project's files are.
struct ProjectFiles {
  std::string flows;   // definitions: a directory (read recursively) or one file
  std::string config;  // config.json; "" for the defaults
  std::string events;  // the events file; "" when there is none
};

// A project read but not opened: its files and the engine options its config gives.
// Change `options` (a real clock, a log level) before open_project to run it otherwise.
struct Project {
  ProjectFiles files;
  EngineOptions options;
};

// The files of project directory `dir`: dir/flows, and dir/config.json and dir/events.jsonl
// when they exist. Fails when `dir` is not a directory.
Result<ProjectFiles> project_files(const std::string& dir);

// Reads the config named by `files` (the defaults when none): a virtual clock starting at
// 2026-01-01T00:00:00Z unless start_time says otherwise, and the config's properties and
// lock limits. A config named but missing is an error.
Result<Project, Diagnostics> read_project(ProjectFiles files);
// project_files(dir), then read_project.
Result<Project, Diagnostics> read_project(const std::string& dir);

// Builds an engine from project.options and loads every definition under
// project.files.flows, active flows activated. Nothing of the events file is applied.
Result<std::unique_ptr<Engine>, Diagnostics> open_project(const Project& project);
// read_project(dir), then open_project: what `flowrt run DIR` does before it applies
// DIR/events.jsonl.
Result<std::unique_ptr<Engine>, Diagnostics> open_project(const std::string& dir);

}  // namespace flowrt
