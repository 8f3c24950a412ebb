#include "compiler/pill_syntax.h"

namespace flowrt {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Splits on '|' outside double quotes.
std::vector<std::string_view> split_bars(std::string_view s) {
  std::vector<std::string_view> parts;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' && (i == 0 || s[i - 1] != '\\')) quoted = !quoted;
    if (s[i] == '|' && !quoted) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

bool path_char(char c) {
  return c != '.' && c != '[' && c != ']' && c != '|' && c != '{' && c != '}' && c != ' ' && c != '\t' &&
         c != '"' && c != '\n';
}

Result<std::vector<std::string>> parse_path(std::string_view p, std::string_view whole) {
  std::vector<std::string> segs;
  size_t i = 0;
  auto bad = [&](const std::string& why) {
    return Error{"malformed data pill {{" + std::string(whole) + "}}: " + why};
  };
  if (p.empty()) return bad("empty path");
  while (i < p.size()) {
    if (p[i] == '[') {
      size_t close = p.find(']', i);
      if (close == std::string_view::npos) return bad("missing ']'");
      std::string_view idx = p.substr(i + 1, close - i - 1);
      if (idx.empty()) return bad("empty index");
      for (char c : idx) {
        if (c < '0' || c > '9') return bad("index '" + std::string(idx) + "' is not a number");
      }
      segs.emplace_back(idx);
      i = close + 1;
      if (i < p.size() && p[i] == '.') {
        ++i;
        if (i == p.size()) return bad("path ends with '.'");
      }
      continue;
    }
    size_t start = i;
    while (i < p.size() && path_char(p[i])) ++i;
    if (i == start) return bad("unexpected '" + std::string(1, p[i]) + "'");
    segs.emplace_back(p.substr(start, i - start));
    if (i < p.size() && p[i] == '.') {
      ++i;
      if (i == p.size()) return bad("path ends with '.'");
    }
  }
  return segs;
}

}  // namespace

bool has_pill_marker(std::string_view s) { return s.find("{{") != std::string_view::npos; }

Result<PillSyntax> parse_pill(std::string_view inner) {
  PillSyntax pill;
  std::string_view whole = trim(inner);
  pill.text = std::string(whole);
  std::vector<std::string_view> parts = split_bars(whole);
  Result<std::vector<std::string>> path = parse_path(trim(parts[0]), whole);
  if (!path) return path.error();
  pill.path = std::move(path).value();
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view part = trim(parts[i]);
    TransformSyntax t;
    size_t colon = part.find(':');
    t.name = std::string(trim(part.substr(0, colon)));
    if (colon != std::string_view::npos) {
      t.has_argument = true;
      t.argument = std::string(trim(part.substr(colon + 1)));
    }
    if (t.name.empty()) return Error{"malformed data pill {{" + pill.text + "}}: empty transform after '|'"};
    pill.transforms.push_back(std::move(t));
  }
  return pill;
}

Result<std::vector<TemplatePiece>> split_template(std::string_view s) {
  std::vector<TemplatePiece> pieces;
  size_t pos = 0;
  std::string literal;  // text since the last pill: escapes are taken out as it is gathered
  while (pos < s.size()) {
    size_t open = s.find("{{", pos);
    if (open == std::string_view::npos) break;
    // The backslashes right before "{{": each pair is one backslash of text, and one left
    // over makes the braces text too ("\{{" is "{{", "\\{{x}}" a backslash and a pill,
    // "\\\{{" a backslash and "{{"). So text such as a mustache template can be written
    // (BEHAVIOUR.md).
    size_t run = 0;
    while (open - run > pos && s[open - run - 1] == '\\') ++run;
    literal += s.substr(pos, open - run - pos);
    literal.append(run / 2, '\\');
    if (run % 2 == 1) {
      literal += "{{";
      pos = open + 2;
      continue;
    }
    size_t close = s.find("}}", open + 2);
    if (close == std::string_view::npos) {
      return Error{"unclosed '{{' in \"" + std::string(s.substr(0, 200)) +
                   "\" (a literal '{{' is written '\\{{', in JSON \"\\\\{{\")"};
    }
    if (!literal.empty()) pieces.push_back(TemplatePiece{false, std::move(literal), {}});
    literal.clear();
    std::string_view inner = s.substr(open + 2, close - open - 2);
    Result<PillSyntax> pill = parse_pill(inner);
    if (!pill) return pill.error();
    TemplatePiece piece;
    piece.is_pill = true;
    piece.text = std::string(inner);
    piece.pill = std::move(pill).value();
    pieces.push_back(std::move(piece));
    pos = close + 2;
  }
  if (pos < s.size()) literal += s.substr(pos);
  if (!literal.empty()) pieces.push_back(TemplatePiece{false, std::move(literal), {}});
  return pieces;
}

}  // namespace flowrt
