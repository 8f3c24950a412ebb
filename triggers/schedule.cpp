#include "triggers/schedule.h"

namespace flowrt {

std::optional<TimeMs> next_occurrence(const TriggerSpec& spec, TimeMs activated, TimeMs from) {
  if (spec.type != TriggerType::kSchedule) return std::nullopt;
  if (!spec.repeating) {
    if (spec.start < from) return std::nullopt;
    return spec.start;
  }
  if (spec.every <= 0) return std::nullopt;
  const TimeMs origin = spec.has_start ? spec.start : activated + spec.every;
  if (from <= origin) return origin;
  const TimeMs k = (from - origin + spec.every - 1) / spec.every;
  return origin + k * spec.every;
}

}  // namespace flowrt
