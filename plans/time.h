// Engine time and durations.
//
// Engine time is milliseconds since the Unix epoch (UTC), as an integer. Durations are
// written by users as "250ms", "30s", "5m", "1h", "2d", combinations such as "1h30m", or an
// integer count of milliseconds. Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "plans/result.h"
#include "plans/value.h"

namespace flowrt {

using TimeMs = int64_t;      // a point on the engine clock
using DurationMs = int64_t;  // a span of engine time

// "2026-01-01T00:00:00.000Z"
std::string format_time(TimeMs t);
void append_time(TimeMs t, std::string& out);
// Accepts "YYYY-MM-DDTHH:MM:SS[.fff](Z|+HH:MM|-HH:MM)" and "YYYY-MM-DD" (midnight UTC).
Result<TimeMs> parse_time(std::string_view text);

// A duration from text or an integer number of milliseconds. Negative durations are errors.
Result<DurationMs> parse_duration(std::string_view text);
Result<DurationMs> parse_duration(const Value& v);
inline Result<DurationMs> parse_duration(const char* text) { return parse_duration(std::string_view(text)); }
// "1h30m", "250ms", "0ms": the shortest exact spelling.
std::string format_duration(DurationMs d);

inline constexpr TimeMs kDefaultVirtualStart = 1767225600000;  // 2026-01-01T00:00:00Z

}  // namespace flowrt
