// The custom C++ action types the events fuzz target registers, one per way user code can
// end a step:
//   fz.outputs  {x: any} -> {y: x, n: 1}      returns outputs (and one undeclared, dropped)
//   fz.throw    {why: string}                  throws std::runtime_error
//   fz.error    {why: string}                  returns an Error
//   fz.write    {table, n, hold?} -> {sys_id}  writes a record through host(), fenced by the
//                                              lock `hold` when given (may fire triggers)
// All return at once: none blocks, so the watchdog never has to give up on one.
#pragma once

#include "runtime/engine.h"

namespace flowrt::fuzz {

// Registers the four types; aborts if the engine refuses one (a bug in the target).
void register_fuzz_actions(Engine& engine);

}  // namespace flowrt::fuzz
