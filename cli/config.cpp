#include "cli/config.h"

#include <filesystem>

#include "compiler/loader.h"
#include "plans/value_json.h"

namespace flowrt::cli {

Result<RunConfig> read_config(const std::string& path, bool must_exist) {
  RunConfig config;
  config.engine.virtual_clock = true;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (must_exist) return Error{path + ": no such file"};
    return config;
  }
  Result<std::string> text = read_file(path, 16u << 20);
  if (!text) return Error{path + ": " + text.message()};
  Value doc;
  JsonParseError perr;
  if (!parse_json(*text, &doc, &perr)) return Error{path + ": " + perr.describe()};
  if (!doc.is_object()) return Error{path + ": /: config must be an object"};
  for (const auto& m : doc.members()) {
    const std::string_view key = m.key.as_string();
    if (key != "properties" && key != "locks" && key != "start_time") {
      return Error{path + ": /" + std::string(key) + ": unknown config key (expected properties, locks, start_time)"};
    }
  }
  const Value& props = doc["properties"];
  if (!props.is_null() && !props.is_object()) return Error{path + ": /properties: must be an object"};
  for (const auto& m : props.members()) {
    Status s = set_property(&config.engine.properties, m.key.as_string(), m.value);
    if (!s) return Error{path + ": /properties/" + std::string(m.key.as_string()) + ": " + s.message()};
  }
  const Value& locks = doc["locks"];
  if (!locks.is_null() && !locks.is_object()) return Error{path + ": /locks: must be an object"};
  for (const auto& m : locks.members()) {
    const std::string p = path + ": /locks/" + std::string(m.key.as_string());
    const Value& limit = m.value["limit"];
    if (!m.value.is_object() || !limit.is_int() || limit.as_int() < 1) {
      return Error{p + ": a lock needs {\"limit\": N} with N >= 1"};
    }
    config.engine.lock_limits[std::string(m.key.as_string())] = limit.as_int();
  }
  if (const Value* start = doc.find("start_time")) {
    Result<TimeMs> t = start->is_string() ? parse_time(start->as_string()) : Result<TimeMs>(Error{"must be a time string"});
    if (!t) return Error{path + ": /start_time: " + t.message()};
    config.engine.start_time = *t;
  }
  return config;
}

}  // namespace flowrt::cli
