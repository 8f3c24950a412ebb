#include "compiler/definition.h"

#include <algorithm>

#include "plans/value_json.h"

namespace flowrt {
namespace {

// `skip_schema` leaves out the top-level "$schema" key of a definition: it names the JSON
// Schema an editor checks the file with and is no part of the flow.
void canonical(const Value& v, std::string& out, bool skip_schema = false) {
  if (!v.is_object()) {
    if (!v.is_array()) {
      write_json(v, out);
      return;
    }
    out.push_back('[');
    bool first = true;
    for (const Value& item : v.items()) {
      if (!first) out.push_back(',');
      first = false;
      canonical(item, out);
    }
    out.push_back(']');
    return;
  }
  const MemberRange members = v.members();
  std::vector<size_t> sorted(members.size());
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = i;
  std::sort(sorted.begin(), sorted.end(),
            [&](size_t a, size_t b) { return members[a].key.as_string() < members[b].key.as_string(); });
  out.push_back('{');
  bool first = true;
  for (size_t i : sorted) {
    if (skip_schema && members[i].key.as_string() == kSchemaKey) continue;
    if (!first) out.push_back(',');
    first = false;
    write_json_string(members[i].key.as_string(), out);
    out.push_back(':');
    canonical(members[i].value, out);
  }
  out.push_back('}');
}

}  // namespace

std::string_view status_name(DefinitionStatus s) { return s == DefinitionStatus::kDraft ? "draft" : "published"; }

std::string Definition::label() const { return std::string(unit_type_name(type)) + " '" + id + "'"; }

uint64_t hash_bytes(std::string_view bytes, uint64_t h) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // Final avalanche so that short inputs spread over all digits.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

uint64_t fingerprint64(const Value& v) {
  std::string text;
  canonical(v, text);
  return hash_bytes(text);
}

std::string definition_fingerprint(const Value& definition) {
  std::string text;
  canonical(definition, text, true);
  return hex64(hash_bytes(text));
}

std::string hex64(uint64_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) {
    s[static_cast<size_t>(i)] = kHex[v & 15];
    v >>= 4;
  }
  return s;
}

std::string fingerprint_of(const Value& v) { return hex64(fingerprint64(v)); }

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

bool read_definition(const Value& v, const std::string& file, const std::string& pointer, Definition* out,
                     Diagnostics* diags) {
  if (!v.is_object()) {
    diags->add(file, pointer, std::string("a definition must be an object, not ") + std::string(type_name(v.type())));
    return false;
  }
  bool ok = true;
  Definition d;
  d.file = file;
  d.pointer = pointer;
  d.source = v;

  const Value& type = v["type"];
  if (type.is_null() || type == Value("flow")) {
    d.type = UnitType::kFlow;
  } else if (type == Value("subflow")) {
    d.type = UnitType::kSubflow;
  } else if (type == Value("action")) {
    d.type = UnitType::kAction;
  } else {
    diags->add(file, pointer_append(pointer, "type"),
               "type must be \"flow\", \"subflow\" or \"action\", not " + shown_value(type));
    ok = false;
  }

  const Value& id = v["id"];
  if (!id.is_string()) {
    diags->add(file, id.is_null() ? pointer : pointer_append(pointer, "id"),
               id.is_null() ? std::string("a definition needs an \"id\"") : "id must be a string, not " + shown_value(id));
    ok = false;
  } else if (!valid_id(id.as_string())) {
    diags->add(file, pointer_append(pointer, "id"),
               "id " + shown_value(id) + " must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '.', '-'");
    ok = false;
  } else {
    d.id = std::string(id.as_string());
  }

  const Value& name = v["name"];
  if (name.is_string()) d.name = std::string(name.as_string());
  else if (!name.is_null()) diags->add(file, pointer_append(pointer, "name"), "name must be a string");

  const Value& schema = v[kSchemaKey];
  if (!schema.is_null() && !schema.is_string()) {
    diags->add(file, pointer_append(pointer, kSchemaKey),
               "$schema must be a string (the URI or path of the JSON Schema that editors check this file with), "
               "not " + shown_value(schema));
  }

  const Value& status = v["status"];
  if (status.is_null() || status == Value("published")) {
    d.status = DefinitionStatus::kPublished;
  } else if (status == Value("draft")) {
    d.status = DefinitionStatus::kDraft;
  } else {
    diags->add(file, pointer_append(pointer, "status"), "status must be \"draft\" or \"published\", not " + shown_value(status));
  }

  const Value& active = v["active"];
  if (active.is_bool()) {
    d.active = active.as_bool();
    if (d.type != UnitType::kFlow) {
      diags->add(file, pointer_append(pointer, "active"), "only flows can be active; publish a subflow or action instead");
    }
  } else if (!active.is_null()) {
    diags->add(file, pointer_append(pointer, "active"), "active must be true or false, not " + shown_value(active));
  }

  d.fingerprint = definition_fingerprint(v);
  if (ok) *out = std::move(d);
  return ok;
}

}  // namespace flowrt
