#include "plans/time.h"

#include <charconv>
#include <chrono>
#include <cstdio>

namespace flowrt {
namespace {

// Days since 1970-01-01 for a civil date (proleptic Gregorian), and back.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

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

}  // namespace

void append_time(TimeMs t, std::string& out) {
  int64_t days = t >= 0 ? t / 86400000 : -((-t + 86399999) / 86400000);
  int64_t ms_of_day = t - days * 86400000;
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  put_digits(out, y, 4);
  out.push_back('-');
  put_digits(out, m, 2);
  out.push_back('-');
  put_digits(out, d, 2);
  out.push_back('T');
  put_digits(out, ms_of_day / 3600000, 2);
  out.push_back(':');
  put_digits(out, ms_of_day / 60000 % 60, 2);
  out.push_back(':');
  put_digits(out, ms_of_day / 1000 % 60, 2);
  out.push_back('.');
  put_digits(out, ms_of_day % 1000, 3);
  out.push_back('Z');
}

std::string format_time(TimeMs t) {
  std::string s;
  s.reserve(24);
  append_time(t, s);
  return s;
}

Result<TimeMs> parse_time(std::string_view s) {
  auto bad = [&] {
    return Error{"'" + std::string(s.substr(0, 64)) + "' is not a time (expected ISO 8601 such as 2026-01-01T09:00:00Z)"};
  };
  size_t pos = 0;
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, ms = 0;
  if (!read_int(s, pos, 4, &y) || pos >= s.size() || s[pos++] != '-' || !read_int(s, pos, 2, &mo) ||
      pos >= s.size() || s[pos++] != '-' || !read_int(s, pos, 2, &d)) {
    return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return bad();
  int64_t offset_ms = 0;
  if (pos < s.size()) {
    if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ') return bad();
    ++pos;
    if (!read_int(s, pos, 2, &h) || pos >= s.size() || s[pos++] != ':' || !read_int(s, pos, 2, &mi)) return bad();
    if (pos < s.size() && s[pos] == ':') {
      ++pos;
      if (!read_int(s, pos, 2, &sec)) return bad();
      if (pos < s.size() && s[pos] == '.') {
        ++pos;
        size_t start = pos;
        int64_t frac = 0;
        int digits = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
          if (digits < 3) {
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
    if (h > 23 || mi > 59 || sec > 60) return bad();
    if (pos >= s.size()) return bad();  // a time of day needs a zone
    if (s[pos] == 'Z' || s[pos] == 'z') {
      ++pos;
    } else if (s[pos] == '+' || s[pos] == '-') {
      int sign = s[pos] == '-' ? -1 : 1;
      ++pos;
      int64_t oh, om;
      if (!read_int(s, pos, 2, &oh)) return bad();
      if (pos < s.size() && s[pos] == ':') ++pos;
      if (!read_int(s, pos, 2, &om)) return bad();
      offset_ms = sign * (oh * 3600000 + om * 60000);
    } else {
      return bad();
    }
  }
  if (pos != s.size()) return bad();
  int64_t days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return days * 86400000 + h * 3600000 + mi * 60000 + sec * 1000 + ms - offset_ms;
}

Result<DurationMs> parse_duration(std::string_view s) {
  auto bad = [&] {
    return Error{"'" + std::string(s.substr(0, 64)) +
                 "' is not a duration (expected e.g. \"250ms\", \"30s\", \"5m\", \"1h\", \"2d\" or milliseconds)"};
  };
  if (s.empty()) return bad();
  DurationMs total = 0;
  size_t pos = 0;
  bool all_digits = true;
  for (char c : s) all_digits = all_digits && c >= '0' && c <= '9';
  if (all_digits) {
    int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc()) return bad();
    return v;
  }
  while (pos < s.size()) {
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return bad();
    int64_t n = 0;
    auto r = std::from_chars(s.data() + start, s.data() + pos, n);
    if (r.ec != std::errc() || n > (int64_t{1} << 40)) return bad();
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
    total += n * unit;
  }
  return total;
}

Result<DurationMs> parse_duration(const Value& v) {
  if (v.is_int()) {
    if (v.as_int() < 0) return Error{"a duration cannot be negative"};
    return v.as_int();
  }
  if (v.is_double()) {
    double d = v.as_double();
    if (!(d >= 0 && d < 1e15)) return Error{"a duration must be a non-negative number of milliseconds"};
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
