// Value: an immutable JSON value with cheap copies.
//
// Contract: a Value never changes after construction. Copying one copies 16 bytes and, for
// long strings, arrays and objects, bumps an atomic reference count, so records, step
// outputs and context records can share the same data. Strings of up to 14 bytes live
// inline. Thread-safety: any number of threads may read and copy the same Value at once.
// Objects keep their members in insertion order; keys are unique.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flowrt {

class Value;
struct Member;

namespace detail {
struct HeapNode;
}  // namespace detail

enum class ValueType : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

// Name of a JSON type as users read it ("null", "boolean", "number", "string", ...).
std::string_view type_name(ValueType type);

class Value {
 public:
  static constexpr size_t kInlineCapacity = 14;

  Value() noexcept { clear_raw(); }
  Value(std::nullptr_t) noexcept : Value() {}  // NOLINT(google-explicit-constructor)
  Value(const Value& other) noexcept;
  Value(Value&& other) noexcept;
  Value& operator=(const Value& other) noexcept;
  Value& operator=(Value&& other) noexcept;
  ~Value() { release(); }

  // Scalars. Constructors are implicit for ease of building values in code and tests.
  Value(bool b) noexcept;           // NOLINT(google-explicit-constructor)
  Value(int v) noexcept : Value(static_cast<long long>(v)) {}  // NOLINT
  Value(unsigned v) noexcept : Value(static_cast<long long>(v)) {}  // NOLINT
  Value(long v) noexcept : Value(static_cast<long long>(v)) {}  // NOLINT
  Value(long long v) noexcept;      // NOLINT
  Value(unsigned long v) noexcept : Value(static_cast<long long>(v)) {}  // NOLINT
  Value(unsigned long long v) noexcept : Value(static_cast<long long>(v)) {}  // NOLINT
  Value(double v) noexcept;         // NOLINT
  Value(std::string_view s);        // NOLINT
  Value(const char* s) : Value(std::string_view(s)) {}  // NOLINT
  Value(const std::string& s) : Value(std::string_view(s)) {}  // NOLINT

  static Value array(std::vector<Value> items);
  static Value array(std::initializer_list<Value> items);
  static Value array(std::span<const Value> items);
  // Members must have unique string keys; a later duplicate replaces the earlier value.
  static Value object(std::vector<Member> members);
  static Value object(std::initializer_list<std::pair<std::string_view, Value>> members);
  static Value empty_object();
  static Value empty_array();

  ValueType type() const noexcept { return static_cast<ValueType>(raw_[0]); }
  bool is_null() const noexcept { return type() == ValueType::kNull; }
  bool is_bool() const noexcept { return type() == ValueType::kBool; }
  bool is_int() const noexcept { return type() == ValueType::kInt; }
  bool is_double() const noexcept { return type() == ValueType::kDouble; }
  bool is_number() const noexcept { return is_int() || is_double(); }
  bool is_string() const noexcept { return type() == ValueType::kString; }
  bool is_array() const noexcept { return type() == ValueType::kArray; }
  bool is_object() const noexcept { return type() == ValueType::kObject; }

  // Accessors. REQUIRES: the matching is_*() is true (otherwise a neutral value is returned).
  bool as_bool() const noexcept;
  int64_t as_int() const noexcept;    // doubles are truncated
  double as_double() const noexcept;  // ints are converted
  std::string_view as_string() const noexcept;

  // Arrays and objects; empty for other types.
  size_t size() const noexcept;
  std::span<const Value> items() const noexcept;
  std::span<const Member> members() const noexcept;
  const Value& at(size_t index) const noexcept;  // null when out of range

  // Object lookup; nullptr when this is not an object or the key is absent.
  const Value* find(std::string_view key) const noexcept;
  // Object lookup; a shared null when absent.
  const Value& operator[](std::string_view key) const noexcept;
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

  // Copy of this object with `key` set to `value` (appended if new). Shares unchanged data.
  Value with(std::string_view key, Value value) const;
  // Copy of this object with every member of `patch` set (shallow merge, insertion order
  // kept for existing keys). REQUIRES: both are objects (a non-object `this` counts as {}).
  Value merged(const Value& patch) const;
  // Copy of this object without `key`.
  Value without(std::string_view key) const;

  // Deep equality: numbers compare by value (1 == 1.0), objects ignore member order.
  friend bool operator==(const Value& a, const Value& b) noexcept;

  // Compact JSON text of this value.
  std::string to_json() const;

  // True when two Values share the same heap node (or are the same inline bits);
  // a cheap identity test, used to detect "unchanged" without a deep compare.
  bool same_storage(const Value& other) const noexcept {
    return std::memcmp(raw_, other.raw_, sizeof raw_) == 0;
  }

 private:
  static constexpr uint8_t kHeapFlag = 0xFF;
  void clear_raw() noexcept { std::memset(raw_, 0, sizeof raw_); }
  void release() noexcept;
  void retain() const noexcept;
  bool is_heap() const noexcept;
  detail::HeapNode* node() const noexcept;
  void set_node(ValueType type, detail::HeapNode* node) noexcept;
  static Value object_from_unique(std::vector<Member> members);
  friend class ArrayBuilder;
  friend class ObjectBuilder;

  alignas(8) unsigned char raw_[16];
};

struct Member {
  Value key;  // always a string
  Value value;
};

// Builds an array or object in a single allocation when its size is known up front.
// Not synchronized; one builder per value.
class ArrayBuilder {
 public:
  explicit ArrayBuilder(size_t capacity);
  ~ArrayBuilder();
  ArrayBuilder(const ArrayBuilder&) = delete;
  ArrayBuilder& operator=(const ArrayBuilder&) = delete;
  // REQUIRES: fewer than `capacity` items added so far.
  void add(Value item);
  size_t size() const;
  Value build();

 private:
  detail::HeapNode* node_;
};

class ObjectBuilder {
 public:
  explicit ObjectBuilder(size_t capacity);
  ~ObjectBuilder();
  ObjectBuilder(const ObjectBuilder&) = delete;
  ObjectBuilder& operator=(const ObjectBuilder&) = delete;
  // REQUIRES: `key` is a string not added before; fewer than `capacity` members so far.
  void add(Value key, Value value);
  size_t size() const;
  Value build();

 private:
  detail::HeapNode* node_;
};

// A shared null to return by reference.
const Value& null_value() noexcept;

}  // namespace flowrt
