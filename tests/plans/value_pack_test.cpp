// Packed values (plans/value_pack.h): what is read back equals what was packed, shared
// nodes are kept by reference and nodes only the packed value holds are written in place,
// and releasing the bytes drops exactly the references they took (AddressSanitizer and
// LeakSanitizer runs of this test catch a count off by one either way).
#include "plans/value_pack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plans/value_json.h"

namespace flowrt {
namespace {

Value Json(std::string_view text) {
  Result<Value> v = parse_json(text);
  EXPECT_TRUE(v.is_ok()) << v.message();
  return v ? *v : Value();
}

// Packs `v`, reads it back, then releases the bytes.
Value RoundTrip(const Value& v, size_t* packed_size = nullptr) {
  ValuePacker out;
  out.value(v);
  const std::vector<unsigned char> bytes(out.bytes().begin(), out.bytes().end());
  if (packed_size) *packed_size = bytes.size();
  const unsigned char* begin = bytes.data();
  PackedReader in(begin, begin + bytes.size());
  Value back = in.value();
  EXPECT_TRUE(in.at_end());
  PackedReader release(begin, begin + bytes.size());
  release.release_value();
  return back;
}

TEST(ValuePackTest, EveryType_ReadsBackEqual_InTheSameMemberOrder) {
  const Value v = Json(R"({"z": null, "t": true, "f": false, "i": -123456789012, "d": 2.5, "s": "short",
    "long": "a string longer than fourteen bytes", "a": [1, [], {}, "x", [2, 3]], "o": {"b": 1, "a": 2}, "e": {}})");
  const Value back = RoundTrip(v);
  EXPECT_EQ(back, v);
  EXPECT_EQ(back.to_json(), v.to_json()) << "member order is kept";
  EXPECT_TRUE(RoundTrip(Value(0)).is_int());
  EXPECT_TRUE(RoundTrip(Value(1.0)).is_double());
  EXPECT_EQ(RoundTrip(Value(INT64_MIN)), Value(INT64_MIN));
  EXPECT_EQ(RoundTrip(Value(INT64_MAX)), Value(INT64_MAX));
}

TEST(ValuePackTest, ANodeOnlyThePackedValueHolds_IsWrittenInPlace) {
  const std::string text(200, 'q');
  size_t size = 0;
  const Value back = RoundTrip(Value(std::string_view(text)), &size);
  EXPECT_EQ(back.as_string(), text);
  EXPECT_GT(size, 200u) << "its bytes are in the packed form";
}

TEST(ValuePackTest, ANodeHeldElsewhere_IsKeptByReference_AndOutlivesTheValuePacked) {
  const std::string text(200, 'q');
  const Value held{std::string_view(text)};  // as a table holds a record
  Value packed_copy = held;                  // the value being packed shares it
  ValuePacker out;
  out.value(packed_copy);
  packed_copy = Value();
  const std::vector<unsigned char> bytes(out.bytes().begin(), out.bytes().end());
  EXPECT_LT(bytes.size(), 16u) << "a reference, not the bytes";
  const unsigned char* begin = bytes.data();
  PackedReader in(begin, begin + bytes.size());
  const Value back = in.value();
  EXPECT_TRUE(back.same_storage(held)) << "the same node, not a copy";
  PackedReader release(begin, begin + bytes.size());
  release.release_value();
  EXPECT_EQ(back.as_string(), text) << "the reader's copy still holds the node";
  EXPECT_EQ(held.as_string(), text);
}

TEST(ValuePackTest, AnObjectOfAShape_IsReadBackOnTheSameShape) {
  const Value shape = intern_shape({"record", "found"});
  const Value record = Json(R"({"sys_id": "0123456789abcdef0123456789abcdef", "n": 1})");
  const Value v = Value::object(shape, {record, Value(true)});
  size_t size = 0;
  const Value back = RoundTrip(v, &size);
  EXPECT_EQ(back, v);
  EXPECT_TRUE(back.shape().same_storage(shape));
  EXPECT_TRUE(back["record"].same_storage(record)) << "the record, held by the test too, is referenced";
  EXPECT_LT(size, 24u);
}

TEST(ValuePackTest, ManyValuesInOneBuffer_ReadBackInOrder_WithTheScalarsBetween) {
  ValuePacker out;
  out.varint(300);
  out.value(Json(R"({"a": [1, 2]})"));
  out.signed_varint(-5);
  out.byte(7);
  out.f64(0.1);
  out.value(Value("x"));
  const std::vector<unsigned char> bytes(out.bytes().begin(), out.bytes().end());
  const unsigned char* begin = bytes.data();
  PackedReader in(begin, begin + bytes.size());
  EXPECT_EQ(in.varint(), 300u);
  EXPECT_EQ(in.value(), Json(R"({"a": [1, 2]})"));
  EXPECT_EQ(in.signed_varint(), -5);
  EXPECT_EQ(in.byte(), 7);
  EXPECT_EQ(in.f64(), 0.1);
  EXPECT_EQ(in.value(), Value("x"));
  EXPECT_TRUE(in.at_end());
  PackedReader release(begin, begin + bytes.size());
  (void)release.varint();
  release.release_value();
  (void)release.signed_varint();
  (void)release.byte();
  (void)release.f64();
  release.release_value();
  EXPECT_TRUE(release.at_end());
}


// A reference is written as its distance from the one before: nodes allocated together
// cost a few bytes each, not a pointer's 8, whichever way the distance goes.
TEST(ValuePackTest, ReferencesToNodesAllocatedTogether_TakeAFewBytesEach_InEitherOrder) {
  std::vector<Value> held;
  for (int i = 0; i < 16; ++i) held.push_back(Value(std::string_view(std::string(20 + i, 'a' + i))));
  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "reversed" : "in order");
    std::vector<Value> items = held;
    if (reversed) std::reverse(items.begin(), items.end());
    const Value v = Value::array(std::span<const Value>(items));
    size_t size = 0;
    const Value back = RoundTrip(v, &size);
    ASSERT_EQ(back.size(), items.size());
    for (size_t i = 0; i < items.size(); ++i) EXPECT_TRUE(back.items()[i].same_storage(items[i])) << i;
    EXPECT_LT(size, 16u * 6) << "16 references of a tag and 8 bytes each would take 144";
  }
}

}  // namespace
}  // namespace flowrt
