#include "cairnd/config_command.h"

#include <string_view>

#include "cairnd/config_file.h"
#include "cairnd/options.h"

namespace cairn::cairnd {

namespace {

constexpr std::string_view kUsage =
    "usage: cairnd config check [--config FILE] [flags]\n"
    "       cairnd config show [--config FILE] [flags]\n"
    "\n"
    "check: read the config file (default /etc/cairn/cairn.toml; --config none: flags\n"
    "       only) and the flags as cairnd would at start, and report the first error\n"
    "       with file:line:column and key (exit 2) or ok (exit 0)\n"
    "show:  print the effective configuration (the flags override the file) as TOML;\n"
    "       credentials written into a broker URI are shown as <redacted>\n";

}  // namespace

int RunConfigCommand(Env* env, std::span<const char* const> words, std::string* out, std::string* err) {
  const std::string_view verb = words.empty() ? "" : words[0];
  if (verb == "--help" || verb == "help") {
    *out += kUsage;
    return 0;
  }
  if (verb != "check" && verb != "show") {
    *err += "cairnd config: expected check or show\n" + std::string(kUsage);
    return 2;
  }
  Result<ParsedCommandLine> parsed = LoadConfiguration(env, words.subspan(1));
  if (!parsed.ok()) {
    *err += "cairnd: " + parsed.status().message() + "\n";
    return 2;
  }
  const std::string source =
      parsed->config_path.empty() ? "no config file (flags only)" : parsed->config_path;
  if (verb == "check") {
    *out += source + ": ok\n";
    return 0;
  }
  *out += "# cairnd's effective configuration: " + source + ", under the command line's flags\n";
  *out += RenderConfig(parsed->options);
  return 0;
}

}  // namespace cairn::cairnd
