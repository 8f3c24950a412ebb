#include "runtime/run_config.h"

#include <filesystem>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/properties.h"
#include "store/store.h"

namespace flowrt {

namespace {

// "store": "memory", {"type": "memory"}, {"type": "sqlite", "path": FILE} (a relative path
// is taken from the config file's folder) or {"type": "postgresql", "url": URL}.
void read_store(const Value& store, const std::string& name, EngineOptions* options, Diagnostics* diags) {
  if (store == Value("memory")) {
    options->store = "memory";
    return;
  }
  const std::string expected =
      "must be \"memory\", {\"type\": \"sqlite\", \"path\": FILE} or {\"type\": \"postgresql\", \"url\": URL}";
  if (!store.is_object()) {
    diags->add(name, "/store", expected + ", not " + shown_value(store));
    return;
  }
  for (const auto& m : store.members()) {
    const std::string_view key = m.key.as_string();
    if (key != "type" && key != "path" && key != "url") {
      diags->add(name, pointer_append("/store", key), "unknown store key (expected type, path, url)");
    }
  }
  const Value& type = store["type"];
  if (type == Value("memory")) {
    if (store.find("path")) diags->add(name, "/store/path", "the memory store has no file");
    if (store.find("url")) diags->add(name, "/store/url", "the memory store has no database");
    options->store = "memory";
    return;
  }
  if (type == Value("postgresql")) {
    if (store.find("path")) diags->add(name, "/store/path", "the postgresql store has no file (it takes url)");
    const Value& url = store["url"];
    if (!url.is_string() || !is_postgres_url(url.as_string())) {
      diags->add(name, "/store/url",
                 "the postgresql store needs \"url\": its connection URL, postgresql://USER@HOST:PORT/DBNAME");
      return;
    }
    options->store = "postgresql";
    options->store_url = std::string(url.as_string());
    return;
  }
  if (type != Value("sqlite")) {
    diags->add(name, "/store/type", "must be \"memory\", \"sqlite\" or \"postgresql\", not " + shown_value(type));
    return;
  }
  if (store.find("url")) diags->add(name, "/store/url", "the sqlite store has no url (it takes path)");
  const Value& path = store["path"];
  if (!path.is_string() || path.as_string().empty()) {
    diags->add(name, "/store/path", "the sqlite store needs \"path\": the file (relative to the config's folder)");
    return;
  }
  std::filesystem::path file(std::string(path.as_string()));
  if (file.is_relative()) file = std::filesystem::path(name).parent_path() / file;
  options->store = "sqlite";
  options->data_file = file.string();
}

}  // namespace

void use_data_store(const std::string& data, EngineOptions* options) {
  if (is_postgres_url(data)) {
    options->store = "postgresql";
    options->store_url = data;
  } else {
    options->store = "sqlite";
    options->data_file = data;
  }
}

bool read_run_config(const Value& doc, const std::string& name, EngineOptions* out, Diagnostics* diags) {
  const size_t before = diags->reported();
  EngineOptions options = *out;
  options.virtual_clock = true;
  if (!doc.is_object()) {
    diags->add(name, "", "config must be an object");
    return false;
  }
  for (const auto& m : doc.members()) {
    const std::string_view key = m.key.as_string();
    // "server" belongs to `flowrt serve`, which reads it (server/server_config.h).
    if (key != "properties" && key != "locks" && key != "start_time" && key != "store" && key != "server" &&
        key != "$schema") {
      diags->add(name, pointer_append("", key),
                 "unknown config key (expected properties, locks, start_time, store, server, $schema)");
    }
  }
  // "$schema" names the JSON Schema editors check the file with (schemas/config.schema.json).
  if (const Value* schema = doc.find("$schema"); schema && !schema->is_string()) {
    diags->add(name, "/$schema", "must be a string (the URI or path of a JSON Schema), not " + shown_value(*schema));
  }
  const Value& props = doc["properties"];
  if (!props.is_null() && !props.is_object()) diags->add(name, "/properties", "must be an object");
  for (const auto& m : props.members()) {
    Status s = set_property(&options.properties, m.key.as_string(), m.value);
    if (!s) diags->add(name, pointer_append("/properties", m.key.as_string()), s.message());
  }
  const Value& locks = doc["locks"];
  if (!locks.is_null() && !locks.is_object()) diags->add(name, "/locks", "must be an object");
  for (const auto& m : locks.members()) {
    const std::string lock = pointer_append("/locks", m.key.as_string());
    for (const auto& field : m.value.members()) {
      if (field.key.as_string() != "limit") {
        diags->add(name, pointer_append(lock, field.key.as_string()), "unknown lock property (expected limit)");
      }
    }
    const Value& limit = m.value["limit"];
    if (!m.value.is_object() || !limit.is_int() || limit.as_int() < 1) {
      diags->add(name, lock, "a lock needs {\"limit\": N} with N >= 1");
      continue;
    }
    options.lock_limits[std::string(m.key.as_string())] = limit.as_int();
  }
  if (const Value* start = doc.find("start_time")) {
    Result<TimeMs> t = start->is_string() ? parse_time(start->as_string()) : Result<TimeMs>(Error{"must be a time string"});
    if (t) {
      options.start_time = *t;
    } else {
      diags->add(name, "/start_time", t.message());
    }
  }
  if (const Value* store = doc.find("store")) read_store(*store, name, &options, diags);
  if (diags->reported() != before) return false;
  *out = std::move(options);
  return true;
}

bool read_run_config_text(std::string_view text, const std::string& name, EngineOptions* options, Diagnostics* diags) {
  Value doc;
  JsonParseError error;
  if (!parse_json(text, &doc, &error)) {
    diags->add(name, error.pointer, error.describe());
    return false;
  }
  return read_run_config(doc, name, options, diags);
}

Result<EngineOptions> run_config_from_value(const Value& doc, const std::string& name) {
  EngineOptions options;
  Diagnostics diags;
  if (!read_run_config(doc, name, &options, &diags)) return Error{diags.describe()};
  return options;
}

Result<EngineOptions> parse_run_config(std::string_view text, const std::string& name) {
  EngineOptions options;
  Diagnostics diags;
  if (!read_run_config_text(text, name, &options, &diags)) return Error{diags.describe()};
  return options;
}

}  // namespace flowrt
