// The InfluxDB-compatible writes of the HTTP API (http_api.h): line
// protocol, gzip, precision, per-line errors.
#include <algorithm>

#include <zlib.h>

#include "cairn/http/http_api.h"
#include "cairn/text/json_writer.h"
#include "cairn/text/line_protocol.h"

#include "api_call.h"

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

// Inflates a gzip body, refusing to grow past `limit` bytes.
Result<std::string> Gunzip(std::string_view compressed, size_t limit) {
  z_stream stream = {};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) return Status::Internal("zlib inflateInit2 failed");
  std::string out;
  char buffer[64 * 1024];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    result = inflate(&stream, Z_NO_FLUSH);
    if (result != Z_OK && result != Z_STREAM_END) {
      inflateEnd(&stream);
      return Status::InvalidArgument(std::string("the gzip body is damaged: ") +
                                     (stream.msg != nullptr ? stream.msg : "truncated"));
    }
    out.append(buffer, sizeof(buffer) - stream.avail_out);
    if (out.size() > limit) {
      inflateEnd(&stream);
      return Status::ResourceExhausted("the gzip body inflates to more than " + std::to_string(limit) +
                                       " bytes");
    }
    if (result == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      return Status::InvalidArgument("the gzip body is truncated");
    }
  }
  inflateEnd(&stream);
  return out;
}

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

// Sets `body` to the request's line protocol, inflated into `inflated` when
// it came gzipped; the refusal (400, 413, 415) when it cannot be decoded.
std::optional<HttpResponse> DecodeBody(const HttpRequest& request, size_t max_inflated_bytes,
                                       std::string* inflated, std::string_view* body) {
  *body = request.body;
  const std::string* encoding = request.Header("content-encoding");
  if (encoding == nullptr || *encoding == "identity") return std::nullopt;
  if (*encoding != "gzip") {
    return HttpResponse::Error(415,
                               "Content-Encoding '" + *encoding + "' is not supported; use gzip or none");
  }
  Result<std::string> decoded = Gunzip(request.body, max_inflated_bytes);
  if (!decoded.ok()) {
    return HttpResponse::Error(decoded.status().code() == StatusCode::kResourceExhausted ? 413 : 400,
                               decoded.status().message());
  }
  *inflated = std::move(*decoded);
  *body = *inflated;
  return std::nullopt;
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
  std::string inflated;
  std::string_view body;
  if (auto refused = DecodeBody(request, options_.max_decompressed_body_bytes, &inflated, &body))
    return *refused;
  if (auto refused = EnsureWriteTable(*table, request.peer_address)) return *refused;
  LineProtocolReader lines(body, *parse_options);
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

HttpResponse HttpApi::StoreLines(const std::string& table, const std::string& peer, LineProtocolReader* lines) {
  // Only the first kMaxReportedLineErrors refused lines are kept, with
  // their reasons; the rest are counted (a body of bad lines must not make
  // a copy of every reason). Slices come in line order, so the first ones
  // of the body are those of the first slices.
  size_t rejected_lines = 0;
  std::vector<LineProtocolError> errors;
  WriteResult written;  // the totals over every slice
  while (!lines->done()) {
    LineProtocolBatch batch = lines->Next(kWriteSliceBytes);
    rejected_lines += batch.errors.size();
    std::vector<LineProtocolError> refused = std::move(batch.errors);
    if (!batch.records.empty()) {
      std::vector<Record> records;
      records.reserve(batch.records.size());
      for (LineProtocolRecord& line : batch.records) records.push_back(std::move(line.record));
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
        refused.push_back({batch.records[i].line_number, std::move(outcome.reason)});
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
