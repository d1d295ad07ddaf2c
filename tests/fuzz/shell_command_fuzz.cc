// Fuzzes the shell's command layer: CommandRegistry::Parse and Execute with
// the builtin and engine commands over a real engine (fuzz_engine_fixture.h),
// as the serial shell and the HTTP API use them.
//
// Input: the first byte picks the output caps (RenderOptions::max_rows from
// its two low bits, max_bytes from the next two); the rest is up to 16 lines
// separated by '\n', run in order, so one input can create a table and then
// use or drop it.
//
// Properties of every line:
//   - Execute answers "" exactly for a line of separators only, otherwise
//     well-formed UTF-8 ending in '\n';
//   - a line that does not parse is answered with an error: one text line
//     "error: ..." or a JSON {"error":{...}};
//   - a line that parses is answered in JSON exactly when it bound --json:
//     then one line that cairn::JsonValue parses (so no duplicate keys) into
//     an object, whose "error", if any, has a code and a message and is not
//     Internal, Corruption or IOError (which no command may cause on a
//     healthy engine and disk); in text, no control character but the line
//     ends (stored data cannot drive the operator's terminal);
//   - the parse does not depend on the spelling: rebuilding the line from the
//     invocation, every argument quoted, parses to the same invocation;
//   - a `range` that hands out a next_page token can be continued with it;
//   - the data directory keeps its log and token file (the fixture).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/shell/command_line.h"
#include "cairn/shell/command_registry.h"
#include "cairn/text/json_value.h"
#include "cairn/shell/result_renderer.h"

#include "fuzz_engine_fixture.h"

namespace {

using cairn::fuzz::IsWellFormedUtf8;
using cairn::fuzz::Require;

constexpr size_t kMaxLines = 16;
constexpr std::string_view kSeparators = " \t\r\n\v\f";

// No C0 control but '\n', no DEL, no C1 control (U+0080..U+009F).
// Precondition: well-formed UTF-8.
bool IsTerminalSafe(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F) return false;
  }
  return true;
}

// A JSON answer: one line holding one object, with a well-formed "error".
cairn::JsonValue RequireJsonAnswer(std::string_view output) {
  Require(output.find('\n') == output.size() - 1, "a JSON answer is one line", output);
  cairn::Result<cairn::JsonValue> document = cairn::JsonValue::Parse(output);
  Require(document.ok(), "a JSON answer parses",
          document.ok() ? std::string() : document.status().ToString() + ": " + std::string(output));
  Require(document->is_object(), "a JSON answer is an object", output);
  if (const cairn::JsonValue* error = document->Find("error")) {
    const cairn::JsonValue* code = error->Find("code");
    const cairn::JsonValue* message = error->Find("message");
    Require(code != nullptr && code->is_string() && !code->text().empty(), "a JSON error has a code", output);
    Require(message != nullptr && message->is_string() && !message->text().empty(),
            "a JSON error has a message", output);
    Require(code->text() != "Internal" && code->text() != "Corruption" && code->text() != "IOError",
            "no command fails internally", output);
  }
  return std::move(document).value();
}

// The invocation spelled differently: options first (`replace_option` given
// `replacement` instead of its own value, added if absent), every argument
// quoted, a verbatim last argument after "--".
std::string Rebuild(const cairn::CommandInvocation& invocation, std::string_view replace_option = {},
                    std::string_view replacement = {}) {
  const cairn::CommandSpec& spec = invocation.spec();
  std::string line = spec.name;
  for (const cairn::CommandOption& option : spec.options) {
    const bool replaced = option.name == replace_option;
    if (!replaced && !invocation.Has(option.name)) continue;
    line += " --" + option.name;
    if (!option.value_name.empty()) {
      line += " " + cairn::QuoteCommandWord(replaced ? replacement : *invocation.Value(option.name));
    }
  }
  if (invocation.json()) line += " --json";
  const std::vector<std::string>& arguments = invocation.arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (spec.verbatim_last_argument && i + 1 == spec.max_arguments) {
      line += " -- " + arguments[i];
    } else {
      line += " " + cairn::QuoteCommandWord(arguments[i]);
    }
  }
  return line;
}

bool SameInvocation(const cairn::CommandInvocation& a, const cairn::CommandInvocation& b) {
  if (&a.spec() != &b.spec() || a.arguments() != b.arguments() || a.json() != b.json()) return false;
  for (const cairn::CommandOption& option : a.spec().options) {
    if (a.Has(option.name) != b.Has(option.name) || a.Value(option.name) != b.Value(option.name)) {
      return false;
    }
  }
  return true;
}

void CheckLine(const cairn::CommandRegistry& commands, std::string_view line,
               const cairn::RenderOptions& render) {
  const std::string output = commands.Execute(line, render);
  const bool blank = line.find_first_not_of(kSeparators) == std::string_view::npos;
  Require(output.empty() == blank, "only a blank line has no answer", output);
  if (blank) return;
  Require(IsWellFormedUtf8(output), "an answer is well-formed UTF-8", output);
  Require(output.back() == '\n', "an answer ends with a line end", output);

  cairn::Result<cairn::CommandInvocation> parsed = commands.Parse(line);
  if (!parsed.ok()) {
    if (output[0] == '{') {
      Require(RequireJsonAnswer(output).Find("error") != nullptr, "a line that does not parse is an error",
              output);
    } else {
      Require(output.rfind("error: ", 0) == 0 && output.find('\n') == output.size() - 1,
              "a line that does not parse is one error line", output);
      Require(IsTerminalSafe(output), "a text answer is terminal-safe", output);
    }
    return;
  }

  const bool json = parsed->json();
  Require((output[0] == '{') == json, "the answer is JSON exactly when --json was bound", output);
  std::optional<cairn::JsonValue> document;
  if (json) {
    document = RequireJsonAnswer(output);
  } else {
    Require(IsTerminalSafe(output), "a text answer is terminal-safe", output);
  }

  const std::string rebuilt = Rebuild(*parsed);
  cairn::Result<cairn::CommandInvocation> reparsed = commands.Parse(rebuilt);
  Require(reparsed.ok() && SameInvocation(*parsed, *reparsed), "a quoted respelling parses the same",
          rebuilt);

  if (document && parsed->name() == "range") {
    const cairn::JsonValue* page = document->Find("next_page");
    if (page != nullptr) {
      Require(page->is_string() && !page->text().empty(), "next_page is a token", output);
      const std::string next = commands.Execute(Rebuild(*parsed, "page", page->text()), render);
      Require(RequireJsonAnswer(next).Find("error") == nullptr, "a range continues with its next_page token",
              next);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  cairn::fuzz::PreferClassicSchedule(argc, argv);
  cairn::fuzz::EngineFixture::Get();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  cairn::fuzz::EngineFixture& fixture = cairn::fuzz::EngineFixture::Get();
  static constexpr std::array<size_t, 4> kMaxRows = {0, 1, 3, 25};
  static constexpr std::array<size_t, 4> kMaxBytes = {0, 80, 600, 4096};
  cairn::RenderOptions render;
  render.max_rows = kMaxRows[data[0] & 3];
  render.max_bytes = kMaxBytes[(data[0] >> 2) & 3];

  std::string_view lines(reinterpret_cast<const char*>(data + 1), size - 1);
  for (size_t count = 0; count < kMaxLines && !lines.empty(); ++count) {
    const size_t end = lines.find('\n');
    CheckLine(fixture.commands(), lines.substr(0, end), render);
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 1);
  }
  fixture.AfterInput();
  return 0;
}
