// Diagnostics: every error found in definitions, each naming file, JSON pointer and problem.
//
// The compiler never stops at the first error: it records each one here and goes on, so a
// user sees everything that is wrong at once. Not synchronized; one per compile.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace flowrt {

struct Diagnostic {
  std::string file;     // as given by the user (may be empty for definitions built in code)
  std::string pointer;  // RFC 6901 JSON pointer into the file; "" is the whole document
  std::string message;
  // "file: /json/pointer: message"
  std::string describe() const;
};

class Diagnostics {
 public:
  void add(std::string file, std::string pointer, std::string message);
  void add(const Diagnostic& d) { add(d.file, d.pointer, d.message); }
  void append(const Diagnostics& other);

  static constexpr size_t kMaxListed = 1000;  // more are counted, not kept

  // Every problem reported so far, including ones already listed (the same error reached
  // twice): compare before and after a compile to tell whether it found anything.
  size_t reported() const { return reported_; }

  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size() + omitted_; }
  size_t omitted() const { return omitted_; }
  const std::vector<Diagnostic>& list() const { return list_; }
  // Every diagnostic, one per line.
  std::string describe() const;

 private:
  std::vector<Diagnostic> list_;
  std::unordered_set<std::string> seen_;
  size_t omitted_ = 0;
  size_t reported_ = 0;
};

}  // namespace flowrt
