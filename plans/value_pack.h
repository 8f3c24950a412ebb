// Packed values: Values written one after another into a byte buffer, for data that is kept
// long and read rarely (a finished context's record: runtime/frozen_context.h).
//
// Contract: a heap node that something else holds too (a record that its table also holds,
// a string shared with another entry, an interned shape) is written as a reference that
// keeps it alive, 8 bytes; a node that only the packed Value holds is written out in place
// (its bytes, its members), so it can be freed with the Value. Which of the two a node gets
// changes only the size: reading back builds a Value equal to the one packed, with the same
// member order (objects built from a shape are built from the same shape again).
// A reference is written as its distance from the reference before it in the same bytes
// (nodes allocated close together, as a record and its strings, cost 2-4 bytes, not 8), so
// a PackedReader reads from where the packer started: the start of its bytes, or of what
// it wrote since clear().
// Ownership: bytes that hold references must be released once before they are freed
// (PackedReader::release_value walks them). Thread-safety: a ValuePacker or PackedReader
// is one thread's; the nodes they reference are immutable, and their counts are atomic.
// Depth: packing, reading back and releasing recurse once per level of nesting, unlike
// writing JSON, comparing and freeing a Value (no depth limit). They only ever see what the
// engine keeps of a finished context, whose values it refused past max_json_depth (256 by
// default) when they came in; do not pack a value from elsewhere that may nest deeper.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "flowrt/plans/template.h"
#include "plans/value.h"

namespace flowrt {

// Written against a template (value_as), a value takes only what the template does not
// already say: a part equal to the template's constant is one byte; an array or object
// rendered from the template's children is its parts, each again against its child; a
// string rendered from a text template is the text between the template's literal parts.
// Anything else is written as plain. The reader is given the same template and builds the
// same value; the bytes stay self-describing, so releasing them needs no template.
//
// Appends values and the scalars around them (the record's own fields) to a buffer.
class ValuePacker {
 public:
  ValuePacker() { buffer_.resize(kInitialCapacity); }
  void value(const Value& v);
  // `v` against `t` (see above): the reader calls PackedReader::value_as with `t`.
  void value_as(const Value& v, const Template& t);
  // Starts `n` parts, each written next with value_as against its own template: read back
  // with PackedReader::parts.
  void parts(size_t n);
  void byte(uint8_t b) {
    ensure(1);
    buffer_[size_++] = b;
  }
  void varint(uint64_t v) {
    ensure(10);
    unsigned char* out = buffer_.data() + size_;
    while (v >= 0x80) {
      *out++ = static_cast<unsigned char>(v | 0x80);
      v >>= 7;
    }
    *out++ = static_cast<unsigned char>(v);
    size_ = static_cast<size_t>(out - buffer_.data());
  }
  void signed_varint(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void f64(double d) { append(&d, sizeof d); }
  // The bytes so far. Taking them hands over the references they hold.
  std::span<const unsigned char> bytes() const { return {buffer_.data(), size_}; }
  // Starts again with no bytes, keeping the buffer's memory (a packer reused per thread
  // allocates nothing). REQUIRES: the bytes so far were handed over, or held no reference.
  void clear() {
    size_ = 0;
    last_node_ = 0;
  }

 private:
  static constexpr size_t kInitialCapacity = 1024;
  // Room for `n` more bytes: a compare on the path of every write, the growing out of line.
  void ensure(size_t n) {
    if (size_ + n > buffer_.size()) [[unlikely]] grow(n);
  }
  void grow(size_t n);
  void append(const void* data, size_t n) {
    ensure(n);
    std::memcpy(buffer_.data() + size_, data, n);
    size_ += n;
  }
  void text(std::string_view s);
  // `s` as the text between `t`'s literal parts, if it is that; else writes nothing.
  bool text_as(std::string_view s, const Template& t);
  void node_reference(const void* node);
  std::vector<unsigned char> buffer_;  // [0, size_) is written; its size is the capacity
  size_t size_ = 0;
  uintptr_t last_node_ = 0;  // the last reference written, which the next is written from
};

// Reads what a ValuePacker wrote, in the same order. REQUIRES: the bytes are a ValuePacker's
// (they are never read from outside the process: no bounds are checked past `end` for
// anything but a debug assertion).
class PackedReader {
 public:
  PackedReader(const unsigned char* begin, const unsigned char* end) : p_(begin), end_(end) {}
  Value value();
  // What ValuePacker::value_as wrote against `t`.
  Value value_as(const Template& t);
  // Whether ValuePacker::parts comes next; if so, reads it and sets `n`.
  bool parts(size_t* n);
  uint8_t byte() { return *p_++; }
  uint64_t varint();
  int64_t signed_varint() {
    const uint64_t u = varint();
    return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  }
  double f64();
  // Reads one value without building it, dropping each reference it holds: the once-only
  // release of the bytes (see the header).
  void release_value();
  bool at_end() const { return p_ >= end_; }

 private:
  std::string_view text();
  void* node_pointer();
  const unsigned char* p_;
  const unsigned char* end_;
  uintptr_t last_node_ = 0;  // the last reference read
};

}  // namespace flowrt
