// Engine time and durations.
//
// Engine time is milliseconds since the Unix epoch (UTC), as an integer, within
// [kMinTime, kMaxTime]: 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z. Inside the
// engine -1 means "no time" (a context not started yet), so no real time is ever negative.
// Durations are written by users as "250ms", "30s", "5m", "1h", "2d", combinations such as
// "1h30m", or an integer count of milliseconds, and are at most kMaxDuration (36500d, one
// hundred years of 365 days). Deadlines are computed with add_duration, which saturates at
// kMaxTime, so no arithmetic on times or durations can wrap around. Free functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "flowrt/plans/result.h"
#include "flowrt/plans/value.h"

namespace flowrt {

using TimeMs = int64_t;      // a point on the engine clock
using DurationMs = int64_t;  // a span of engine time

inline constexpr TimeMs kMinTime = 0;                       // 1970-01-01T00:00:00.000Z
inline constexpr TimeMs kMaxTime = 253402300799999;         // 9999-12-31T23:59:59.999Z
inline constexpr DurationMs kMaxDuration = 3153600000000;   // 36500d
inline constexpr TimeMs kDefaultVirtualStart = 1767225600000;  // 2026-01-01T00:00:00Z

// "2026-01-01T00:00:00.000Z". A time outside [kMinTime, kMaxTime] prints as the nearer end.
std::string format_time(TimeMs t);
void append_time(TimeMs t, std::string& out);
// Accepts "YYYY-MM-DDTHH:MM[:SS[.fff]](Z|+HH:MM|-HH:MM|+HHMM|-HHMM)" and "YYYY-MM-DD"
// (midnight UTC). Refuses, naming the text: what is not that shape, a date or time of day
// that does not exist (2026-02-30, 23:59:60, offset +99:99), and an instant outside
// [kMinTime, kMaxTime].
Result<TimeMs> parse_time(std::string_view text);
// Ok when `t` is within [kMinTime, kMaxTime]; otherwise an error naming the range.
Status check_time(TimeMs t);
// "the supported range is 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"
std::string_view time_range_text();
// `t` brought into [kMinTime, kMaxTime].
TimeMs clamp_time(TimeMs t);
// t + d, saturating at kMaxTime (t is clamped first; a negative d adds nothing).
TimeMs add_duration(TimeMs t, DurationMs d);

// A duration from text or an integer number of milliseconds. Negative durations are
// errors; so are durations longer than kMaxDuration ("duration \"1000000000000d\" is too
// large: the maximum is 36500d"), checked for every unit and for the sum.
Result<DurationMs> parse_duration(std::string_view text);
Result<DurationMs> parse_duration(const Value& v);
inline Result<DurationMs> parse_duration(const char* text) { return parse_duration(std::string_view(text)); }
// "1h30m", "250ms", "0ms": the shortest exact spelling.
std::string format_duration(DurationMs d);

}  // namespace flowrt
