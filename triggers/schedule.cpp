#include "triggers/schedule.h"

namespace flowrt {

std::optional<TimeMs> next_occurrence(const TriggerSpec& spec, TimeMs activated, TimeMs from) {
  if (spec.type != TriggerType::kSchedule) return std::nullopt;
  // Nothing occurs after the latest engine time; every step below stays within it, so
  // none can overflow whatever the caller passes.
  if (from > kMaxTime) return std::nullopt;
  if (!spec.repeating) {
    if (spec.start < from || spec.start > kMaxTime) return std::nullopt;
    return spec.start;
  }
  if (spec.every <= 0) return std::nullopt;
  TimeMs origin = spec.start;
  if (!spec.has_start) {
    if (activated > kMaxTime || spec.every > kMaxTime - activated) return std::nullopt;
    origin = activated + spec.every;
  }
  if (origin > kMaxTime || origin < kMinTime) return std::nullopt;  // no time the engine has
  if (from <= origin) return origin;
  const TimeMs k = (from - origin - 1) / spec.every + 1;  // the smallest k with origin + k * every >= from
  if (k > (kMaxTime - origin) / spec.every) return std::nullopt;
  return origin + k * spec.every;
}

}  // namespace flowrt
