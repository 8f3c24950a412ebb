#include "compiler/loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "plans/value_json.h"

namespace flowrt {

namespace fs = std::filesystem;

namespace {

// "file [of SIZE bytes ]is larger than the limit of MAX bytes[ (BUDGET)]".
std::string over_the_limit(std::string_view size, size_t max_bytes, std::string_view budget) {
  return "file " + (size.empty() ? std::string() : "of " + std::string(size) + " bytes ") +
         "is larger than the limit of " + std::to_string(max_bytes) + " bytes" +
         (budget.empty() ? std::string() : " (" + std::string(budget) + ")");
}

// A file whose size is not known before it is read (a pipe, /dev/stdin, a FIFO, a device):
// read to its end, refused as soon as it passes `max_bytes`.
Result<std::string> read_stream(const std::string& path, size_t max_bytes, std::string_view budget) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot open for reading"};
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) return Error{over_the_limit("", max_bytes, budget)};
  }
  if (in.bad()) return Error{"cannot read the whole file"};
  return text;
}

}  // namespace

Result<std::string> read_file(const std::string& path, size_t max_bytes, std::string_view budget) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec) return Error{"cannot read: " + ec.message()};
  if (fs::is_directory(status)) return Error{"cannot read: it is a directory"};
  if (!fs::is_regular_file(status)) return read_stream(path, max_bytes, budget);
  const auto size = fs::file_size(path, ec);
  if (ec) return Error{"cannot read: " + ec.message()};
  if (size > max_bytes) return Error{over_the_limit(std::to_string(size), max_bytes, budget)};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot open for reading"};
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<size_t>(in.gcount()) != size) return Error{"cannot read the whole file"};
  return text;
}

void parse_definitions(std::string_view text, const std::string& file, std::vector<Definition>* out,
                       Diagnostics* diags, const LoadOptions& options) {
  Value doc;
  JsonParseError error;
  if (!parse_json(text, &doc, &error, options.json)) {
    diags->add(file, error.pointer, error.describe());
    return;
  }
  auto add_one = [&](const Value& v, const std::string& pointer) {
    if (out->size() >= options.max_definitions) {
      diags->add(file, pointer,
                 "more than " + std::to_string(options.max_definitions) + " definitions (max_definitions)");
      return false;
    }
    Definition d;
    if (read_definition(v, file, pointer, &d, diags)) out->push_back(std::move(d));
    return true;
  };
  if (doc.is_array()) {
    size_t i = 0;
    for (const Value& v : doc.items()) {
      if (!add_one(v, pointer_append("", i++))) break;
    }
  } else {
    add_one(doc, "");
  }
}

std::vector<Definition> load_definitions(const std::vector<std::string>& paths, Diagnostics* diags,
                                         const LoadOptions& options) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".json") found.push_back(it->path().string());
      }
      if (ec) diags->add(path, "", "cannot read directory: " + ec.message());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else {
      diags->add(path, "", "no such file or directory");
    }
  }
  std::vector<Definition> defs;
  for (const std::string& file : files) {
    Result<std::string> text = read_file(file, options.max_file_bytes, "max_definition_file_bytes");
    if (!text) {
      diags->add(file, "", text.message());
      continue;
    }
    parse_definitions(*text, file, &defs, diags, options);
  }
  check_unique_ids(defs, diags);
  return defs;
}

void check_unique_ids(const std::vector<Definition>& defs, Diagnostics* diags) {
  std::map<std::pair<UnitType, std::string>, const Definition*> seen;
  for (const Definition& d : defs) {
    auto [it, fresh] = seen.emplace(std::make_pair(d.type, d.id), &d);
    if (!fresh) {
      const Definition& first = *it->second;
      diags->add(d.file, pointer_append(d.pointer, "id"),
                 "duplicate " + std::string(unit_type_name(d.type)) + " id '" + d.id + "' (first defined in " +
                     (first.file.empty() ? std::string("code") : first.file) + (first.pointer.empty() ? "" : " at " + first.pointer) +
                     ")");
    }
  }
}

}  // namespace flowrt
