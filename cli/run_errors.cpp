#include "cli/run_errors.h"

#include <cctype>
#include <filesystem>
#include <map>
#include <system_error>

#include "compiler/loader.h"

namespace flowrt::cli {
namespace {

void skip_ws(std::string_view t, size_t& i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
}

// Reads the string at t[i] == '"' (escapes of '"', '\\' and '/' decoded; others kept as
// written) and moves past it.
std::string read_string(std::string_view t, size_t& i) {
  std::string out;
  ++i;
  while (i < t.size() && t[i] != '"') {
    if (t[i] == '\\' && i + 1 < t.size()) {
      const char c = t[i + 1];
      if (c == '"' || c == '\\' || c == '/') {
        out += c;
      } else {
        out += t.substr(i, 2);
      }
      i += 2;
    } else {
      out += t[i++];
    }
  }
  ++i;
  return out;
}

// Moves past the value starting at t[i]; false when the text ends first.
bool skip_value(std::string_view t, size_t& i) {
  size_t depth = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '"') {
      read_string(t, i);
    } else if (c == '{' || c == '[') {
      ++depth;
      ++i;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return true;  // the end of the enclosing container
      --depth;
      ++i;
    } else if (c == ',' && depth == 0) {
      return true;
    } else {
      ++i;
    }
    if (depth == 0 && (c == '"' || c == '}' || c == ']')) return true;
  }
  return false;
}

std::vector<std::string> tokens(std::string_view pointer) {
  std::vector<std::string> out;
  size_t i = 1;
  while (i <= pointer.size() && !pointer.empty()) {
    const size_t end = std::min(pointer.find('/', i), pointer.size());
    std::string tok;
    for (size_t k = i; k < end; ++k) {
      if (pointer[k] == '~' && k + 1 < end) {
        tok += pointer[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        tok += pointer[k];
      }
    }
    out.push_back(std::move(tok));
    i = end + 1;
  }
  return out;
}

size_t line_at(std::string_view t, size_t pos) {
  size_t line = 1;
  for (size_t k = 0; k < pos && k < t.size(); ++k) line += t[k] == '\n';
  return line;
}

// "... line L, column C: ..." as the JSON reader reports a syntax error.
size_t line_in_message(const std::string& message) {
  const size_t at = message.find("line ");
  if (at == std::string::npos) return 0;
  size_t i = at + 5, line = 0;
  if (i >= message.size() || !std::isdigit(static_cast<unsigned char>(message[i]))) return 0;
  while (i < message.size() && std::isdigit(static_cast<unsigned char>(message[i]))) line = line * 10 + (message[i++] - '0');
  return message.compare(i, 9, ", column ") == 0 ? line : 0;
}

}  // namespace

size_t line_of_pointer(std::string_view t, std::string_view pointer) {
  size_t i = 0;
  skip_ws(t, i);
  for (const std::string& tok : tokens(pointer)) {
    if (i >= t.size()) return 0;
    if (t[i] == '{') {
      ++i;
      bool found = false;
      while (true) {
        skip_ws(t, i);
        if (i >= t.size() || t[i] != '"') return 0;
        const std::string key = read_string(t, i);
        skip_ws(t, i);
        if (i >= t.size() || t[i] != ':') return 0;
        ++i;
        skip_ws(t, i);
        if (key == tok) {
          found = true;
          break;
        }
        if (!skip_value(t, i)) return 0;
        skip_ws(t, i);
        if (i >= t.size() || t[i] != ',') return 0;
        ++i;
      }
      if (!found) return 0;
    } else if (t[i] == '[') {
      size_t n = 0;
      for (char c : tok) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
        n = n * 10 + static_cast<size_t>(c - '0');
      }
      ++i;
      skip_ws(t, i);
      for (size_t k = 0; k < n; ++k) {
        if (!skip_value(t, i)) return 0;
        skip_ws(t, i);
        if (i >= t.size() || t[i] != ',') return 0;
        ++i;
        skip_ws(t, i);
      }
      if (i >= t.size() || t[i] == ']') return 0;
    } else {
      return 0;
    }
  }
  return i < t.size() ? line_at(t, i) : 0;
}

Value RunError::to_value() const {
  return Value::object({{"file", file.empty() ? Value() : Value(std::string_view(file))},
                        {"line", line == 0 ? Value() : Value(static_cast<long long>(line))},
                        {"pointer", has_pointer ? Value(std::string_view(pointer)) : Value()},
                        {"message", Value(std::string_view(message))}});
}

std::string RunError::describe() const {
  if (has_pointer) return Diagnostic{file, pointer, message}.describe();
  if (file.empty()) return message;
  return file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + message;
}

std::vector<RunError> run_errors(const Diagnostics& diags, size_t max_file_bytes) {
  std::map<std::string, std::string> texts;  // each file read once ("" when not read)
  std::vector<RunError> out;
  for (const Diagnostic& d : diags.list()) {
    RunError e{d.file, line_in_message(d.message), d.pointer, true, d.message};
    // An error of a whole file (pointer ""; a data file's too, which is no JSON) has no line.
    if (e.line == 0 && !d.file.empty() && !d.pointer.empty()) {
      auto it = texts.find(d.file);
      if (it == texts.end()) {
        // Only a regular file is read again: a pipe's text is gone, and a FIFO would wait
        // for a writer that will not come.
        std::error_code ec;
        Result<std::string> text = std::filesystem::is_regular_file(d.file, ec)
                                       ? read_file(d.file, max_file_bytes)
                                       : Result<std::string>(Error{"not a regular file"});
        it = texts.emplace(d.file, text ? std::move(text).value() : std::string()).first;
      }
      // The value the pointer names, or the nearest one around it that the file has.
      std::string_view p = d.pointer;
      while (!it->second.empty()) {
        e.line = line_of_pointer(it->second, p);
        const size_t up = p.rfind('/');
        if (e.line != 0 || up == std::string_view::npos) break;
        p = p.substr(0, up);
      }
    }
    out.push_back(std::move(e));
  }
  if (diags.omitted() > 0) out.push_back(RunError{"", 0, "", false, std::to_string(diags.omitted()) + " more errors"});
  return out;
}

RunError run_error(const std::string& message, const std::string& events_file) {
  RunError e;
  e.message = message;
  if (events_file.empty() || message.compare(0, events_file.size(), events_file) != 0 ||
      message.size() <= events_file.size() || message[events_file.size()] != ':') {
    return e;
  }
  size_t i = events_file.size() + 1, line = 0;
  while (i < message.size() && std::isdigit(static_cast<unsigned char>(message[i]))) line = line * 10 + (message[i++] - '0');
  if (line > 0 && message.compare(i, 2, ": ") == 0) {
    e.line = line;
    e.message = message.substr(i + 2);
  } else if (message.compare(events_file.size(), 2, ": ") == 0) {
    e.message = message.substr(events_file.size() + 2);
  } else {
    return e;
  }
  e.file = events_file;
  return e;
}

}  // namespace flowrt::cli
