#include <cmath>

#include <gtest/gtest.h>

#include "cairn/core/record.h"

namespace cairn {
namespace {

Record Valid() {
  Record r;
  r.device_id = "gateway-7/sensor-3";
  r.measure_name = "env#temperature";
  r.timestamp = 1;
  r.fields = {{"value", 21.5}};
  return r;
}

TEST(ValidateIdentifierTest, AcceptsUtf8AndRejectsControlAndMalformedBytes) {
  EXPECT_TRUE(ValidateIdentifier("x", "température-°C-温度-😀", 128).ok());
  EXPECT_EQ(ValidateIdentifier("device_id", "", 128).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateIdentifier("device_id", "", 128).message().find("device_id is empty"), std::string::npos);
  EXPECT_FALSE(ValidateIdentifier("x", std::string(129, 'a'), 128).ok());
  EXPECT_TRUE(ValidateIdentifier("x", std::string(128, 'a'), 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", std::string("a\0b", 3), 128).ok());  // NUL
  EXPECT_FALSE(ValidateIdentifier("x", "tab\there", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "del\x7f", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "c1\xc2\x85", 128).ok());  // U+0085 NEL
  EXPECT_FALSE(ValidateIdentifier("x", "overlong\xc0\xaf", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "overlong3\xe0\x80\xaf", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "surrogate\xed\xa0\x80", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "toobig\xf4\x90\x80\x80", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "truncated\xe2\x82", 128).ok());
  EXPECT_FALSE(ValidateIdentifier("x", "lone\x80", 128).ok());
}

TEST(ValidateRecordTest, Rules) {
  EXPECT_TRUE(ValidateRecord(Valid()).ok());
  Record r = Valid();
  r.fields[0].value = NAN;
  EXPECT_NE(ValidateRecord(r).message().find("NaN"), std::string::npos);
  r.fields[0].value = -INFINITY;
  EXPECT_NE(ValidateRecord(r).message().find("infinite"), std::string::npos);
  r = Valid();
  r.fields.clear();
  EXPECT_FALSE(ValidateRecord(r).ok());
  r = Valid();
  r.fields.push_back({"value", 1.0});
  EXPECT_NE(ValidateRecord(r).message().find("appears twice"), std::string::npos);
  r = Valid();
  r.fields[0].value = std::monostate{};
  EXPECT_FALSE(ValidateRecord(r).ok());
  r = Valid();
  r.fields[0].value = std::string(4096, 'x');
  EXPECT_TRUE(ValidateRecord(r).ok());
  r.fields[0].value = std::string(4097, 'x');
  EXPECT_FALSE(ValidateRecord(r).ok());
  r.fields[0].value = std::string("bad\xff");
  EXPECT_FALSE(ValidateRecord(r).ok());
  r.fields[0].value = std::string("nul\0inside", 10);  // string values may hold NUL
  EXPECT_TRUE(ValidateRecord(r).ok());
  r = Valid();
  r.ttl = -1;
  EXPECT_FALSE(ValidateRecord(r).ok());
  r = Valid();
  r.fields = {{"a", INT64_MIN}, {"b", INT64_MAX}, {"c", Timestamp{INT64_MAX}}, {"d", false}};
  r.timestamp = INT64_MIN;
  EXPECT_TRUE(ValidateRecord(r).ok());
  r = Valid();
  r.dimensions["site"] = "north\n";
  EXPECT_FALSE(ValidateRecord(r).ok());
  r.dimensions["site"] = std::string(257, 's');
  EXPECT_FALSE(ValidateRecord(r).ok());
  r = Valid();
  for (size_t i = 0; i <= kMaxFieldsPerRecord; ++i) r.fields.push_back({"f" + std::to_string(i), 1.0});
  EXPECT_FALSE(ValidateRecord(r).ok());
}

TEST(FieldTypeTest, NamesAndTypeOf) {
  EXPECT_EQ(TypeOf(Value{1.0}), FieldType::kDouble);
  EXPECT_EQ(TypeOf(Value{int64_t{1}}), FieldType::kInt64);
  EXPECT_EQ(TypeOf(Value{true}), FieldType::kBool);
  EXPECT_EQ(TypeOf(Value{std::string("s")}), FieldType::kString);
  EXPECT_EQ(TypeOf(Value{Timestamp{5}}), FieldType::kTimestamp);
  EXPECT_EQ(FieldTypeName(FieldType::kTimestamp), "timestamp");
}

}  // namespace
}  // namespace cairn
