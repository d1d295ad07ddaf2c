// The InfluxDB-compatible writes of the HTTP API (http_api.h): line
// protocol, gzip, precision, per-line errors.
#include <algorithm>
#include <memory>
#include <utility>

#include "cairn/http/http_api.h"
#include "cairn/text/json_writer.h"
#include "cairn/text/line_protocol.h"

#include "api_call.h"
#include "gzip_stream.h"

namespace cairn {

namespace {

using http_api_internal::ErrorFor;

constexpr size_t kMaxReportedLineErrors = 100;

// A write body is parsed and stored this many bytes of lines at a time
// (LineProtocolReader): a parsed line takes about five times its bytes, so a
// connection holds its body and the records of one slice (about 5 MiB),
// whatever the body's size; a 64 MiB inflated body would otherwise take
// hundreds of MiB at once. One slice holds a usual body whole (InfluxDB's
// clients send 5 000 lines, about 300 KiB): each slice is a group commit of
// its own, and cutting usual bodies in smaller ones measured 10-15 % slower
// ingest and 15 % more bytes per reading in `cairn-bench http`.
constexpr size_t kWriteSliceBytes = 1024 * 1024;

// The parse options of a write: ?precision= (400 when unknown), now as the
// default timestamp, and the API's device tag and line limit.
Result<LineProtocolOptions> ParseOptionsFor(const std::optional<std::string>& precision, int64_t now,
                                            const HttpApiOptions& options) {
  LineProtocolOptions parse_options;
  if (precision) {
    Result<TimestampPrecision> parsed = ParseTimestampPrecision(*precision);
    if (!parsed.ok()) return parsed.status();
    parse_options.precision = *parsed;
  }
  parse_options.default_timestamp = now;
  parse_options.device_tag = options.device_tag;
  parse_options.max_line_bytes = options.max_line_bytes;
  return parse_options;
}

// InfluxDB's partial-write answer: the counts, and the first refused lines
// (sorted by line number) with their reasons.
std::string PartialWriteJson(size_t rejected_lines, const std::vector<LineProtocolError>& errors,
                             const WriteResult& written) {
  JsonWriter json;
  json.BeginObject();
  json.Key("error");
  json.BeginObject();
  json.Key("code");
  json.String("InvalidArgument");
  json.Key("message");
  json.String(std::to_string(rejected_lines) + " line" + (rejected_lines == 1 ? "" : "s") +
              " rejected, first: line " + std::to_string(errors[0].line_number) + ": " + errors[0].reason +
              (written.stored + written.duplicates > 0 ? "; the other lines were stored" : ""));
  json.EndObject();
  json.Key("stored");
  json.Uint(written.stored);
  json.Key("duplicates");
  json.Uint(written.duplicates);
  json.Key("conflicts");
  json.Uint(written.conflicts);
  json.Key("lines");
  json.BeginArray();
  for (size_t i = 0; i < errors.size() && i < kMaxReportedLineErrors; ++i) {
    json.BeginObject();
    json.Key("line");
    json.Uint(errors[i].line_number);
    json.Key("reason");
    json.String(errors[i].reason);
    json.EndObject();
  }
  json.EndArray();
  if (rejected_lines > kMaxReportedLineErrors) {
    json.Key("lines_not_shown");
    json.Uint(rejected_lines - kMaxReportedLineErrors);
  }
  json.EndObject();
  return json.text();
}

}  // namespace

// A write body's lines, a slice at a time: straight from the body, or from
// a window of it inflated a piece at a time (GzipStream), so that neither
// the records nor the inflated text of a whole body are held at once.
class LineSlices {
 public:
  // `body` (plain or gzip) must outlive the slices.
  LineSlices(std::string_view body, bool gzipped, LineProtocolOptions options)
      : gzip_(gzipped ? std::make_unique<GzipStream>(body) : nullptr),
        options_(std::move(options)),
        reader_(gzipped ? std::string_view() : body, options_) {}

  bool done() const { return gzip_ ? ended_ && window_.empty() : reader_.done(); }

  Result<LineProtocolBatch> Next() {
    if (!gzip_) return reader_.Next(kWriteSliceBytes);
    window_.erase(0, consumed_);
    consumed_ = 0;
    for (size_t want = kWriteSliceBytes;; want += kWriteSliceBytes) {
      while (!ended_ && window_.size() < want) {
        CAIRN_ASSIGN_OR_RETURN(ended_, gzip_->InflateInto(&window_, want - window_.size()));
      }
      LineProtocolReader reader(window_, options_, line_number_);
      LineProtocolBatch batch = reader.Next(window_.size(), /*body_complete=*/ended_);
      // No whole line in the window yet (one longer than it): inflate more.
      if (reader.offset() == 0 && !ended_) continue;
      consumed_ = reader.offset();
      line_number_ = reader.line_number();
      if (ended_ && consumed_ == window_.size()) {
        window_.clear();
        consumed_ = 0;
      }
      return batch;
    }
  }

 private:
  std::unique_ptr<GzipStream> gzip_;  // null for a plain body
  LineProtocolOptions options_;
  std::string window_;     // inflated, from the first line not yet stored
  size_t consumed_ = 0;    // bytes of window_ the last slice read
  size_t line_number_ = 1;
  bool ended_ = false;
  LineProtocolReader reader_;  // a plain body's
};

HttpResponse HttpApi::Write(Call* call, std::string_view table_parameter) {
  if (auto bad = call->CheckParameters({table_parameter, "precision", "rp", "org", "consistency"}))
    return *bad;
  std::optional<std::string> table = call->Parameter(table_parameter);
  if (!table || table->empty()) {
    return HttpResponse::Error(400, "missing ?" + std::string(table_parameter) + "=TABLE");
  }
  if (auto denied = call->Require(Access::kWrite, *table)) return *denied;
  Result<LineProtocolOptions> parse_options =
      ParseOptionsFor(call->Parameter("precision"), env_->NowUnixNanos(), options_);
  if (!parse_options.ok()) return HttpResponse::Error(400, parse_options.status().message());

  const HttpRequest& request = call->request();
  const std::string* encoding = request.Header("content-encoding");
  const bool gzipped = encoding != nullptr && *encoding != "identity";
  if (gzipped && *encoding != "gzip") {
    return HttpResponse::Error(415, "Content-Encoding '" + *encoding + "' is not supported; use gzip or none");
  }
  if (gzipped) {
    // The whole body is checked before any of it is stored: one that is
    // damaged or inflates past the limit stores nothing.
    Result<size_t> inflated = GunzippedSize(request.body, options_.max_decompressed_body_bytes);
    if (!inflated.ok()) {
      return HttpResponse::Error(inflated.status().code() == StatusCode::kResourceExhausted ? 413 : 400,
                                 inflated.status().message());
    }
  }
  if (auto refused = EnsureWriteTable(*table, request.peer_address)) return *refused;
  LineSlices lines(request.body, gzipped, std::move(*parse_options));
  return StoreLines(*table, request.peer_address, &lines);
}

std::optional<HttpResponse> HttpApi::EnsureWriteTable(const std::string& table, const std::string& peer) {
  Result<TableInfo> existing = engine()->GetTable(table);
  if (existing.ok()) return std::nullopt;
  if (existing.status().code() != StatusCode::kNotFound) return ErrorFor(existing.status());
  if (!options_.auto_create_tables) {
    log_.Log("write", "http: refused a write to table '" + table + "' from " + peer + ": no such table");
    return HttpResponse::Error(404,
                               "table '" + table + "' does not exist; create it with PUT /v1/tables/" +
                                   table + " or the shell's create-table",
                               "NotFound");
  }
  Status created = engine()->CreateTable(table, TableOptions());
  if (!created.ok() && created.code() != StatusCode::kAlreadyExists) return ErrorFor(created);
  return std::nullopt;
}

HttpResponse HttpApi::StoreLines(const std::string& table, const std::string& peer, LineSlices* lines) {
  // Only the first kMaxReportedLineErrors refused lines are kept, with
  // their reasons; the rest are counted (a body of bad lines must not make
  // a copy of every reason). Slices come in line order, so the first ones
  // of the body are those of the first slices.
  size_t rejected_lines = 0;
  std::vector<LineProtocolError> errors;
  WriteResult written;  // the totals over every slice
  while (!lines->done()) {
    Result<LineProtocolBatch> next = lines->Next();
    if (!next.ok()) {
      // The body was checked whole before; only a failure inside zlib lands here.
      metrics_->RecordWrite(written, rejected_lines);
      return HttpResponse::Error(400, next.status().message());
    }
    LineProtocolBatch batch = std::move(*next);
    rejected_lines += batch.errors.size();
    std::vector<LineProtocolError> refused = std::move(batch.errors);
    if (!batch.records.empty()) {
      std::vector<Record> records;
      std::vector<size_t> line_numbers;
      records.reserve(batch.records.size());
      line_numbers.reserve(batch.records.size());
      for (LineProtocolRecord& line : batch.records) {
        records.push_back(std::move(line.record));
        line_numbers.push_back(line.line_number);
      }
      // The emptied parse is as large as the records: gone before the write.
      std::vector<LineProtocolRecord>().swap(batch.records);
      Result<WriteResult> result = engine()->Write(table, records);
      if (!result.ok()) {
        // The slices before this one are stored; a client that sends the
        // body again finds their lines duplicates.
        metrics_->RecordWrite(written, rejected_lines);
        log_.Log("write", "http: refused a write of " + std::to_string(records.size()) + " records to table '" +
                              table + "' from " + peer + " after " + std::to_string(written.stored) +
                              " of its records were stored: " + result.status().message());
        return ErrorFor(result.status());
      }
      for (size_t i = 0; i < result->records.size(); ++i) {
        RecordResult& outcome = result->records[i];
        // Stored and duplicate lines are kept; the others are refused, each
        // with its reason, in InfluxDB's partial-write answer below.
        if (outcome.outcome == WriteOutcome::kStored || outcome.outcome == WriteOutcome::kDuplicate) continue;
        ++rejected_lines;
        refused.push_back({line_numbers[i], std::move(outcome.reason)});
      }
      written.stored += result->stored;
      written.duplicates += result->duplicates;
      written.rejected += result->rejected;
      written.invalid += result->invalid;
      written.conflicts += result->conflicts;
    }
    std::sort(refused.begin(), refused.end(), [](const LineProtocolError& a, const LineProtocolError& b) {
      return a.line_number < b.line_number;
    });
    for (LineProtocolError& error : refused) {
      if (errors.size() == kMaxReportedLineErrors) break;
      errors.push_back(std::move(error));
    }
  }
  metrics_->RecordWrite(written, rejected_lines);
  if (rejected_lines == 0) {
    HttpResponse response;
    response.status = 204;
    return response;
  }
  log_.Log("write", "http: rejected " + std::to_string(rejected_lines) + " line" +
                        (rejected_lines == 1 ? "" : "s") + " of a write to table '" + table + "' from " +
                        peer + "; first: line " + std::to_string(errors[0].line_number) + ": " +
                        errors[0].reason);
  return HttpResponse::Json(400, PartialWriteJson(rejected_lines, errors, written));
}

}  // namespace cairn
