// Error, Status and Result<T>: how flowrt reports recoverable errors, everywhere.
//
// Contract: functions that can fail on user input return Status or Result<T>; they do not
// throw. Result<T, E> carries another error type when one message is not enough (e.g.
// Diagnostics: every problem of a project at once). Exceptions from libraries (nlohmann, the standard library) are caught where they
// enter flowrt and turned into an Error. Value types; not synchronized.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace flowrt {

struct Error {
  std::string message;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e.message)), failed_(true) {}  // NOLINT
  static Status ok() { return {}; }

  bool is_ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  const std::string& message() const { return error_; }
  Error error() const { return Error{error_}; }

 private:
  std::string error_;
  bool failed_ = false;
};

template <class T, class E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT
  Result(E e) : v_(std::move(e)) {}          // NOLINT

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  // REQUIRES: is_ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  // REQUIRES: !is_ok().
  const E& error() const { return std::get<1>(v_); }
  const std::string& message() const
    requires std::is_same_v<E, Error>
  {
    return error().message;
  }
  Status status() const
    requires std::is_same_v<E, Error>
  {
    return is_ok() ? Status() : Status(error());
  }

 private:
  std::variant<T, E> v_;
};

}  // namespace flowrt

// Returns early from the enclosing function when `expr` (a Status) failed.
#define FLOWRT_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::flowrt::Status _flowrt_status = (expr); \
    if (!_flowrt_status) return _flowrt_status.error(); \
  } while (0)
