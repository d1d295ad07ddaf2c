// GET /v1/tables/{t}/devices/{d}/readings (http_api.h): a page of a
// device's records as JSON, CSV or NDJSON, or with limit=all the whole range
// streamed page by page.
//
// Every format goes through the shell's `range` command, so the query's
// parsing, its errors and its answer are those of every other front end. A
// stream reads the range in pages of HttpApiOptions::range_page_rows and
// sends each as it is made (chunked transfer coding): the daemon never holds
// more than one page, however long the range. Its first page is read before
// the answer begins, so a bad query still gets its error status; a failure
// after that breaks the transfer (HttpResponse::more), so a client never
// takes a cut stream for a whole one.
//
// CSV pages and streams ask `range` for --all-columns: every tag and field
// the measures can have, so that the header line fits every row of every
// page. A field first written while a stream runs would add a column the
// header lacks; the stream breaks then rather than drop its values.
#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "cairn/http/http_api.h"
#include "cairn/shell/result_renderer.h"
#include "cairn/text/json_writer.h"

#include "api_call.h"

namespace cairn {

namespace {

using http_api_internal::AddTagFilter;
using http_api_internal::ErrorFor;

enum class ReadingsFormat : uint8_t { kJson, kCsv, kNdjson };

std::string_view ContentTypeOf(ReadingsFormat format) {
  switch (format) {
    case ReadingsFormat::kCsv:
      return "text/csv; charset=utf-8; header=present";
    case ReadingsFormat::kNdjson:
      return "application/x-ndjson";
    case ReadingsFormat::kJson:
      break;
  }
  return "application/json";
}

// A note's value as a header field value: printable ASCII (anything else
// becomes '?'), at most 4 KiB.
std::string HeaderValue(const Value& value) {
  std::string text = ValueToText(value);
  if (text.size() > 4096) text.resize(4096);
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return text;
}

// The header (or trailer) field that carries a note of the `range` answer
// outside a JSON body.
std::string_view HeaderNameOf(std::string_view note_key) {
  if (note_key == "next_page") return "Cairn-Next-Page";
  if (note_key == "tags") return "Cairn-Tags";
  if (note_key == "incomplete") return "Cairn-Incomplete";
  if (note_key == "skipped") return "Cairn-Skipped";
  return {};
}

const CommandResult::Note* FindNote(const CommandResult& result, std::string_view key) {
  for (const CommandResult::Note& note : result.notes()) {
    if (note.key == key) return &note;
  }
  return nullptr;
}

// One streamed range: the query's options, where it stands, and what the
// pages said about damage they stepped over.
struct ReadingsStream {
  const CommandRegistry* commands;
  std::vector<std::string> arguments;  // table, device
  std::vector<std::pair<std::string, std::string>> options;
  ReadingsFormat format;
  std::vector<std::string> csv_columns;  // the header line's
  std::string next_page;
  bool first_row = true;  // JSON: no comma before it
  bool finished = false;
  std::set<std::string> tags;
  std::string skipped;
  std::shared_ptr<std::vector<std::pair<std::string, std::string>>> trailers =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>();

  // Adds one page's rows to `out`; its notes to the stream's state.
  Status AppendPage(const CommandResult& page, std::string* out) {
    if (format == ReadingsFormat::kCsv) {
      if (page.columns() != csv_columns) {
        return Status::FailedPrecondition("a field or tag first written during the stream added a column the CSV header "
                               "lacks; read the range again");
      }
      *out += RenderCsv(page, false);
    } else {
      std::string rows = RenderNdjson(page);
      if (format == ReadingsFormat::kJson) {
        // One object per line, none holding a raw newline: the lines become
        // array elements.
        size_t start = 0;
        while (start < rows.size()) {
          const size_t end = rows.find('\n', start);
          if (!first_row) out->push_back(',');
          first_row = false;
          out->append(rows, start, end - start);
          start = end + 1;
        }
      } else {
        *out += rows;
      }
    }
    next_page.clear();
    if (const CommandResult::Note* note = FindNote(page, "next_page")) next_page = ValueToText(note->value);
    if (const CommandResult::Note* note = FindNote(page, "tags")) {
      const std::string list = ValueToText(note->value);
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) tags.insert(list.substr(start, comma - start));
        start = comma + 1;
      }
    }
    if (const CommandResult::Note* note = FindNote(page, "skipped")) {
      skipped += (skipped.empty() ? "" : "; ") + ValueToText(note->value);
    }
    return Status::Ok();
  }

  // The next page (HttpResponse::more).
  Result<bool> More(std::string* piece) {
    if (finished) return false;
    if (next_page.empty()) {
      finished = true;
      Finish(piece);
      return false;
    }
    std::vector<std::pair<std::string, std::string>> page_options = options;
    page_options.emplace_back("page", next_page);
    CAIRN_ASSIGN_OR_RETURN(CommandInvocation invocation, commands->BindArguments("range", arguments, page_options));
    CommandResult page = commands->Run(invocation);
    if (!page.ok()) return page.error();
    CAIRN_RETURN_IF_ERROR(AppendPage(page, piece));
    return true;
  }

  // What follows the last row: the end of the JSON document with its notes,
  // or the trailer fields.
  void Finish(std::string* piece) {
    if (format == ReadingsFormat::kJson) {
      *piece += "]";
      std::string tag_list;
      for (const std::string& tag : tags) tag_list += (tag_list.empty() ? "" : ",") + tag;
      JsonWriter notes;
      notes.BeginObject();
      if (!tag_list.empty()) {
        notes.Key("tags");
        notes.String(tag_list);
      }
      if (!skipped.empty()) {
        notes.Key("incomplete");
        notes.Bool(true);
        notes.Key("skipped");
        notes.String(skipped);
      }
      notes.EndObject();
      // {"tags":...} without its braces, after the records member.
      const std::string& members = notes.text();
      if (members.size() > 2) *piece += "," + members.substr(1, members.size() - 2);
      *piece += "}\n";
    }
    if (!skipped.empty()) {
      trailers->emplace_back("Cairn-Incomplete", "true");
      trailers->emplace_back("Cairn-Skipped", HeaderValue(skipped));
    }
  }
};

}  // namespace

HttpResponse HttpApi::Readings(Call* call) {
  const std::string& table = call->segments()[2];
  const std::string& device = call->segments()[4];
  if (auto bad = call->CheckParameters(
          {"measure", "prefix", "from", "to", "order", "limit", "page", "format", "tag.*"})) {
    return *bad;
  }
  ReadingsFormat format = ReadingsFormat::kJson;
  if (std::optional<std::string> name = call->Parameter("format")) {
    if (*name == "csv") {
      format = ReadingsFormat::kCsv;
    } else if (*name == "ndjson") {
      format = ReadingsFormat::kNdjson;
    } else if (*name != "json") {
      return HttpResponse::Error(400, "format must be json, csv or ndjson, not '" + *name + "'");
    }
  }
  std::vector<std::pair<std::string, std::string>> options;
  AddTagFilter(call->TagParameters(), &options);
  for (const char* name : {"measure", "prefix", "from", "to"}) {
    if (std::optional<std::string> value = call->Parameter(name)) options.emplace_back(name, *value);
  }
  if (std::optional<std::string> order = call->Parameter("order")) {
    if (*order == "desc") {
      options.emplace_back("desc", "");
    } else if (*order != "asc") {
      return HttpResponse::Error(400, "order must be asc or desc, not '" + *order + "'");
    }
  }
  std::optional<std::string> limit = call->Parameter("limit");
  const bool stream = limit == "all";
  if (stream && call->Parameter("page")) {
    return HttpResponse::Error(400, "limit=all reads the whole range; it takes no page");
  }
  if (format == ReadingsFormat::kCsv) options.emplace_back("all-columns", "");
  if (stream) {
    options.emplace_back("limit", std::to_string(options_.range_page_rows));
  } else {
    if (limit) options.emplace_back("limit", *limit);
    if (std::optional<std::string> page = call->Parameter("page")) options.emplace_back("page", *page);
  }
  if (format == ReadingsFormat::kJson && !stream) return RunCommand(call, "range", {table, device}, options, "records");

  Result<CommandInvocation> invocation = commands_->BindArguments("range", {table, device}, options);
  if (!invocation.ok()) return ErrorFor(invocation.status());
  metrics_->RecordQuery("range");
  CommandResult first = commands_->Run(*invocation);
  if (!first.ok()) return ErrorFor(first.error());

  HttpResponse response;
  response.content_type = std::string(ContentTypeOf(format));
  if (!stream) {
    response.body = format == ReadingsFormat::kCsv ? RenderCsv(first, true) : RenderNdjson(first);
    for (const CommandResult::Note& note : first.notes()) {
      if (std::string_view name = HeaderNameOf(note.key); !name.empty()) {
        response.headers.emplace_back(std::string(name), HeaderValue(note.value));
      }
    }
    return response;
  }
  auto state = std::make_shared<ReadingsStream>();
  state->commands = commands_;
  state->arguments = {table, device};
  state->options = options;
  state->format = format;
  state->csv_columns = first.columns();
  if (format == ReadingsFormat::kCsv) {
    // The header line, then the rows.
    CommandResult header = CommandResult::Table(first.columns(), {});
    response.body = RenderCsv(header, true);
  } else if (format == ReadingsFormat::kJson) {
    response.body = "{\"records\":[";
  }
  if (Status appended = state->AppendPage(first, &response.body); !appended.ok()) return ErrorFor(appended);
  response.trailer_names = {"Cairn-Incomplete", "Cairn-Skipped"};
  response.trailers = state->trailers;
  response.more = [state](std::string* piece) { return state->More(piece); };
  return response;
}

}  // namespace cairn
