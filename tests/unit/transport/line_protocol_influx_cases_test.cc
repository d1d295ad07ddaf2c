// The behaviours InfluxDB's own parser tests (models/points_test.go, and the
// `time` rules of its shard) pin down, as cairn's cases: each line is the
// InfluxDB case with cairn's required device tag added, and the expected
// point or refusal is what InfluxDB answers unless `influx` says how it
// differs (every such difference is listed in line_protocol.md).
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cairn/text/line_protocol.h"

namespace cairn {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinInt64 = std::numeric_limits<int64_t>::min();

struct Point {
  std::string measurement;
  std::map<std::string, std::string> tags;  // besides the device
  std::vector<Field> fields;
  int64_t timestamp = 0;
  std::string device = "d";
};

struct Case {
  std::string source;         // the points_test.go test it mirrors
  std::string body;           // one line, or a few
  std::vector<Point> points;  // expected, in order
  std::string error;          // a part of the reason of the body's one refused line; empty: none refused
  std::string influx;         // InfluxDB's answer where cairn's documented rule differs
  TimestampPrecision precision = TimestampPrecision::kNanoseconds;
  // The default time of lines without one.
  int64_t now = 0;
};

Value S(const char* text) { return Value(std::string(text)); }
Value I(int64_t value) { return Value(value); }

// DBL_MAX written out in full, as Go's FormatFloat(MaxFloat64, 'f', 1, 64).
std::string MaxFloatText() {
  char text[400];
  std::snprintf(text, sizeof(text), "%.1f", DBL_MAX);
  return text;
}

Point P(std::string measurement, std::map<std::string, std::string> tags, std::vector<Field> fields,
        int64_t timestamp = 0) {
  return Point{std::move(measurement), std::move(tags), std::move(fields), timestamp};
}

Case Body(std::string source, std::string body, std::vector<Point> points = {}) {
  Case c;
  c.source = std::move(source);
  c.body = std::move(body);
  c.points = std::move(points);
  return c;
}

Case Refused(std::string source, std::string body, std::string error, std::string influx = "") {
  Case c = Body(std::move(source), std::move(body));
  c.error = std::move(error);
  c.influx = std::move(influx);
  return c;
}

Case Accepted(std::string source, std::string body, Point point, std::string influx = "") {
  Case c = Body(std::move(source), std::move(body), {std::move(point)});
  c.influx = std::move(influx);
  return c;
}

std::vector<Case> TagCases() {
  return {
      Accepted("TestPoint_Tags", "cpu,device=d value=1", P("cpu", {}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", "cpu,device=d,tag0=v0,tag1=v0 value=1",
               P("cpu", {{"tag0", "v0"}, {"tag1", "v0"}}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", R"(cpu,device=d,tag0=v\ 0\ 1,tag1=v2 value=1)",
               P("cpu", {{"tag0", "v 0 1"}, {"tag1", "v2"}}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", R"(cpu,device=d,tag0=\, value=1)",
               P("cpu", {{"tag0", ","}}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", R"(cpu,device=d,ta\ g0=\, value=1)",
               P("cpu", {{"ta g0", ","}}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", R"(cpu,device=d,tag0=\,1 value=1)",
               P("cpu", {{"tag0", ",1"}}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", R"(cpu,device=d,tag0=1\"\",t=k value=1)",
               P("cpu", {{"tag0", R"(1\"\")"}, {"t", "k"}}, {{"value", 1.0}})),
      Accepted("TestPoint_Tags", "cpu,device=d,_measurement=v0,_field=v1 value=1",
               P("cpu", {{"_measurement", "v0"}, {"_field", "v1"}}, {{"value", 1.0}}),
               "2.x refuses the tag keys _measurement and _field (reserved by its storage); 1.x takes them"),
      Refused("TestPoint_Tags / tsdb shard", "cpu,device=d,tag0=v0,time=v0 value=1",
              R"(invalid tag key: input tag "time" on measurement "cpu" is invalid)"),
      Refused("TestPoint_Nulls", std::string("cpu,device=d,tag") + '\0' + "1=v0 value=1", "NUL byte",
              "accepts NUL bytes in tag keys and values and field keys"),
      Accepted("TestPoint_EqPattern_Measurement", "measurement=withEq,device=d,tag0=v0 value=1",
               P("measurement=withEq", {{"tag0", "v0"}}, {{"value", 1.0}})),
      Accepted("TestPoint_EqPattern_Measurement", "tag0=v0,device=d value=1",
               P("tag0=v0", {}, {{"value", 1.0}})),
      Refused("TestParsePointNoFields", "cpu_load_short,device=server01,region=us-west", "no fields"),
      Refused("TestParsePointNoFields", "cpu", "no fields"),
      Refused("TestParsePointNoFields", "cpu,device==", "no fields"),
      Refused("TestParsePointNoFields", "=", "no fields"),
      Refused("TestParsePointMissingTagKey", "cpu, value=1", "empty tag key"),
      Refused("TestParsePointMissingTagKey", "cpu,", "empty tag key"),
      Refused("TestParsePointMissingTagKey", "cpu,,,", "empty tag key"),
      Refused("TestParsePointMissingTagKey", "cpu,device=serverA,=us-east value=1i", "empty tag key"),
      Refused("TestParsePointMissingTagKey", R"(cpu,device=serverAa\,,=us-east value=1i)", "empty tag key"),
      Refused("TestParsePointMissingTagKey", R"(cpu,device=serverA\,,=us-east value=1i)", "empty tag key"),
      Refused("TestParsePointMissingTagKey", "cpu, =serverA value=1i", "empty tag key"),
      Accepted("TestParsePointMissingTagKey", R"(cpu,device=serverA,\ =us-east value=1i)",
               Point{"cpu", {{" ", "us-east"}}, {{"value", I(1)}}, 0, "serverA"}),
      Refused("TestParsePointMissingTagValue", "cpu,device", "tag 'device' has no '=' and value"),
      Refused("TestParsePointMissingTagValue", "cpu,device,", "tag 'device' has no '=' and value"),
      Refused("TestParsePointMissingTagValue", "cpu,device=", "tag 'device' has an empty value"),
      Refused("TestParsePointMissingTagValue", "cpu,device value=1i", "tag 'device' has no '=' and value"),
      Refused("TestParsePointMissingTagValue", "cpu,device=serverA,region value=1i",
              "tag 'region' has no '='"),
      Refused("TestParsePointMissingTagValue", "cpu,device=serverA,region= value=1i",
              "tag 'region' has an empty value"),
      Refused("TestParsePointMissingTagValue", "cpu,device=serverA,region=,zone=us-west value=1i",
              "tag 'region' has an empty value"),
      Refused("TestParsePointInvalidTagFormat", "cpu,device=f=o,", "unescaped '=' in its value"),
      Refused("TestParsePointInvalidTagFormat", R"(cpu,device=f\==o,)", "unescaped '=' in its value"),
      Refused("TestParsePointWithDuplicateTags", "cpu,device=d,host=serverA,host=serverB value=1i 1000000000",
              "tag 'host' appears twice"),
      Refused("TestParsePointWithDuplicateTags", "cpu,device=d,b=2,b=1,c=3 value=1i 1000000000",
              "tag 'b' appears twice"),
      Refused("TestParsePointWithDuplicateTags", "cpu,device=d,b=2,c=3,b=1 value=1i 1000000000",
              "tag 'b' appears twice"),
      Accepted("TestParsePointKeyUnsorted", "cpu,device=d,last=1,first=2 value=1i",
               P("cpu", {{"first", "2"}, {"last", "1"}}, {{"value", I(1)}})),
      Accepted(
          "TestParsePointQuotedTags", R"(cpu,device=d,"host"="serverA",region=us-east value=1.0 1000000000)",
          P("cpu", {{R"("host")", R"("serverA")"}, {"region", "us-east"}}, {{"value", 1.0}}, 1000000000)),
      Accepted("TestParsePointQuotedMeasurement",
               R"("cpu",device=serverA,region=us-east value=1.0 1000000000)",
               Point{R"("cpu")", {{"region", "us-east"}}, {{"value", 1.0}}, 1000000000, "serverA"}),
      Accepted("TestParseKeyBytes", R"(m\ q,device=d,k\ q=v x=1)", P("m q", {{"k q", "v"}}, {{"x", 1.0}})),
  };
}

std::vector<Case> EscapeCases() {
  const std::string source = "TestParsePointUnescape";
  return {
      Accepted(source, R"(foo\,bar,device=d value=1i)", P("foo,bar", {}, {{"value", I(1)}})),
      Accepted(source, R"(cpu\,main,device=d,regions=east value=1.0)",
               P("cpu,main", {{"regions", "east"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu\ load,device=d,region=east value=1.0)",
               P("cpu load", {{"region", "east"}}, {{"value", 1.0}})),
      // 1.x's point name unescapes "\=" (its series key keeps it).
      Accepted(source, R"(cpu\=load,device=d,region=east value=1.0)",
               P("cpu=load", {{"region", "east"}}, {{"value", 1.0}})),
      Accepted(source, "cpu=load,device=d,region=east value=1.0",
               P("cpu=load", {{"region", "east"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,region\,zone=east value=1.0)",
               P("cpu", {{"region,zone", "east"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,region\ zone=east value=1.0)",
               P("cpu", {{"region zone", "east"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,reg\\=ion=east value=1.0)",
               P("cpu", {{R"(reg\=ion)", "east"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,\ =east value=1.0)", P("cpu", {{" ", "east"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=east\,west value=1.0)",
               P("cpu", {{"regions", "east,west"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=\\ east value=1.0)",
               P("cpu", {{"regions", R"(\ east)"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=eas\\ t value=1.0)",
               P("cpu", {{"regions", R"(eas\ t)"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=east\\  value=1.0)",
               P("cpu", {{"regions", R"(east\ )"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=east\ west value=1.0)",
               P("cpu", {{"regions", "east west"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=east value\,ms=1.0)",
               P("cpu", {{"regions", "east"}}, {{"value,ms", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=east value\ ms=1.0)",
               P("cpu", {{"regions", "east"}}, {{"value ms", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=east value="1")",
               P("cpu", {{"regions", "east"}}, {{"value", S("1")}})),
      Accepted(source, R"(cpu,device=d,regions=east value="1,0")",
               P("cpu", {{"regions", "east"}}, {{"value", S("1,0")}})),
      Accepted(source, R"(cpu,device=d,regions=eas\t value=1.0)",
               P("cpu", {{"regions", R"(eas\t)"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d,regions=\\,\,\=east value=1.0)",
               P("cpu", {{"regions", R"(\,,=east)"}}, {{"value", 1.0}})),
      Accepted(source, R"(cpu,device=d \a=1i)", P("cpu", {}, {{R"(\a)", I(1)}})),
      Accepted(source, R"(cpu=load,device=d,equals\=foo=tag\=value value=1i)",
               P("cpu=load", {{"equals=foo", "tag=value"}}, {{"value", I(1)}})),
      // Field keys unescape a double quote too (escape.Unescape).
      Accepted("TestParsePointsQuotesInFieldKey", R"(cpu,device=d a\"b=1)", P("cpu", {}, {{R"(a"b)", 1.0}})),
      Refused("TestParsePointsQuotesInFieldKey", R"(cpu,device=d "\, '= "\ v=1.0)", "has no '=' and value"),
  };
}

std::vector<Case> FieldCases() {
  const std::string tags = "cpu,device=serverA,region=us-west ";
  const std::string max_float = MaxFloatText();
  auto value = [&](const char* text) { return tags + "value=" + text; };
  auto number = [&](std::string source, const char* text, Value expected) {
    return Accepted(std::move(source), value(text),
                    Point{"cpu", {{"region", "us-west"}}, {{"value", std::move(expected)}}, 0, "serverA"});
  };
  std::vector<Case> cases = {
      Refused("TestParsePointMissingQuote", R"(cpu,device=serverA value="test)", "has no closing quote"),
      Refused("TestParsePointMissingQuote", R"(cpu,device=serverA value="test"")", "after the string value"),
      Refused("TestParsePointMissingFieldName", tags + "=", "empty field key"),
      Refused("TestParsePointMissingFieldName", tags + "=123i", "empty field key"),
      Accepted("TestParsePointMissingFieldName", tags + R"(a\ =123i)",
               Point{"cpu", {{"region", "us-west"}}, {{"a ", I(123)}}, 0, "serverA"}),
      Refused("TestParsePointMissingFieldName", tags + "value=123i,=456i", "empty field key"),
      Refused("TestParsePointMissingFieldValue", tags + "value=", "has an empty value"),
      Refused("TestParsePointMissingFieldValue", tags + "value= 1000000000i", "has an empty value"),
      Refused("TestParsePointMissingFieldValue", tags + "value=,value2=1i", "has an empty value"),
      Refused("TestParsePointMissingFieldValue", tags + "1434055562000000000i", "has no '=' and value"),
      Refused("TestParsePointMissingFieldValue", tags + "value=1i,b", "field 'b' has no '=' and value"),
      Refused("TestParsePointMissingFieldValue", R"(m,device=d f="blah"=123,r 1531703600000000000)",
              "unexpected '=' after the string value"),
      Refused("TestParsePointMaxInt64", value("9223372036854775808i"), "overflows int64"),
      number("TestParsePointMaxInt64", "9223372036854775807i", I(kMaxInt64)),
      number("TestParsePointMaxInt64", "0009223372036854775807i", I(kMaxInt64)),
      Refused("TestParsePointMinInt64", value("-9223372036854775809i"), "overflows int64"),
      number("TestParsePointMinInt64", "-9223372036854775808i", I(kMinInt64)),
      number("TestParsePointMinInt64", "-0009223372036854775808i", I(kMinInt64)),
      Refused("TestParsePointMaxFloat64", value(("1" + max_float).c_str()),
              "out of the range of a 64-bit float"),
      number("TestParsePointMaxFloat64", max_float.c_str(), Value(DBL_MAX)),
      number("TestParsePointMaxFloat64", ("0000" + max_float).c_str(), Value(DBL_MAX)),
      Refused("TestParsePointMinFloat64", value(("-1" + max_float).c_str()),
              "out of the range of a 64-bit float"),
      number("TestParsePointMinFloat64", ("-" + max_float).c_str(), Value(-DBL_MAX)),
      number("TestParsePointMinFloat64", ("-0000000" + max_float).c_str(), Value(-DBL_MAX)),
      Refused("TestParsePointMaxUint64", value("18446744073709551616u"), "does not fit in int64"),
      Refused("TestParsePointMaxUint64", value("18446744073709551615u"), "does not fit in int64",
              "2.x (and 1.x built with unsigned support) store it as uint64; cairn has no unsigned type"),
      Refused("TestParsePointMaxUint64", value("00018446744073709551615u"), "does not fit in int64",
              "as above"),
      Refused("TestParsePointMinUint64", value("--1u"), "invalid value"),
      number("TestParsePointMinUint64", "0u", I(0)),
      number("TestParsePointMinUint64", "0000u", I(0)),
      Refused("TestParsePointNumberNonNumeric", value(".1a"), "invalid value"),
      Refused("TestParsePointNegativeWrongPlace", value("0.-1"), "invalid value"),
      Refused("TestParsePointOnlyNegativeSign", value("-"), "invalid value"),
      Refused("TestParsePointFloatMultipleDecimals", value("1.1.1"), "invalid value"),
      number("TestParsePointInteger", "1i", I(1)),
      number("TestParsePointNegativeInteger", "-1i", I(-1)),
      number("TestParsePointNegativeFloat", "-1.0", Value(-1.0)),
      number("TestParsePointFloatNoLeadingDigit", ".1", Value(0.1)),
      number("TestParsePointFloatScientific", "1.0e4", Value(1e4)),
      number("TestParsePointFloatScientific", "1e4", Value(1e4)),
      number("TestParsePointFloatScientificUpper", "1.0E4", Value(1e4)),
      number("TestParsePointFloatScientificUpper", "1E4", Value(1e4)),
      number("TestParsePointFloatScientificDecimal", "1.0e-4", Value(1e-4)),
      number("TestParsePointFloatNegativeScientific", "-1.0e-4", Value(-1e-4)),
      Refused("TestParsePointBooleanInvalid", value("a"), "invalid value"),
      Refused("TestParsePointScientificIntInvalid", value("9ie10"), "invalid value"),
      Refused("TestParsePointScientificIntInvalid", value("9e10i"), "invalid value"),
      Refused("TestParsePointNaN", "cpu,device=d value=NaN 1000000000", "is NaN"),
      Refused("TestParsePointNaN", "cpu,device=d value=nAn 1000000000", "is NaN"),
      Refused("TestParsePointNaN", "cpu,device=d value=NaN", "is NaN"),
      Accepted("TestNewPointFloatWithoutDecimal", "cpu,device=d value=1 1000000000",
               P("cpu", {}, {{"value", 1.0}}, 1000000000)),
      Accepted("TestNewPointNegativeFloat", "cpu,device=d value=-0.64 1000000000",
               P("cpu", {}, {{"value", -0.64}}, 1000000000)),
      Accepted("TestNewPointFloatNoDecimal", "cpu,device=d value=1. 1000000000",
               P("cpu", {}, {{"value", 1.0}}, 1000000000)),
      Accepted("TestNewPointFloatScientific", "cpu,device=d value=6.632243e+06 1000000000",
               P("cpu", {}, {{"value", 6632243.0}}, 1000000000)),
      Accepted("TestNewPointLargeInteger", "cpu,device=d value=6632243i 1000000000",
               P("cpu", {}, {{"value", I(6632243)}}, 1000000000)),
      Accepted(
          "TestParsePointIntsFloats", "cpu,device=d,region=us-east int=10i,float=11.0,float2=12.1 1000000000",
          P("cpu", {{"region", "us-east"}}, {{"int", I(10)}, {"float", 11.0}, {"float2", 12.1}}, 1000000000)),
      Accepted(
          "TestParsePointWithBoolField",
          "cpu,device=d true=true,t=t,T=T,TRUE=TRUE,True=True,false=false,f=f,F=F,FALSE=FALSE,False=False 1",
          P("cpu", {},
            {{"true", true},
             {"t", true},
             {"T", true},
             {"TRUE", true},
             {"True", true},
             {"false", false},
             {"f", false},
             {"F", false},
             {"FALSE", false},
             {"False", false}},
            1)),
      Accepted("TestPoint_FieldIterator_FieldMap", "m,device=d v=42i,f=42,g=42.314,u=123u",
               P("m", {}, {{"v", I(42)}, {"f", 42.0}, {"g", 42.314}, {"u", I(123)}})),
      Accepted("TestPoint_FieldIterator_FieldMap",
               "m,device=d a=2i,b=3i,c=true,d=\"stuff\",e=-0.23,f=123.456",
               P("m", {},
                 {{"a", I(2)}, {"b", I(3)}, {"c", true}, {"d", S("stuff")}, {"e", -0.23}, {"f", 123.456}})),
      // InfluxDB 1.x drops a field named time (the point too if it has no
      // other): cairn refuses the line rather than drop data unreported.
      Refused("tsdb shard: field named time", "cpu,device=d time=1",
              R"(invalid field name: input field "time" on measurement "cpu" is invalid)"),
      Refused("tsdb shard: field named time", "cpu,device=d value=1,time=2",
              R"(invalid field name: input field "time" on measurement "cpu" is invalid)",
              "stores value=1 and drops the time field without saying so"),
  };
  for (const char* bad : {"-", "-i", "-.", ".", "1.0i", "1ii", "1a", "-e-e-e", "42+3", "-123u"}) {
    cases.push_back(
        Refused("TestParsePointBadNumber", std::string("cpu,device=d v=") + bad + " ", "invalid value"));
  }
  cases.push_back(Refused("TestParsePointBadNumber", "cpu,device=d v= ", "has an empty value"));
  return cases;
}

std::vector<Case> StringCases() {
  const std::string tags = "cpu,device=serverA,region=us-east ";
  auto point = [](std::vector<Field> fields) {
    return Point{"cpu", {{"region", "us-east"}}, std::move(fields), 1000000000, "serverA"};
  };
  return {
      Accepted("TestParsePointWithStringField", tags + R"(value=1.0,str="foo",str2="bar" 1000000000)",
               point({{"value", 1.0}, {"str", S("foo")}, {"str2", S("bar")}})),
      Accepted("TestParsePointWithStringField", tags + R"(str="foo \" bar" 1000000000)",
               point({{"str", S(R"(foo " bar)")}})),
      Accepted("TestParsePointWithStringWithSpaces", tags + R"(value=1.0,str="foo bar" 1000000000)",
               point({{"value", 1.0}, {"str", S("foo bar")}})),
      Accepted("TestParsePointWithStringWithNewline", tags + "value=1.0,str=\"foo\nbar\" 1000000000",
               point({{"value", 1.0}, {"str", S("foo\nbar")}})),
      Accepted("TestParsePointWithStringWithCommas", tags + R"(value=1.0,str="foo\,bar" 1000000000)",
               point({{"value", 1.0}, {"str", S(R"(foo\,bar)")}})),
      Accepted("TestParsePointWithStringWithCommas", tags + R"(value=1.0,str="foo,bar" 1000000000)",
               point({{"value", 1.0}, {"str", S("foo,bar")}})),
      Accepted("TestParsePointWithStringWithCommas", tags + R"(str="foo\\",str2="bar" 1000000000)",
               point({{"str", S(R"(foo\)")}, {"str2", S("bar")}})),
      Accepted("TestParsePointEscapedStringsAndCommas", tags + R"(value="{Hello\"{,}\" World}" 1000000000)",
               point({{"value", S(R"({Hello"{,}" World})")}})),
      Accepted("TestParsePointEscapedStringsAndCommas", tags + R"(value="{Hello\"{\,}\" World}" 1000000000)",
               point({{"value", S(R"({Hello"{\,}" World})")}})),
      Accepted("TestParsePointWithStringWithEquals", tags + R"(str="foo=bar",value=1.0 1000000000)",
               point({{"str", S("foo=bar")}, {"value", 1.0}})),
      Accepted("TestParsePointWithStringWithBackslash", R"(cpu,device=d value="test\\\"" 1000000000)",
               P("cpu", {}, {{"value", S(R"(test\")")}}, 1000000000)),
      Accepted("TestParsePointWithStringWithBackslash", R"(cpu,device=d value="test\\" 1000000000)",
               P("cpu", {}, {{"value", S(R"(test\)")}}, 1000000000)),
      Accepted("TestParsePointWithStringWithBackslash", R"(cpu,device=d value="test\"" 1000000000)",
               P("cpu", {}, {{"value", S(R"(test")")}}, 1000000000)),
      Accepted("TestParsePointUnicodeString", tags + "value=\"w\xC3\xA8\" 1000000000",
               point({{"value", S("w\xC3\xA8")}})),
      Accepted("TestEscapeStringField", R"(t,device=d s="one double quote \" .")",
               P("t", {}, {{"s", S(R"(one double quote " .)")}})),
      Accepted("TestEscapeStringField", R"(t,device=d s="quote \" then backslash \\ .")",
               P("t", {}, {{"s", S(R"(quote " then backslash \ .)")}})),
      Accepted("TestEscapeStringField", R"(t,device=d s="backslash \\ then quote \" .")",
               P("t", {}, {{"s", S(R"(backslash \ then quote " .)")}})),
  };
}

std::vector<Case> TimeAndBodyCases() {
  const std::string line = "cpu,device=d,region=us-east value=1.0";
  auto at = [&](int64_t timestamp) { return P("cpu", {{"region", "us-east"}}, {{"value", 1.0}}, timestamp); };
  std::vector<Case> cases = {
      Body("TestParsePointNoValue", ""),
      Body("TestParsePointWhitespaceValue", " "),
      Accepted("TestParsePointNoTimestamp", "cpu,device=d value=1", P("cpu", {}, {{"value", 1.0}}, 0)),
      Accepted("TestParsePointNegativeTimestamp", "cpu,device=d value=1 -1",
               P("cpu", {}, {{"value", 1.0}}, -1)),
      Accepted("TestParsePointMaxTimestamp", "cpu,device=d value=1 9223372036854775806",
               P("cpu", {}, {{"value", 1.0}}, kMaxInt64 - 1)),
      Accepted("TestParsePointMinTimestamp", "cpu,device=d value=1 -9223372036854775806",
               P("cpu", {}, {{"value", 1.0}}, kMinInt64 + 2)),
      Accepted(
          "SafeCalcTime", "cpu,device=d value=1 9223372036854775807",
          P("cpu", {}, {{"value", 1.0}}, kMaxInt64),
          "refuses the highest and the two lowest int64 nanoseconds (its sentinels): time outside range"),
      Refused("TestParsePoint_TrailingSlash", R"(a,device=d v=1 0\)", "is not an integer"),
      Accepted("TestParsePointsWithPrecision", line + " 946730096789012", at(946730096789012000)),
      Accepted("TestParsePointsWithPrecisionNoTime", line, at(946730096789012000)),
      Accepted("TestParsePointsWithPrecisionComments", "# a point is below\n" + line + " 946730096789012345",
               at(946730096789012345)),
      Accepted("TestParsePointsWithPrecisionComments", line + " 946730096789012345\n# end of points",
               at(946730096789012345)),
      Accepted("TestParsePointsWithPrecisionComments",
               "\t# a point is below\n" + line + " 946730096789012345", at(946730096789012345)),
      Body("TestParsePointsWithPrecisionComments", "# comment only"),
      Body("TestParsePointsUnbalancedQuotedTags",
           "baz,device=d,mytag=\"a x=1 1441103862125\nbaz,device=d,mytag=a z=1 1441103862126",
           {P("baz", {{"mytag", "\"a"}}, {{"x", 1.0}}, 1441103862125),
            P("baz", {{"mytag", "a"}}, {{"z", 1.0}}, 1441103862126)}),
      Body("TestParsePointsQuotesInFieldKey", "cpu,device=d \"a=1\ncpu,device=d value=2 1",
           {P("cpu", {}, {{"\"a", 1.0}}), P("cpu", {}, {{"value", 2.0}}, 1)}),
      Body("TestParsePointsQuotesInTags",
           "t159,device=d,label=hey\\ \"ya a=1i,value=0i\nt159,device=d,label=another a=2i,value=1i 1",
           {P("t159", {{"label", "hey \"ya"}}, {{"a", I(1)}, {"value", I(0)}}),
            P("t159", {{"label", "another"}}, {{"a", I(2)}, {"value", I(1)}}, 1)}),
      Body("TestParsePointsBlankLine", "cpu,device=d value=1i 1000000000\n\ncpu,device=d value=2i 2000000000",
           {P("cpu", {}, {{"value", I(1)}}, 1000000000), P("cpu", {}, {{"value", I(2)}}, 2000000000)}),
  };
  cases[8].precision = TimestampPrecision::kMicroseconds;
  cases[9].precision = TimestampPrecision::kMicroseconds;
  cases[9].now = 946730096789012345;  // 2000-01-01T12:34:56.789012345Z, truncated to the precision
  for (const char* spaced :
       {"cpu,device=d    value=1.0 1257894000000000000", "cpu,device=d value=1.0     1257894000000000000",
        "cpu,device=d      value=1.0     1257894000000000000",
        "cpu,device=d value=1.0 1257894000000000000   ", "cpu,device=d value=1.0 1257894000000000000\n",
        "cpu,device=d   value=1.0 1257894000000000000\n"}) {
    cases.push_back(
        Accepted("TestParsePointWhitespace", spaced, P("cpu", {}, {{"value", 1.0}}, 1257894000000000000)));
  }
  for (const char* bad :
       {"9223372036854775808", "-92233720368547758078", "-", "-/", "-1?", "1-", "9223372036854775807 12"}) {
    cases.push_back(
        Refused("TestParsePointInvalidTimestamp", std::string("cpu,device=d value=1 ") + bad, "timestamp"));
  }
  return cases;
}

std::map<std::string, Value> FieldMap(const std::vector<Field>& fields) {
  std::map<std::string, Value> map;
  for (const Field& field : fields) map.emplace(field.name, field.value);
  return map;
}

void Check(const Case& c) {
  SCOPED_TRACE(c.source + ": " + c.body + (c.influx.empty() ? "" : " (InfluxDB: " + c.influx + ")"));
  LineProtocolOptions options;
  options.precision = c.precision;
  options.default_timestamp = c.now;
  const LineProtocolBatch batch = ParseLineProtocol(c.body, options);
  if (c.error.empty()) {
    EXPECT_TRUE(batch.errors.empty()) << batch.errors[0].reason;
  } else {
    ASSERT_EQ(batch.errors.size(), 1u);
    EXPECT_NE(batch.errors[0].reason.find(c.error), std::string::npos) << batch.errors[0].reason;
  }
  ASSERT_EQ(batch.records.size(), c.points.size());
  for (size_t i = 0; i < c.points.size(); ++i) {
    const Record& got = batch.records[i].record;
    const Point& want = c.points[i];
    EXPECT_EQ(got.measure_name, want.measurement);
    EXPECT_EQ(got.device_id, want.device);
    EXPECT_EQ(got.dimensions, want.tags);
    EXPECT_EQ(FieldMap(got.fields), FieldMap(want.fields));
    EXPECT_EQ(got.fields.size(), want.fields.size());
    EXPECT_EQ(got.timestamp, want.timestamp);
    EXPECT_EQ(got.ttl, 0);
    EXPECT_EQ(got.version, 0u);
  }
}

TEST(LineProtocolInfluxCasesTest, Tags) {
  for (const Case& c : TagCases()) Check(c);
}

TEST(LineProtocolInfluxCasesTest, Escapes) {
  for (const Case& c : EscapeCases()) Check(c);
}

TEST(LineProtocolInfluxCasesTest, FieldValues) {
  for (const Case& c : FieldCases()) Check(c);
}

TEST(LineProtocolInfluxCasesTest, Strings) {
  for (const Case& c : StringCases()) Check(c);
}

TEST(LineProtocolInfluxCasesTest, TimestampsAndBodies) {
  for (const Case& c : TimeAndBodyCases()) Check(c);
}

// The limits of cairn's data model are narrower than InfluxDB's 65535-byte
// series key: 64 tags besides the device (InfluxDB's tests write 255 and
// 1000).
TEST(LineProtocolInfluxCasesTest, ManyTagsUpToTheDataModelsLimit) {
  std::string line = "m,device=d";
  for (size_t i = 0; i < kMaxDimensionsPerSeries; ++i) line += ",t" + std::to_string(i) + "=x";
  const LineProtocolBatch fits = ParseLineProtocol(line + " v=0", LineProtocolOptions());
  ASSERT_EQ(fits.records.size(), 1u);
  EXPECT_EQ(fits.records[0].record.dimensions.size(), kMaxDimensionsPerSeries);
  const LineProtocolBatch over = ParseLineProtocol(line + ",one=more v=0", LineProtocolOptions());
  ASSERT_EQ(over.errors.size(), 1u);
  EXPECT_NE(over.errors[0].reason.find("dimensions; the limit is"), std::string::npos)
      << over.errors[0].reason;
}

}  // namespace
}  // namespace cairn
