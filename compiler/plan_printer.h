// A compiled plan as JSON, for `flowrt plan`: units, steps, and how each pill was resolved
// (root, slot, path), so a user can see what the compiler made of a definition.
#pragma once

#include "plans/plan.h"
#include "plans/value.h"

namespace flowrt {

Value plan_to_value(const Plan& plan);

}  // namespace flowrt
