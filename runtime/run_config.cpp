#include "runtime/run_config.h"

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/properties.h"

namespace flowrt {

Result<EngineOptions> run_config_from_value(const Value& doc, const std::string& name) {
  EngineOptions options;
  options.virtual_clock = true;
  if (!doc.is_object()) return Error{name + ": /: config must be an object"};
  for (const auto& m : doc.members()) {
    const std::string_view key = m.key.as_string();
    if (key != "properties" && key != "locks" && key != "start_time" && key != "$schema") {
      return Error{name + ": /" + std::string(key) +
                   ": unknown config key (expected properties, locks, start_time, $schema)"};
    }
  }
  // "$schema" names the JSON Schema editors check the file with (schemas/config.schema.json).
  if (const Value* schema = doc.find("$schema"); schema && !schema->is_string()) {
    return Error{name + ": /$schema: must be a string (the URI or path of a JSON Schema), not " + schema->to_json()};
  }
  const Value& props = doc["properties"];
  if (!props.is_null() && !props.is_object()) return Error{name + ": /properties: must be an object"};
  for (const auto& m : props.members()) {
    Status s = set_property(&options.properties, m.key.as_string(), m.value);
    if (!s) return Error{name + ": /properties/" + std::string(m.key.as_string()) + ": " + s.message()};
  }
  const Value& locks = doc["locks"];
  if (!locks.is_null() && !locks.is_object()) return Error{name + ": /locks: must be an object"};
  for (const auto& m : locks.members()) {
    const Value& limit = m.value["limit"];
    if (!m.value.is_object() || !limit.is_int() || limit.as_int() < 1) {
      return Error{name + ": /locks/" + std::string(m.key.as_string()) + ": a lock needs {\"limit\": N} with N >= 1"};
    }
    for (const auto& field : m.value.members()) {
      if (field.key.as_string() != "limit") {
        return Error{name + ": /locks/" + std::string(m.key.as_string()) + "/" + std::string(field.key.as_string()) +
                     ": unknown lock property (expected limit)"};
      }
    }
    options.lock_limits[std::string(m.key.as_string())] = limit.as_int();
  }
  if (const Value* start = doc.find("start_time")) {
    Result<TimeMs> t = start->is_string() ? parse_time(start->as_string()) : Result<TimeMs>(Error{"must be a time string"});
    if (!t) return Error{name + ": /start_time: " + t.message()};
    options.start_time = *t;
  }
  return options;
}

Result<EngineOptions> parse_run_config(std::string_view text, const std::string& name) {
  Value doc;
  JsonParseError error;
  if (!parse_json(text, &doc, &error)) return Error{name + ": " + error.describe()};
  return run_config_from_value(doc, name);
}

}  // namespace flowrt
