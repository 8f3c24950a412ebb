// flowrt's front door for programs that embed the engine: #include <flowrt/engine.h>.
//
//   Engine          the engine: definitions, record operations, events, the clock, and
//                   context records (runtime/engine.h)
//   EngineOptions   how an engine is built (runtime/engine_options.h)
//   open_project    a project directory opened exactly as `flowrt run DIR` opens it
//                   (runtime/project.h)
//   Harness         applies an events file, as `flowrt run` does (runtime/harness.h)
//   CustomActionType  C++ action types for Engine::register_action (actions/custom_action.h)
//
// GoogleTest users include <flowrt/testing/flow_test.h> instead (it includes this). Every
// installed header is listed in docs/ARCHITECTURE.md ("The public headers").
#pragma once

#include "flowrt/actions/custom_action.h"
#include "flowrt/runtime/engine.h"
#include "flowrt/runtime/engine_options.h"
#include "flowrt/runtime/harness.h"
#include "flowrt/runtime/project.h"
