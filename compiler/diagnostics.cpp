#include "compiler/diagnostics.h"


namespace flowrt {

std::string Diagnostic::describe() const {
  std::string out = file.empty() ? std::string("<definition>") : file;
  out += ": ";
  out += pointer.empty() ? "/" : pointer;
  out += ": ";
  out += message;
  return out;
}

void Diagnostics::add(std::string file, std::string pointer, std::string message) {
  ++reported_;
  Diagnostic d{std::move(file), std::move(pointer), std::move(message)};
  // The same problem reached twice (a dependency shared by two flows) is reported once.
  if (!seen_.insert(d.describe()).second) return;
  if (list_.size() >= kMaxListed) {
    ++omitted_;
    return;
  }
  list_.push_back(std::move(d));
}

void Diagnostics::append(const Diagnostics& other) {
  for (const Diagnostic& d : other.list_) add(d);
}

std::string Diagnostics::describe() const {
  std::string out;
  for (const Diagnostic& d : list_) {
    if (!out.empty()) out += '\n';
    out += d.describe();
  }
  if (omitted_ > 0) out += "\n... and " + std::to_string(omitted_) + " more errors";
  return out;
}

}  // namespace flowrt
