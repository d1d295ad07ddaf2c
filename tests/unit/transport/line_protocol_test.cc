#include "cairn/text/line_protocol.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cairn {
namespace {

constexpr int64_t kNow = int64_t{1'700'000'000'123'456'789};

LineProtocolOptions Options(TimestampPrecision precision = TimestampPrecision::kNanoseconds) {
  LineProtocolOptions options;
  options.precision = precision;
  options.default_timestamp = kNow;
  return options;
}

// The record of a line that must parse.
Record Parse(std::string_view line, const LineProtocolOptions& options = Options()) {
  Result<std::optional<Record>> parsed = ParseLineProtocolLine(line, options);
  EXPECT_TRUE(parsed.ok()) << line << ": " << parsed.status().ToString();
  if (!parsed.ok()) return Record{};
  EXPECT_TRUE(parsed->has_value()) << line;
  return parsed->has_value() ? **parsed : Record{};
}

// The reason a line is refused.
std::string Reason(std::string_view line, const LineProtocolOptions& options = Options()) {
  Result<std::optional<Record>> parsed = ParseLineProtocolLine(line, options);
  EXPECT_FALSE(parsed.ok()) << "accepted: " << line;
  if (parsed.ok()) return "";
  EXPECT_TRUE(parsed.status().Is(StatusCode::kInvalidArgument)) << parsed.status().ToString();
  return parsed.status().message();
}

const Value* FieldValue(const Record& record, std::string_view name) {
  for (const Field& field : record.fields) {
    if (field.name == name) return &field.value;
  }
  return nullptr;
}

bool HasText(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

TEST(LineProtocolTest, MapsAPointToARecord) {
  const Record record =
      Parse("env,device=d1,site=lab,rack=3 temperature=21.5,humidity=40i 1700000000000000000");
  EXPECT_EQ(record.measure_name, "env");
  EXPECT_EQ(record.device_id, "d1");
  EXPECT_EQ(record.dimensions, (std::map<std::string, std::string>{{"rack", "3"}, {"site", "lab"}}));
  ASSERT_EQ(record.fields.size(), 2u);
  EXPECT_EQ(record.fields[0].name, "temperature");
  EXPECT_EQ(record.fields[0].value, Value(21.5));
  EXPECT_EQ(record.fields[1].name, "humidity");
  EXPECT_EQ(record.fields[1].value, Value(int64_t{40}));
  EXPECT_EQ(record.timestamp, int64_t{1'700'000'000'000'000'000});
  EXPECT_EQ(record.version, 0u);
  EXPECT_EQ(record.ttl, 0);
}

TEST(LineProtocolTest, TheDeviceTagIsConfigurable) {
  LineProtocolOptions options = Options();
  options.device_tag = "host";
  const Record record = Parse("cpu,host=gw1,device=other load=1", options);
  EXPECT_EQ(record.device_id, "gw1");
  EXPECT_EQ(record.dimensions, (std::map<std::string, std::string>{{"device", "other"}}));
  EXPECT_EQ(Reason("cpu,device=d1 load=1", options), "no 'host' tag");
}

TEST(LineProtocolTest, ALineWithoutTheDeviceTagIsRefused) {
  EXPECT_EQ(Reason("env temperature=1"), "no 'device' tag");
  EXPECT_EQ(Reason("env,site=lab temperature=1"), "no 'device' tag");
  // Tag names are case-sensitive.
  EXPECT_EQ(Reason("env,Device=d1 temperature=1"), "no 'device' tag");
}

TEST(LineProtocolTest, FieldTypes) {
  const Record record = Parse(
      "m,device=d f1=1,f2=-1.5,f3=1e3,f4=-2.5E-3,f5=.5,f6=7.,f7=12i,f8=-12i,f9=12u,s=\"text\",b1=t,b2=FALSE");
  EXPECT_EQ(*FieldValue(record, "f1"), Value(1.0));  // no suffix: a float, as in InfluxDB
  EXPECT_EQ(*FieldValue(record, "f2"), Value(-1.5));
  EXPECT_EQ(*FieldValue(record, "f3"), Value(1000.0));
  EXPECT_EQ(*FieldValue(record, "f4"), Value(-0.0025));
  EXPECT_EQ(*FieldValue(record, "f5"), Value(0.5));
  EXPECT_EQ(*FieldValue(record, "f6"), Value(7.0));
  EXPECT_EQ(*FieldValue(record, "f7"), Value(int64_t{12}));
  EXPECT_EQ(*FieldValue(record, "f8"), Value(int64_t{-12}));
  EXPECT_EQ(*FieldValue(record, "f9"), Value(int64_t{12}));
  EXPECT_EQ(*FieldValue(record, "s"), Value(std::string("text")));
  EXPECT_EQ(*FieldValue(record, "b1"), Value(true));
  EXPECT_EQ(*FieldValue(record, "b2"), Value(false));
}

TEST(LineProtocolTest, EveryBooleanSpelling) {
  for (const char* spelling : {"t", "T", "true", "True", "TRUE"}) {
    EXPECT_EQ(*FieldValue(Parse(std::string("m,device=d b=") + spelling), "b"), Value(true)) << spelling;
  }
  for (const char* spelling : {"f", "F", "false", "False", "FALSE"}) {
    EXPECT_EQ(*FieldValue(Parse(std::string("m,device=d b=") + spelling), "b"), Value(false)) << spelling;
  }
  EXPECT_TRUE(HasText(Reason("m,device=d b=tRUE"), "field 'b' has an invalid value 'tRUE'"));
  EXPECT_TRUE(HasText(Reason("m,device=d b=yes"), "invalid value 'yes'"));
}

TEST(LineProtocolTest, IntegerExtremes) {
  EXPECT_EQ(*FieldValue(Parse("m,device=d v=9223372036854775807i"), "v"),
            Value(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(*FieldValue(Parse("m,device=d v=-9223372036854775808i"), "v"),
            Value(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(Reason("m,device=d v=9223372036854775808i"), "field 'v': '9223372036854775808i' overflows int64");
  EXPECT_EQ(Reason("m,device=d v=-9223372036854775809i"),
            "field 'v': '-9223372036854775809i' overflows int64");
}

TEST(LineProtocolTest, UnsignedIntegersAreKeptAsInt64WhenTheyFit) {
  EXPECT_EQ(*FieldValue(Parse("m,device=d v=0u"), "v"), Value(int64_t{0}));
  EXPECT_EQ(*FieldValue(Parse("m,device=d v=9223372036854775807u"), "v"),
            Value(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(Reason("m,device=d v=9223372036854775808u"),
            "field 'v': unsigned '9223372036854775808u' does not fit in int64, cairn's integer type");
  EXPECT_TRUE(HasText(Reason("m,device=d v=18446744073709551616u"), "does not fit in int64"));
  // A negative unsigned is not a number at all.
  EXPECT_TRUE(HasText(Reason("m,device=d v=-1u"), "invalid value '-1u'"));
}

TEST(LineProtocolTest, NonFiniteAndOverflowingFloatsAreRefused) {
  EXPECT_EQ(Reason("m,device=d v=NaN"), "field 'v' is NaN; NaN and infinities are not accepted");
  EXPECT_EQ(Reason("m,device=d v=nan"), "field 'v' is NaN; NaN and infinities are not accepted");
  EXPECT_EQ(Reason("m,device=d v=-Inf"), "field 'v' is infinite; NaN and infinities are not accepted");
  EXPECT_EQ(Reason("m,device=d v=+infinity"), "field 'v' is infinite; NaN and infinities are not accepted");
  EXPECT_EQ(Reason("m,device=d v=1e309"), "field 'v': '1e309' is out of the range of a 64-bit float");
  EXPECT_EQ(Reason("m,device=d v=-1e309"), "field 'v': '-1e309' is out of the range of a 64-bit float");
  EXPECT_EQ(*FieldValue(Parse("m,device=d v=1.7976931348623157e308"), "v"),
            Value(std::numeric_limits<double>::max()));
}

TEST(LineProtocolTest, MalformedNumbersAreRefused) {
  for (const char* value : {"1.2.3", "1e", "1e+", "-", ".", "+1", "0x10", "1,5i", "12I", "1_000", "e5"}) {
    const std::string line = std::string("m,device=d v=") + value;
    Result<std::optional<Record>> parsed = ParseLineProtocolLine(line, Options());
    EXPECT_FALSE(parsed.ok()) << line;
  }
  EXPECT_EQ(
      Reason("m,device=d v=hello"),
      "field 'v' has an invalid value 'hello' (expected a number, an integer like 12i or 12u, a timestamp "
      "like 1700000000t, a boolean, or a string in double quotes) (column 14)");
}

TEST(LineProtocolTest, StringFieldEscapes) {
  EXPECT_EQ(*FieldValue(Parse(R"(m,device=d s="say \"hi\"")"), "s"), Value(std::string(R"(say "hi")")));
  EXPECT_EQ(*FieldValue(Parse(R"(m,device=d s="back\\slash")"), "s"), Value(std::string(R"(back\slash)")));
  // Any other backslash stays, so a Windows path or "\n" arrives as typed.
  EXPECT_EQ(*FieldValue(Parse(R"(m,device=d s="C:\data\n")"), "s"), Value(std::string(R"(C:\data\n)")));
  // Delimiters inside quotes are text.
  EXPECT_EQ(*FieldValue(Parse(R"(m,device=d s="a, b=c d",n=1)"), "s"), Value(std::string("a, b=c d")));
  EXPECT_EQ(*FieldValue(Parse(R"(m,device=d s="")"), "s"), Value(std::string()));
  EXPECT_EQ(*FieldValue(Parse("m,device=d s=\"caf\xC3\xA9 \xE2\x9C\x93\""), "s"),
            Value(std::string("caf\xC3\xA9 \xE2\x9C\x93")));
}

TEST(LineProtocolTest, BrokenStringsAreRefused) {
  EXPECT_EQ(Reason(R"(m,device=d s="open)"), "string value of field 's' has no closing quote (column 14)");
  EXPECT_EQ(Reason(R"(m,device=d s="ends with escaped quote\")"),
            "string value of field 's' has no closing quote (column 14)");
  EXPECT_EQ(Reason(R"(m,device=d s="a"b)"), "unexpected 'b' after the string value of field 's' (column 17)");
  // The engine's limit on string values applies.
  const std::string big(kMaxStringValueBytes + 1, 'x');
  EXPECT_TRUE(
      HasText(Reason("m,device=d s=\"" + big + "\""), "field 's' is 4097 bytes long; the limit is 4096"));
}

TEST(LineProtocolTest, EscapesInMeasurementTagsAndFieldKeys) {
  const Record record = Parse(R"(living\ room\,east,device=d\ 1,site\=x=a\,b\=c\ d temp\ c\,x\=y=1)");
  EXPECT_EQ(record.measure_name, "living room,east");
  EXPECT_EQ(record.device_id, "d 1");
  EXPECT_EQ(record.dimensions, (std::map<std::string, std::string>{{"site=x", "a,b=c d"}}));
  ASSERT_EQ(record.fields.size(), 1u);
  EXPECT_EQ(record.fields[0].name, "temp c,x=y");
}

TEST(LineProtocolTest, BackslashesBeforeOrdinaryBytesAreKept) {
  const Record record = Parse(R"(m\x,device=C:\data,k=a\\b v\q=1)");
  EXPECT_EQ(record.measure_name, R"(m\x)");
  EXPECT_EQ(record.device_id, R"(C:\data)");
  EXPECT_EQ(record.dimensions.at("k"), R"(a\\b)");
  EXPECT_EQ(record.fields[0].name, R"(v\q)");
  // In a measurement an equals sign needs no escape; "\=" is one all the same
  // (InfluxDB 1.x's point name unescapes it).
  EXPECT_EQ(Parse(R"(a=b\=c,device=d v=1)").measure_name, "a=b=c");
  // An escaped space joins the tag value, which then holds an unescaped '='.
  EXPECT_EQ(Reason(R"(m,device=d\ v=1)"),
            "tag 'device' has an unescaped '=' in its value (write \\=) (column 14)");
  EXPECT_EQ(Reason(R"(m,device=d\ v)"),
            "no fields (expected a space, then field=value after the measurement and tags) (column 14)");
  // A trailing backslash escapes nothing and is kept.
  EXPECT_TRUE(HasText(Reason(R"(m,device=d v=1\)"), R"(invalid value '1\')"));
}

TEST(LineProtocolTest, AnUnescapedEqualsSignInATagValueIsRefusedAfterItsFirstByte) {
  EXPECT_EQ(Reason("m,device=a=b v=1"),
            "tag 'device' has an unescaped '=' in its value (write \\=) (column 11)");
  EXPECT_EQ(Parse(R"(m,device=a\=b v=1)").device_id, "a=b");
  // InfluxDB's scanner checks from the second byte on.
  EXPECT_EQ(Parse("m,device==b v=1").device_id, "=b");
}

TEST(LineProtocolTest, Timestamps) {
  EXPECT_EQ(Parse("m,device=d v=1 0").timestamp, 0);
  EXPECT_EQ(Parse("m,device=d v=1 -1000").timestamp, -1000);
  EXPECT_EQ(Parse("m,device=d v=1 9223372036854775807").timestamp, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Parse("m,device=d v=1 -9223372036854775808").timestamp, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Reason("m,device=d v=1 9223372036854775808"),
            "timestamp '9223372036854775808' at precision ns is out of range (int64 nanoseconds reach from "
            "1677-09-21 to 2262-04-11)");
  EXPECT_EQ(Reason("m,device=d v=1 12.5"), "timestamp '12.5' is not an integer (column 16)");
  EXPECT_EQ(Reason("m,device=d v=1 1h"), "timestamp '1h' is not an integer (column 16)");
  EXPECT_EQ(Reason("m,device=d v=1 1 2"), "unexpected text after the timestamp (column 18)");
}

TEST(LineProtocolTest, MinuteAndHourPrecisionsOfInfluxDb1) {
  EXPECT_EQ(Parse("m,device=d v=1 28333333", Options(TimestampPrecision::kMinutes)).timestamp,
            int64_t{28333333} * 60'000'000'000);
  EXPECT_EQ(Parse("m,device=d v=1 472222", Options(TimestampPrecision::kHours)).timestamp,
            int64_t{472222} * 3'600'000'000'000);
  EXPECT_TRUE(HasText(Reason("m,device=d v=1 2562048", Options(TimestampPrecision::kHours)), "out of range"));
  EXPECT_EQ(ParseTimestampPrecision("m").value(), TimestampPrecision::kMinutes);
  EXPECT_EQ(ParseTimestampPrecision("h").value(), TimestampPrecision::kHours);
  EXPECT_EQ(TimestampPrecisionName(TimestampPrecision::kHours), "h");
  EXPECT_FALSE(ParseTimestampPrecision("d").ok());
}

TEST(LineProtocolTest, PrecisionScalesTimestamps) {
  EXPECT_EQ(Parse("m,device=d v=1 1700000000", Options(TimestampPrecision::kSeconds)).timestamp,
            int64_t{1'700'000'000'000'000'000});
  EXPECT_EQ(Parse("m,device=d v=1 1700000000123", Options(TimestampPrecision::kMilliseconds)).timestamp,
            int64_t{1'700'000'000'123'000'000});
  EXPECT_EQ(Parse("m,device=d v=1 1700000000123456", Options(TimestampPrecision::kMicroseconds)).timestamp,
            int64_t{1'700'000'000'123'456'000});
  EXPECT_EQ(Parse("m,device=d v=1 -5", Options(TimestampPrecision::kSeconds)).timestamp,
            int64_t{-5'000'000'000});
  // 2262-04-11 is the last day int64 nanoseconds can hold.
  EXPECT_EQ(Parse("m,device=d v=1 9223372036", Options(TimestampPrecision::kSeconds)).timestamp,
            int64_t{9'223'372'036'000'000'000});
  EXPECT_EQ(
      Reason("m,device=d v=1 9223372037", Options(TimestampPrecision::kSeconds)),
      "timestamp '9223372037' at precision s is out of range (int64 nanoseconds reach from 1677-09-21 to "
      "2262-04-11)");
  EXPECT_TRUE(HasText(Reason("m,device=d v=1 -9223372037", Options(TimestampPrecision::kSeconds)),
                      "is out of range"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1 9223372036855", Options(TimestampPrecision::kMilliseconds)),
                      "at precision ms is out of range"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1 9223372036854776", Options(TimestampPrecision::kMicroseconds)),
                      "at precision us is out of range"));
}

TEST(LineProtocolTest, AMissingTimestampIsTheDefaultTruncatedToThePrecision) {
  EXPECT_EQ(Parse("m,device=d v=1").timestamp, kNow);
  // Marked, so that the engine stamps it only with a trusted clock.
  EXPECT_TRUE(Parse("m,device=d v=1").receiver_time);
  EXPECT_FALSE(Parse("m,device=d v=1 1700000000000000000").receiver_time);
  EXPECT_EQ(Parse("m,device=d v=1", Options(TimestampPrecision::kMicroseconds)).timestamp,
            int64_t{1'700'000'000'123'456'000});
  EXPECT_EQ(Parse("m,device=d v=1", Options(TimestampPrecision::kMilliseconds)).timestamp,
            int64_t{1'700'000'000'123'000'000});
  EXPECT_EQ(Parse("m,device=d v=1", Options(TimestampPrecision::kSeconds)).timestamp,
            int64_t{1'700'000'000'000'000'000});
  LineProtocolOptions before_1970 = Options(TimestampPrecision::kSeconds);
  before_1970.default_timestamp = -1'500'000'000;  // rounds down, toward the past
  EXPECT_EQ(Parse("m,device=d v=1", before_1970).timestamp, int64_t{-2'000'000'000});
  LineProtocolOptions earliest = Options(TimestampPrecision::kSeconds);
  earliest.default_timestamp = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Parse("m,device=d v=1", earliest).timestamp, int64_t{-9'223'372'036'000'000'000});
}

TEST(LineProtocolTest, PrecisionNames) {
  EXPECT_EQ(*ParseTimestampPrecision("ns"), TimestampPrecision::kNanoseconds);
  EXPECT_EQ(*ParseTimestampPrecision("n"), TimestampPrecision::kNanoseconds);
  EXPECT_EQ(*ParseTimestampPrecision("us"), TimestampPrecision::kMicroseconds);
  EXPECT_EQ(*ParseTimestampPrecision("u"), TimestampPrecision::kMicroseconds);
  EXPECT_EQ(*ParseTimestampPrecision("ms"), TimestampPrecision::kMilliseconds);
  EXPECT_EQ(*ParseTimestampPrecision("s"), TimestampPrecision::kSeconds);
  EXPECT_EQ(ParseTimestampPrecision("d").status().message(),
            "unknown timestamp precision 'd' (ns, us, ms, s, m or h)");
  for (TimestampPrecision precision : {TimestampPrecision::kNanoseconds, TimestampPrecision::kMicroseconds,
                                       TimestampPrecision::kMilliseconds, TimestampPrecision::kSeconds,
                                       TimestampPrecision::kMinutes, TimestampPrecision::kHours}) {
    EXPECT_EQ(*ParseTimestampPrecision(TimestampPrecisionName(precision)), precision);
  }
}

TEST(LineProtocolTest, WhitespaceAroundAndBetweenSections) {
  const Record record = Parse("  \tm,device=d   v=1    42  \t\r");
  EXPECT_EQ(record.measure_name, "m");
  EXPECT_EQ(record.timestamp, 42);
  EXPECT_EQ(Parse("m,device=d v=1   ").timestamp, kNow);
}

TEST(LineProtocolTest, BlankAndCommentLinesHoldNoPoint) {
  for (const char* line :
       {"", "   ", "\t", "\r", "# a comment", "   # indented comment", "#m,device=d v=1"}) {
    Result<std::optional<Record>> parsed = ParseLineProtocolLine(line, Options());
    ASSERT_TRUE(parsed.ok()) << line << ": " << parsed.status().ToString();
    EXPECT_FALSE(parsed->has_value()) << line;
  }
}

TEST(LineProtocolTest, SyntaxErrorsNameTheProblemAndColumn) {
  EXPECT_EQ(Reason(",device=d v=1"), "missing measurement (column 1)");
  EXPECT_EQ(Reason(" ,device=d v=1"), "missing measurement (column 2)");
  EXPECT_EQ(Reason("garbage"),
            "no fields (expected a space, then field=value after the measurement and tags) "
            "(column 8)");
  EXPECT_EQ(Reason("m,device=d"),
            "no fields (expected a space, then field=value after the measurement and tags) "
            "(column 11)");
  EXPECT_EQ(Reason("m,device v=1"), "tag 'device' has no '=' and value (column 9)");
  EXPECT_EQ(Reason("m,device= v=1"), "tag 'device' has an empty value (column 10)");
  EXPECT_EQ(Reason("m,=d v=1"), "empty tag key (column 3)");
  EXPECT_EQ(Reason("m, v=1"), "empty tag key (column 3)");
  EXPECT_EQ(Reason("m,device=a,device=b v=1"), "tag 'device' appears twice (column 12)");
  EXPECT_EQ(Reason("m,device=d v"), "field 'v' has no '=' and value (column 13)");
  EXPECT_EQ(Reason("m,device=d v="), "field 'v' has an empty value (column 14)");
  EXPECT_EQ(Reason("m,device=d v=,w=1"), "field 'v' has an empty value (column 14)");
  EXPECT_EQ(Reason("m,device=d =1"), "empty field key (column 12)");
  EXPECT_EQ(Reason("m,device=d v=1,"), "empty field key (column 16)");
  EXPECT_EQ(Reason("m,device=d v=1,,w=2"), "empty field key (column 16)");
  // The same field twice is refused by the record validation.
  EXPECT_EQ(Reason("m,device=d v=1,v=2"), "field 'v' appears twice");
}

TEST(LineProtocolTest, ColumnsCountCharactersNotBytes) {
  EXPECT_EQ(Reason("m\xC3\xA9,device=d v"), "field 'v' has no '=' and value (column 14)");
}

TEST(LineProtocolTest, NulBytesAndInvalidUtf8AreRefusedAnywhere) {
  using namespace std::string_literals;
  EXPECT_EQ(Reason("m,device=d v=\"a\0b\""s), "NUL byte at column 16");
  EXPECT_EQ(Reason("m\0,device=d v=1"s), "NUL byte at column 2");
  EXPECT_EQ(Reason("m,device=d\xFF v=1"), "invalid UTF-8 at column 11");
  EXPECT_EQ(Reason("m,device=d s=\"\xC3\""), "invalid UTF-8 at column 15");
  // Overlong encoding of '/' and an encoded surrogate.
  EXPECT_EQ(Reason("m,device=d s=\"\xC0\xAF\""), "invalid UTF-8 at column 15");
  EXPECT_EQ(Reason("m,device=d s=\"\xED\xA0\x80\""), "invalid UTF-8 at column 15");
}

TEST(LineProtocolTest, ControlCharactersInIdentifiersAreRefused) {
  EXPECT_TRUE(HasText(Reason("m,device=a\tb v=1"), "device_id contains a control character"));
  EXPECT_TRUE(HasText(Reason("m\x7F,device=d v=1"), "measure_name contains a control character"));
  EXPECT_TRUE(HasText(Reason("m,device=d,k=a\x1B[0m v=1"), "dimension 'k' contains a control character"));
}

TEST(LineProtocolTest, IdentifierLimitsOfTheDataModelApply) {
  const std::string long_device(kMaxDeviceIdBytes + 1, 'd');
  EXPECT_EQ(Reason("m,device=" + long_device + " v=1"), "device_id is 129 bytes long; the limit is 128");
  EXPECT_EQ(Parse("m,device=" + std::string(kMaxDeviceIdBytes, 'd') + " v=1").device_id.size(),
            kMaxDeviceIdBytes);
  const std::string long_measure(kMaxMeasureNameBytes + 1, 'm');
  EXPECT_EQ(Reason(long_measure + ",device=d v=1"), "measure_name is 257 bytes long; the limit is 256");
  std::string many_fields = "m,device=d ";
  for (size_t i = 0; i <= kMaxFieldsPerRecord; ++i)
    many_fields += (i ? ",f" : "f") + std::to_string(i) + "=1";
  EXPECT_EQ(Reason(many_fields), "record has 129 fields; the limit is 128");
}

TEST(LineProtocolTest, LinesLongerThanTheCapAreRefusedWithoutParsing) {
  LineProtocolOptions options = Options();
  options.max_line_bytes = 32;
  EXPECT_EQ(Parse("m,device=d v=1 1", options).timestamp, 1);
  const std::string line = "m,device=d s=\"" + std::string(40, 'x') + "\"";
  EXPECT_EQ(Reason(line, options), "line is 55 bytes long; the limit is 32");
  // The default cap is 64 KiB.
  EXPECT_EQ(Reason(std::string(64 * 1024 + 1, 'x')), "line is 65537 bytes long; the limit is 65536");
}

TEST(LineProtocolTest, QuotedInputInErrorsIsShortened) {
  const std::string value(100, '9');
  const std::string reason = Reason("m,device=d v=" + value + "i");
  EXPECT_EQ(reason, "field 'v': '" + std::string(40, '9') + "...' overflows int64");
}

TEST(LineProtocolTest, ABodyKeepsGoodLinesAndReportsBadOnesByLineNumber) {
  const std::string body =
      "# sensors of the lab\n"
      "env,device=d1 temperature=21.5 1000\r\n"
      "\n"
      "env,device=d2 temperature=oops 1000\n"
      "env temperature=1 1000\n"
      "env,device=d3 temperature=22,humidity=40i 2000\r\n"
      "   \n"
      "env,device=d4 ok=true";
  const LineProtocolBatch batch = ParseLineProtocol(body, Options());
  ASSERT_EQ(batch.records.size(), 3u);
  EXPECT_EQ(batch.records[0].line_number, 2u);
  EXPECT_EQ(batch.records[0].record.device_id, "d1");
  EXPECT_EQ(batch.records[0].record.timestamp, 1000);
  EXPECT_EQ(batch.records[1].line_number, 6u);
  EXPECT_EQ(batch.records[1].record.device_id, "d3");
  EXPECT_EQ(batch.records[2].line_number, 8u);
  EXPECT_EQ(batch.records[2].record.timestamp, kNow);
  ASSERT_EQ(batch.errors.size(), 2u);
  EXPECT_EQ(batch.errors[0].line_number, 4u);
  EXPECT_TRUE(HasText(batch.errors[0].reason, "field 'temperature' has an invalid value 'oops'"));
  EXPECT_EQ(batch.errors[1].line_number, 5u);
  EXPECT_EQ(batch.errors[1].reason, "no 'device' tag");
}

TEST(LineProtocolTest, ABodyEndingWithANewlineHasNoExtraLine) {
  const LineProtocolBatch batch = ParseLineProtocol("m,device=d v=1 1\nm,device=d v=2 2\n", Options());
  EXPECT_EQ(batch.records.size(), 2u);
  EXPECT_TRUE(batch.errors.empty());
  EXPECT_TRUE(ParseLineProtocol("", Options()).records.empty());
  EXPECT_TRUE(ParseLineProtocol("\n\n\r\n", Options()).errors.empty());
}

TEST(LineProtocolTest, ANewlineInsideAQuotedFieldValueBelongsToTheValue) {
  const LineProtocolBatch batch =
      ParseLineProtocol("m,device=d s=\"two\nlines\" 1\nm,device=d v=2 2\n", Options());
  ASSERT_TRUE(batch.errors.empty()) << batch.errors[0].reason;
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].line_number, 1u);
  EXPECT_EQ(*FieldValue(batch.records[0].record, "s"), Value(std::string("two\nlines")));
  // Line numbers keep counting the newlines of the body.
  EXPECT_EQ(batch.records[1].line_number, 3u);
  // Quotes in the measurement, tags or field keys do not open a value.
  const LineProtocolBatch tags =
      ParseLineProtocol("m,device=\"a x=1 1\nm,device=a y=1 2\nm,device=b \"k=1 3\n", Options());
  ASSERT_EQ(tags.records.size(), 3u);
  EXPECT_EQ(tags.records[0].record.device_id, "\"a");
  EXPECT_EQ(tags.records[2].record.fields[0].name, "\"k");
  // An unclosed quote takes the rest of the body, as in InfluxDB.
  const LineProtocolBatch open = ParseLineProtocol("m,device=d s=\"open 1\nm,device=d v=2 2\n", Options());
  EXPECT_TRUE(open.records.empty());
  ASSERT_EQ(open.errors.size(), 1u);
  EXPECT_TRUE(HasText(open.errors[0].reason, "has no closing quote"));
}

TEST(LineProtocolTest, ACommentEndsAtItsNewlineEvenAfterABackslash) {
  const LineProtocolBatch batch = ParseLineProtocol("# C:\\\nm,device=d v=1 1\n", Options());
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.records[0].line_number, 2u);
}

TEST(LineProtocolTest, TtlAndVersionAreReservedFields) {
  const Record record = Parse("m,device=d v=1,_ttl=1800000000i,_version=7u 1700000000000000000");
  EXPECT_EQ(record.ttl, 1'800'000'000);
  EXPECT_EQ(record.version, 7u);
  ASSERT_EQ(record.fields.size(), 1u);  // neither is an ordinary field
  EXPECT_EQ(record.fields[0].name, "v");
  EXPECT_EQ(Parse("m,device=d _version=3i,v=1").version, 3u);
  EXPECT_EQ(Parse("m,device=d v=1,_version=18446744073709551615u").version,
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Parse("m,device=d v=1,_ttl=0i 1700000000000000000").ttl, 0);  // none: the table's default
}

TEST(LineProtocolTest, AReservedFieldUsedWronglyRefusesTheLine) {
  EXPECT_EQ(Reason("m,device=d v=1,_ttl=1800000000"),
            "reserved field _ttl must be an integer (the absolute expiry in Unix seconds, e.g. "
            "_ttl=1700003600i), not '1800000000' (column 21)");
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_ttl=\"soon\""), "reserved field _ttl must be an integer"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_ttl=true"), "reserved field _ttl must be an integer"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_version=2.5"), "reserved field _version must be an integer"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_version=5t"), "reserved field _version must be an integer"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_version=-1i"), "reserved field _version must not be negative"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_ttl=-5i"), "reserved field _ttl must not be negative"));
  EXPECT_TRUE(HasText(Reason("m,device=d v=1,_version=18446744073709551616u"), "overflows uint64"));
  EXPECT_EQ(Reason("m,device=d v=1,_ttl=9223372036854775808u"),
            "_ttl 9223372036854775808 is beyond int64 seconds");
  EXPECT_EQ(Reason("m,device=d v=1,_version=1i,_version=2i"), "field '_version' appears twice");
  // A duration where the absolute time belongs would expire the record at once.
  EXPECT_EQ(Reason("m,device=d v=1,_ttl=3600i 1700000000000000000"),
            "_ttl 3600 is not after the record's time (1700000000 s): _ttl is an absolute Unix time in "
            "seconds, not a duration");
  EXPECT_EQ(Reason("m,device=d _ttl=1800000000i,_version=1i"), "no fields besides _ttl and _version");
}

TEST(LineProtocolTest, OtherFieldNamesStartingWithAnUnderscoreAreRefused) {
  EXPECT_EQ(Reason("m,device=d v=1,_value=2"),
            "field names starting with '_' are reserved (_ttl and _version are defined); '_value' is not one "
            "(column 16)");
  EXPECT_TRUE(HasText(Reason("m,device=d _TTL=1i"), "'_TTL' is not one"));
  // Tags and measurements may start with one.
  const Record record = Parse("_m,device=d,_site=a v=1");
  EXPECT_EQ(record.measure_name, "_m");
  EXPECT_EQ(record.dimensions.at("_site"), "a");
}

TEST(LineProtocolTest, TimestampFieldsTakeATSuffixInTheWritesPrecision) {
  EXPECT_EQ(*FieldValue(Parse("m,device=d started=1700000000000000000t"), "started"),
            Value(Timestamp{1'700'000'000'000'000'000}));
  EXPECT_EQ(*FieldValue(Parse("m,device=d started=-1t"), "started"), Value(Timestamp{-1}));
  EXPECT_EQ(
      *FieldValue(Parse("m,device=d started=1700000000t", Options(TimestampPrecision::kSeconds)), "started"),
      Value(Timestamp{1'700'000'000'000'000'000}));
  EXPECT_EQ(
      *FieldValue(Parse("m,device=d started=1700000000123t", Options(TimestampPrecision::kMilliseconds)),
                  "started"),
      Value(Timestamp{1'700'000'000'123'000'000}));
  EXPECT_EQ(
      Reason("m,device=d started=9223372037t", Options(TimestampPrecision::kSeconds)),
      "field 'started': timestamp '9223372037t' at precision s is out of range (int64 nanoseconds reach "
      "from 1677-09-21 to 2262-04-11)");
  // A lone t is still the boolean true; other spellings are refused.
  EXPECT_EQ(*FieldValue(Parse("m,device=d b=t"), "b"), Value(true));
  for (const char* bad : {"1.5t", "1et", "t1", "12tt", "+1t", "0x1t"}) {
    EXPECT_TRUE(HasText(Reason(std::string("m,device=d s=") + bad), "invalid value")) << bad;
  }
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// A body read in slices gives the records and errors of the whole body, in
// order and with the body's line numbers, whatever the slice size: a slice
// ends only after a whole line, even one whose quoted string holds a LF.
TEST(LineProtocolReaderTest, SlicesGiveTheWholeBodysLinesAndLineNumbers) {
  std::string body;
  for (int i = 0; i < 40; ++i) {
    if (i % 7 == 3) body += "env temperature=1\n";  // no device tag
    if (i % 11 == 5) body += "env,device=d1 note=\"two\nlines\" " + std::to_string(i) + "\n";
    if (i % 13 == 8) body += "# a comment\n\n";
    body += "env,device=d" + std::to_string(i % 3) + " temperature=" + std::to_string(i) + " " +
            std::to_string(i) + "\n";
  }
  const LineProtocolBatch whole = ParseLineProtocol(body, Options());
  ASSERT_FALSE(whole.errors.empty());
  for (size_t slice_bytes : {size_t{1}, size_t{17}, size_t{64}, size_t{200}, body.size()}) {
    LineProtocolReader reader(body, Options());
    std::vector<size_t> record_lines, error_lines;
    std::vector<std::string> notes;
    size_t slices = 0;
    while (!reader.done()) {
      LineProtocolBatch slice = reader.Next(slice_bytes);
      ++slices;
      for (const LineProtocolRecord& r : slice.records) {
        record_lines.push_back(r.line_number);
        if (const Value* note = FieldValue(r.record, "note")) notes.push_back(std::get<std::string>(*note));
      }
      for (const LineProtocolError& e : slice.errors) error_lines.push_back(e.line_number);
    }
    EXPECT_TRUE(reader.Next(slice_bytes).records.empty());
    std::vector<size_t> whole_records, whole_errors;
    for (const LineProtocolRecord& r : whole.records) whole_records.push_back(r.line_number);
    for (const LineProtocolError& e : whole.errors) whole_errors.push_back(e.line_number);
    EXPECT_EQ(record_lines, whole_records) << "slice bytes " << slice_bytes;
    EXPECT_EQ(error_lines, whole_errors) << "slice bytes " << slice_bytes;
    EXPECT_EQ(notes, std::vector<std::string>(notes.size(), "two\nlines"));
    EXPECT_EQ(notes.size(), 4u);
    if (slice_bytes == 1) {
      EXPECT_GT(slices, 40u);
    }
    if (slice_bytes == body.size()) {
      EXPECT_EQ(slices, 1u);
    }
  }
}

}  // namespace
}  // namespace cairn

namespace cairn {
namespace {

// A window of a longer body: the last line, cut before its LF (here inside
// a quoted string that holds a LF of its own), is left for the next window,
// which goes on with the line numbers where this one stopped.
TEST(LineProtocolReaderTest, AWindowLeavesItsCutLastLineForTheNext) {
  const std::string body =
      "env,device=d1 temperature=1 1\n"
      "env,device=d1 note=\"a\nb\" 2\n"
      "env temperature=3 3\n"
      "env,device=d1 temperature=4 4\n";
  const size_t cut = body.find("a\nb") + 2;  // inside the quoted LF's line
  LineProtocolReader first(std::string_view(body).substr(0, cut), Options(), 1);
  LineProtocolBatch batch = first.Next(body.size(), /*body_complete=*/false);
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_TRUE(batch.errors.empty());
  EXPECT_EQ(first.offset(), body.find("env,device=d1 note"));
  EXPECT_EQ(first.line_number(), 2u);

  LineProtocolReader rest(std::string_view(body).substr(first.offset()), Options(), first.line_number());
  batch = rest.Next(body.size(), /*body_complete=*/true);
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].line_number, 2u);
  EXPECT_EQ(std::get<std::string>(*FieldValue(batch.records[0].record, "note")), "a\nb");
  ASSERT_EQ(batch.errors.size(), 1u);
  EXPECT_EQ(batch.errors[0].line_number, 4u);
  EXPECT_EQ(batch.records[1].line_number, 5u);
  EXPECT_TRUE(rest.done());
}

}  // namespace
}  // namespace cairn
