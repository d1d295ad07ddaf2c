// Fuzzes the line-protocol parser. The first byte picks the precision and
// the default timestamp's sign; the rest is the body. Properties: parsing
// never fails as a whole; every line is accounted for at most once, in
// order; every record passes the data model's validation and has a device;
// lines end at a LF; and each line parsed alone gives the same answer as
// within the body (a line may hold LFs inside a quoted string value).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "cairn/core/record.h"
#include "cairn/text/line_protocol.h"

namespace {

void Require(bool condition, const char* property) {
  if (!condition) {
    std::fprintf(stderr, "property violated: %s\n", property);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  cairn::LineProtocolOptions options;
  options.precision = static_cast<cairn::TimestampPrecision>(data[0] % 4);
  options.default_timestamp = (data[0] & 0x80) ? INT64_MIN + 12345 : int64_t{1'700'000'000'123'456'789};
  options.max_line_bytes = 4096;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  const cairn::LineProtocolBatch batch = cairn::ParseLineProtocol(body, options);

  size_t lines = 0;
  for (size_t at = 0; at < body.size(); ++lines) {
    const size_t end = body.find('\n', at);
    at = end == std::string_view::npos ? body.size() : end + 1;
  }
  Require(batch.records.size() + batch.errors.size() <= lines, "at most one outcome per line");

  size_t previous = 0;
  for (const cairn::LineProtocolRecord& parsed : batch.records) {
    Require(parsed.line_number > previous && parsed.line_number <= lines, "records in line order");
    previous = parsed.line_number;
    Require(cairn::ValidateRecord(parsed.record).ok(), "records pass ValidateRecord");
    Require(!parsed.record.device_id.empty(), "records have a device");
    Require(parsed.record.dimensions.count(options.device_tag) == 0, "the device tag is not a dimension");
  }
  previous = 0;
  for (const cairn::LineProtocolError& error : batch.errors) {
    Require(error.line_number > previous && error.line_number <= lines, "errors in line order");
    previous = error.line_number;
    Require(!error.reason.empty(), "errors say why");
  }

  // Line by line, the same outcomes; line numbers count every LF.
  size_t record_index = 0, error_index = 0, line_number = 0, next_line_number = 1;
  for (size_t at = 0; at < body.size();) {
    const size_t end = cairn::LineProtocolLineEnd(body, at);
    Require(end >= at && (end == body.size() || body[end] == '\n'), "lines end at a LF");
    line_number = next_line_number;
    for (size_t i = at; i < end; ++i) next_line_number += body[i] == '\n' ? 1 : 0;
    ++next_line_number;
    cairn::Result<std::optional<cairn::Record>> alone =
        cairn::ParseLineProtocolLine(body.substr(at, end - at), options);
    if (!alone.ok()) {
      Require(error_index < batch.errors.size() && batch.errors[error_index].line_number == line_number &&
                  batch.errors[error_index].reason == alone.status().message(),
              "a bad line alone fails the same way");
      ++error_index;
    } else if (alone->has_value()) {
      Require(record_index < batch.records.size() && batch.records[record_index].line_number == line_number &&
                  batch.records[record_index].record.timestamp == (*alone)->timestamp &&
                  batch.records[record_index].record.fields.size() == (*alone)->fields.size(),
              "a good line alone gives the same record");
      ++record_index;
    }
    at = end + 1;
  }
  Require(record_index == batch.records.size() && error_index == batch.errors.size(),
          "nothing extra in the batch");

  // Read in windows that end anywhere (as an inflating receiver reads), a
  // slice at a time: the same outcomes, with the same line numbers.
  const size_t step = 1 + data[0] % 61;
  size_t window_start = 0, window_end = 0, next_line = 1;
  record_index = 0, error_index = 0;
  while (window_start < body.size()) {
    window_end = std::min(body.size(), window_end + step);
    const bool complete = window_end == body.size();
    cairn::LineProtocolReader reader(body.substr(window_start, window_end - window_start), options, next_line);
    while (!reader.done()) {
      const size_t before = reader.offset();
      const cairn::LineProtocolBatch slice = reader.Next(step, complete);
      for (const cairn::LineProtocolRecord& parsed : slice.records) {
        Require(record_index < batch.records.size() &&
                    batch.records[record_index].line_number == parsed.line_number &&
                    batch.records[record_index].record.timestamp == parsed.record.timestamp,
                "windows give the whole body's records");
        ++record_index;
      }
      for (const cairn::LineProtocolError& error : slice.errors) {
        Require(error_index < batch.errors.size() && batch.errors[error_index].line_number == error.line_number,
                "windows give the whole body's errors");
        ++error_index;
      }
      if (reader.offset() == before) break;  // a cut line: the next window has it
    }
    Require(complete || reader.offset() <= window_end - window_start, "a window reads within itself");
    window_start += reader.offset();
    next_line = reader.line_number();
    if (complete) Require(reader.done(), "the last window is read to its end");
  }
  Require(record_index == batch.records.size() && error_index == batch.errors.size(),
          "windows give every outcome");
  return 0;
}
