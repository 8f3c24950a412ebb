// Value: an immutable JSON value with cheap copies.
//
// Contract: a Value never changes after construction. Copying one copies 16 bytes and, for
// long strings, arrays and objects, bumps an atomic reference count, so records, step
// outputs and context records can share the same data. Strings of up to 14 bytes live
// inline. Thread-safety: any number of threads may read and copy the same Value at once.
// Objects keep their members in insertion order; keys are unique. Freeing a Value is
// iterative, with no depth limit: one built in C++ nested a million deep frees in the
// stack space of a flat one. So are == and writing JSON (to_json, plans/value_json.h) past
// the first 64 levels.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flowrt {

class Value;
struct Member;
class MemberRange;

namespace detail {
struct HeapNode;
class NodeFreer;  // plans/value.cpp: frees the nodes a Value held last
}  // namespace detail

enum class ValueType : uint8_t { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

// Name of a JSON type as users read it ("null", "boolean", "number", "string", ...).
std::string_view type_name(ValueType type);

class Value {
 public:
  static constexpr size_t kInlineCapacity = 14;

  Value() noexcept { clear_raw(); }
  Value(std::nullptr_t) noexcept : Value() {}  // NOLINT(google-explicit-constructor)
  // Copies and moves are inline: most Values are scalars or short strings, with nothing to
  // count, and the engine moves Values on every path.
  Value(const Value& other) noexcept {
    std::memcpy(raw_, other.raw_, sizeof raw_);
    retain();
  }
  Value(Value&& other) noexcept {
    std::memcpy(raw_, other.raw_, sizeof raw_);
    other.clear_raw();
  }
  Value& operator=(const Value& other) noexcept {
    if (this != &other) {
      other.retain();
      release();
      std::memcpy(raw_, other.raw_, sizeof raw_);
    }
    return *this;
  }
  Value& operator=(Value&& other) noexcept {
    if (this != &other) {
      release();
      std::memcpy(raw_, other.raw_, sizeof raw_);
      other.clear_raw();
    }
    return *this;
  }
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
  // An object with the keys of `shape` (an array of unique strings; see ObjectBuilder)
  // and `values`, one per key, in order.
  static Value object(const Value& shape, std::initializer_list<Value> values);
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
  MemberRange members() const noexcept;
  const Value& at(size_t index) const noexcept;  // null when out of range

  // Object lookup; nullptr when this is not an object or the key is absent.
  const Value* find(std::string_view key) const noexcept;
  // Object lookup; a shared null when absent.
  const Value& operator[](std::string_view key) const noexcept;
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }

  // The shared key array of an object built from a shape (see ObjectBuilder), else null.
  Value shape() const noexcept;
  // Whether this is an object whose keys are the strings of array `keys`, in order (at
  // once when it was built from that shape).
  bool has_keys(const Value& keys) const noexcept;

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
  void release() noexcept {
    if (is_heap()) release_node();
  }
  void retain() const noexcept {
    if (is_heap()) retain_node();
  }
  // Strings, arrays and objects with a node (empty ones and short strings have none).
  bool is_heap() const noexcept {
    const ValueType t = type();
    return (t == ValueType::kString || t == ValueType::kArray || t == ValueType::kObject) && raw_[1] == kHeapFlag;
  }
  void release_node() const noexcept;  // REQUIRES: is_heap()
  void retain_node() const noexcept;   // REQUIRES: is_heap()
  detail::HeapNode* node() const noexcept;
  void set_node(ValueType type, detail::HeapNode* node) noexcept;
  static Value object_from_unique(std::vector<Member> members);
  friend class ArrayBuilder;
  friend class ObjectBuilder;
  friend Value intern_shape(std::span<const Value> keys);
  friend class ValuePacker;   // plans/value_pack.h: writes and reads nodes by reference
  friend class PackedReader;
  friend class detail::NodeFreer;

  alignas(8) unsigned char raw_[16];
};

struct Member {
  Value key;  // always a string
  Value value;
};

// One member as iteration yields it: references into the object, valid while it lives.
struct MemberRef {
  const Value& key;
  const Value& value;
};

// The members of an object, in insertion order. An object keeps them either as key/value
// pairs or, when it was built from a shape, as values beside a key array shared with every
// object of that shape (the records of one table, the inputs of one step); this range
// hides the difference. Valid while the object lives.
class MemberRange {
 public:
  class iterator {
   public:
    using value_type = MemberRef;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    MemberRef operator*() const { return {keys_[offset_], values_[offset_]}; }
    iterator& operator++() {
      offset_ += stride_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& other) const { return offset_ == other.offset_; }

   private:
    friend class MemberRange;
    iterator(const Value* keys, const Value* values, size_t stride, size_t offset)
        : keys_(keys), values_(values), stride_(stride), offset_(offset) {}
    const Value* keys_ = nullptr;
    const Value* values_ = nullptr;
    size_t stride_ = 1;
    size_t offset_ = 0;
  };

  MemberRange() = default;
  // `stride` is 2 when keys and values alternate (pairs), 1 when they are separate arrays.
  MemberRange(const Value* keys, const Value* values, size_t stride, size_t size)
      : keys_(keys), values_(values), stride_(stride), size_(size) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  MemberRef operator[](size_t i) const { return {keys_[i * stride_], values_[i * stride_]}; }
  iterator begin() const { return {keys_, values_, stride_, 0}; }
  iterator end() const { return {keys_, values_, stride_, size_ * stride_}; }

 private:
  const Value* keys_ = nullptr;
  const Value* values_ = nullptr;
  size_t stride_ = 1;
  size_t size_ = 0;
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

// Objects come in two layouts with the same behaviour: key/value pairs, or values next to
// a shape, an array of unique string keys shared by every object built from it. A shaped
// object costs 16 bytes per member instead of 32, and copying or freeing it never touches
// its keys; records of one table and the inputs of one step share their shapes.
class ObjectBuilder {
 public:
  explicit ObjectBuilder(size_t capacity);
  // Builds an object with exactly the keys of `shape`, in order; add values with add_value.
  // REQUIRES: `shape` is an array of unique strings.
  explicit ObjectBuilder(const Value& shape);
  ~ObjectBuilder();
  ObjectBuilder(const ObjectBuilder&) = delete;
  ObjectBuilder& operator=(const ObjectBuilder&) = delete;
  // REQUIRES: built by capacity; `key` is a string not added before; fewer than
  // `capacity` members so far.
  void add(Value key, Value value);
  // REQUIRES: built from a shape; fewer values than the shape has keys so far.
  void add_value(Value value);
  size_t size() const;
  // REQUIRES (shape): one value per key was added.
  Value build();

 private:
  detail::HeapNode* node_;
  const Value* shape_keys_ = nullptr;  // when a large shape is built as pairs
};

// The process-wide shape for `keys`: one key array per distinct list of keys, made once and
// never freed. Copying, building from or freeing it touches no reference count, so
// threads that build objects of one shape do not contend on its cache line. At most
// kMaxInternedShapes are kept; past that, each call makes an ordinary (counted) array.
// Thread-safe. REQUIRES: `keys` are unique strings.
inline constexpr size_t kMaxInternedShapes = 4096;
Value intern_shape(std::span<const Value> keys);
Value intern_shape(std::initializer_list<std::string_view> keys);

// The shape for `keys`: one in `cache` with exactly those keys, or the interned one, which
// then goes to the front of `cache` (most recently used first; the last one drops out).
// Callers keep a small cache per thread and kind of object, so that finding the shape of a
// record takes no lock. REQUIRES: `keys` are unique strings.
Value shape_for(std::span<const Value> keys, std::span<Value> cache);

// A shared null to return by reference.
const Value& null_value() noexcept;

// How GoogleTest prints a Value (a failed EXPECT_EQ, a matcher's "Actual:"): as JSON,
// compact when short, indented (two spaces) when longer unless it nests more than 64 deep
// (indenting that writes the square of its depth in spaces); never as bytes.
void PrintTo(const Value& v, std::ostream* os);

}  // namespace flowrt
