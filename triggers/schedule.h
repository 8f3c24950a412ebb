// Schedule arithmetic for schedule triggers (SPEC section 3), on the engine clock.
#pragma once

#include <optional>

#include "plans/trigger_spec.h"

namespace flowrt {

// The first occurrence of `spec` at or after `from`, given the flow was activated at
// `activated`; nullopt when there is none (an `at` in the past, or an occurrence after
// kMaxTime, the latest engine time).
// - at: the one time given.
// - every with start: start + k * every, for the smallest k giving a time >= from.
// - every without start: activated + k * every, k >= 1.
std::optional<TimeMs> next_occurrence(const TriggerSpec& spec, TimeMs activated, TimeMs from);

}  // namespace flowrt
