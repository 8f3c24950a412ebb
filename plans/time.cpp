#include "plans/time.h"

#include <date/date.h>

#include <charconv>
#include <cmath>
#include <chrono>

#include "plans/value_json.h"

namespace flowrt {
namespace {

using Millis = std::chrono::milliseconds;

void put_digits(std::string& out, int64_t v, int width) {
  char buf[24];
  int n = 0;
  bool neg = v < 0;
  uint64_t u = neg ? static_cast<uint64_t>(-v) : static_cast<uint64_t>(v);
  do {
    buf[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u);
  while (n < width) buf[n++] = '0';
  if (neg) out.push_back('-');
  while (n) out.push_back(buf[--n]);
}

bool read_int(std::string_view s, size_t& pos, size_t digits, int64_t* out) {
  if (pos + digits > s.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < digits; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  pos += digits;
  *out = v;
  return true;
}

// The offending text, quoted, for messages (long texts are cut).
std::string quoted(std::string_view s) {
  constexpr size_t kShown = 64;
  std::string q = "\"";
  q += s.substr(0, kShown);
  if (s.size() > kShown) q += "...";
  q += '"';
  return q;
}

const std::string& max_duration_text() {
  static const std::string text = format_duration(kMaxDuration);
  return text;
}

Error duration_too_large(const std::string& shown) {
  return Error{"duration " + shown + " is too large: the maximum is " + max_duration_text()};
}

}  // namespace

std::string_view time_range_text() {
  return "the supported range is 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z";
}

TimeMs clamp_time(TimeMs t) { return t < kMinTime ? kMinTime : t > kMaxTime ? kMaxTime : t; }

TimeMs add_duration(TimeMs t, DurationMs d) {
  t = clamp_time(t);
  if (d <= 0) return t;
  return d >= kMaxTime - t ? kMaxTime : t + d;
}

Status check_time(TimeMs t) {
  if (t >= kMinTime && t <= kMaxTime) return Status::ok();
  return Error{"time " + std::to_string(t) + " (ms since 1970-01-01T00:00:00Z) is outside the engine's time range: " +
               std::string(time_range_text())};
}

void append_time(TimeMs t, std::string& out) {
  const date::sys_time<Millis> tp{Millis{clamp_time(t)}};
  const date::sys_days day = date::floor<date::days>(tp);
  const date::year_month_day ymd{day};
  const date::hh_mm_ss<Millis> tod{tp - day};
  put_digits(out, static_cast<int>(ymd.year()), 4);
  out.push_back('-');
  put_digits(out, static_cast<unsigned>(ymd.month()), 2);
  out.push_back('-');
  put_digits(out, static_cast<unsigned>(ymd.day()), 2);
  out.push_back('T');
  put_digits(out, tod.hours().count(), 2);
  out.push_back(':');
  put_digits(out, tod.minutes().count(), 2);
  out.push_back(':');
  put_digits(out, tod.seconds().count(), 2);
  out.push_back('.');
  put_digits(out, tod.subseconds().count(), 3);
  out.push_back('Z');
}

std::string format_time(TimeMs t) {
  std::string s;
  s.reserve(24);
  append_time(t, s);
  return s;
}

// The shape is read by hand (strictly: fixed digit counts, one of the listed zones); the
// calendar (which dates exist, days since the epoch) is the date library's. Its own parse
// is not used: it accepts one-digit fields and any offset (+99:99).
Result<TimeMs> parse_time(std::string_view s) {
  auto bad = [&] {
    return Error{quoted(s) + " is not a time (expected ISO 8601 such as 2026-01-01T09:00:00Z)"};
  };
  size_t pos = 0;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, ms = 0;
  if (!read_int(s, pos, 4, &y) || pos >= s.size() || s[pos++] != '-' || !read_int(s, pos, 2, &mo) ||
      pos >= s.size() || s[pos++] != '-' || !read_int(s, pos, 2, &d)) {
    return bad();
  }
  int64_t offset_minutes = 0;
  bool offset_real = true;
  if (pos < s.size()) {
    if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ') return bad();
    ++pos;
    if (!read_int(s, pos, 2, &h) || pos >= s.size() || s[pos++] != ':' || !read_int(s, pos, 2, &mi)) return bad();
    if (pos < s.size() && s[pos] == ':') {
      ++pos;
      if (!read_int(s, pos, 2, &sec)) return bad();
      if (pos < s.size() && s[pos] == '.') {
        ++pos;
        const size_t start = pos;
        int64_t frac = 0;
        int digits = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
          if (digits < 3) {  // finer than a millisecond is cut
            frac = frac * 10 + (s[pos] - '0');
            ++digits;
          }
          ++pos;
        }
        if (pos == start) return bad();
        while (digits < 3) {
          frac *= 10;
          ++digits;
        }
        ms = frac;
      }
    }
    if (pos >= s.size()) return bad();  // a time of day needs a zone
    if (s[pos] == 'Z' || s[pos] == 'z') {
      ++pos;
    } else if (s[pos] == '+' || s[pos] == '-') {
      const int64_t sign = s[pos] == '-' ? -1 : 1;
      ++pos;
      int64_t oh, om;
      if (!read_int(s, pos, 2, &oh)) return bad();
      if (pos < s.size() && s[pos] == ':') ++pos;
      if (!read_int(s, pos, 2, &om)) return bad();
      offset_real = oh <= 23 && om <= 59;
      offset_minutes = sign * (oh * 60 + om);
    } else {
      return bad();
    }
  }
  if (pos != s.size()) return bad();
  const date::year_month_day ymd{date::year{static_cast<int>(y)}, date::month{static_cast<unsigned>(mo)},
                                 date::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return Error{quoted(s) + " is not a real date"};
  if (h > 23 || mi > 59 || sec > 59) {
    return Error{quoted(s) + " is not a real time of day (hours run 00-23, minutes and seconds 00-59; the engine's "
                             "clock has no leap seconds)"};
  }
  if (!offset_real) return Error{quoted(s) + " has an offset that is not real (hours run 00-23, minutes 00-59)"};
  const date::sys_time<Millis> tp = date::sys_days{ymd} + std::chrono::hours{h} + std::chrono::minutes{mi} +
                                    std::chrono::seconds{sec} + Millis{ms} - std::chrono::minutes{offset_minutes};
  const TimeMs t = tp.time_since_epoch().count();
  if (t < kMinTime || t > kMaxTime) {
    return Error{quoted(s) + " is outside the engine's time range: " + std::string(time_range_text())};
  }
  return t;
}

Result<DurationMs> parse_duration(std::string_view s) {
  auto bad = [&] {
    return Error{quoted(s) + " is not a duration (expected e.g. \"250ms\", \"30s\", \"5m\", \"1h\", \"2d\" or milliseconds)"};
  };
  auto too_large = [&] { return duration_too_large(quoted(s)); };
  if (s.empty()) return bad();
  bool all_digits = true;
  for (char c : s) all_digits = all_digits && c >= '0' && c <= '9';
  if (all_digits) {
    int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && v > kMaxDuration)) return too_large();
    if (r.ec != std::errc()) return bad();
    return v;
  }
  // Each part is checked before it is added, and so is the sum: nothing can overflow.
  DurationMs total = 0;
  bool over = false;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return bad();
    const std::string_view digits = s.substr(start, pos - start);
    int64_t unit;
    if (s.substr(pos, 2) == "ms") {
      unit = 1;
      pos += 2;
    } else if (pos < s.size() && s[pos] == 's') {
      unit = 1000;
      ++pos;
    } else if (pos < s.size() && s[pos] == 'm') {
      unit = 60000;
      ++pos;
    } else if (pos < s.size() && s[pos] == 'h') {
      unit = 3600000;
      ++pos;
    } else if (pos < s.size() && s[pos] == 'd') {
      unit = 86400000;
      ++pos;
    } else {
      return bad();
    }
    if (over) continue;  // still read the rest: a malformed text is "not a duration"
    int64_t n = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (r.ec != std::errc() || n > kMaxDuration / unit || n * unit > kMaxDuration - total) {
      over = true;
      continue;
    }
    total += n * unit;
  }
  if (over) return too_large();
  return total;
}

Result<DurationMs> parse_duration(const Value& v) {
  if (v.is_int()) {
    if (v.as_int() < 0) return Error{"a duration cannot be negative"};
    if (v.as_int() > kMaxDuration) return duration_too_large(std::to_string(v.as_int()));
    return v.as_int();
  }
  if (v.is_double()) {
    const double d = v.as_double();
    if (!(d >= 0)) return Error{"a duration must be a non-negative number of milliseconds"};
    if (std::trunc(d) > static_cast<double>(kMaxDuration)) return duration_too_large(shown_value(v));
    return static_cast<DurationMs>(d);
  }
  if (v.is_string()) return parse_duration(v.as_string());
  return Error{std::string("a duration must be a string such as \"30s\" or an integer of milliseconds, not ") +
               std::string(type_name(v.type()))};
}

std::string format_duration(DurationMs d) {
  if (d == 0) return "0ms";
  std::string out;
  const struct { int64_t unit; const char* name; } units[] = {
      {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& u : units) {
    if (d >= u.unit) {
      out += std::to_string(d / u.unit);
      out += u.name;
      d %= u.unit;
    }
  }
  return out;
}

}  // namespace flowrt
