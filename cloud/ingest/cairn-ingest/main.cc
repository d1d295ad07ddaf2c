// cairn-ingest: the reference cloud ingest service (DESIGN §6). Receives the
// envelopes gateways publish over MQTT, verifies them with each gateway's
// key, stores their records idempotently in PostgreSQL (or SQLite) and
// publishes a signed receipt after each commit.
//
// Exit status: 0 after a clean stop (SIGTERM/SIGINT) and for --help; 1 when
// start-up fails (keys, database, broker options); 2 for a malformed command
// line.
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cairn/ingest/gateway_keys.h"
#include "cairn/ingest/ingest_service.h"
#include "cairn/ingest/ingest_sink.h"
#include "cairn/platform/env.h"
#include "cairn/platform/process_signals.h"
#ifdef CAIRN_INGEST_HAVE_POSTGRES
#include "cairn/ingest/postgres_sink.h"
#endif

namespace {

constexpr char kUsage[] =
    "Usage: cairn-ingest --broker URI --keys FILE (--postgres CONNINFO | --sqlite PATH) [options]\n"
    "\n"
    "Receives sync envelopes from cairn gateways over MQTT, stores their records\n"
    "idempotently and publishes a signed receipt after each database commit.\n"
    "\n"
    "  --broker URI          tcp://host:port, or ssl://host:port with --tls-ca\n"
    "  --client-id ID        MQTT client id, which keys the persistent session\n"
    "                        (default cairn-ingest)\n"
    "  --username USER       MQTT user name\n"
    "  --password PASSWORD   MQTT password (with --username)\n"
    "  --tls-ca FILE         CA certificate (PEM) the broker's certificate must chain to\n"
    "  --tls-cert FILE       client certificate (PEM) for mutual TLS, with --tls-key\n"
    "  --tls-key FILE        client private key (PEM)\n"
    "  --topic-prefix PREFIX topic prefix of the gateways (default cairn/v1)\n"
    "  --keys FILE           gateway keys: one '<gateway_id> <key as hex>' per line\n"
    "  --postgres CONNINFO   store in PostgreSQL (libpq connection string)\n"
    "  --sqlite PATH         store in a SQLite database file\n"
    "  --progress-every N    log a progress line every N stored batches\n"
    "                        (default 1000; 0: never)\n"
    "  --help                show this text\n";

struct CommandLine {
  bool help = false;
  std::string broker;
  std::string client_id = "cairn-ingest";
  std::string username;
  std::string password;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string topic_prefix = "cairn/v1";
  std::string keys;
  std::optional<std::string> postgres;
  std::optional<std::string> sqlite;
  uint64_t progress_every = 1000;
};

// Parses "--flag value" and "--flag=value". Returns an error message, or ""
// when the command line is well-formed.
std::string ParseCommandLine(int argc, char** argv, CommandLine* out) {
  struct Flag {
    std::string_view name;
    std::string* text;
  };
  std::string postgres, sqlite, progress;
  bool postgres_seen = false, sqlite_seen = false, progress_seen = false;
  const std::vector<Flag> flags = {
      {"--broker", &out->broker},     {"--client-id", &out->client_id},
      {"--username", &out->username}, {"--password", &out->password},
      {"--tls-ca", &out->tls_ca},     {"--tls-cert", &out->tls_cert},
      {"--tls-key", &out->tls_key},   {"--topic-prefix", &out->topic_prefix},
      {"--keys", &out->keys},         {"--postgres", &postgres},
      {"--sqlite", &sqlite},          {"--progress-every", &progress},
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word == "--help" || word == "-h") {
      out->help = true;
      return "";
    }
    std::string_view name = word;
    std::optional<std::string> value;
    if (const size_t equals = word.find('='); word.starts_with("--") && equals != std::string_view::npos) {
      name = word.substr(0, equals);
      value = std::string(word.substr(equals + 1));
    }
    const Flag* flag = nullptr;
    for (const Flag& candidate : flags) {
      if (candidate.name == name) flag = &candidate;
    }
    if (flag == nullptr) return "unknown option '" + std::string(word) + "'";
    if (!value.has_value()) {
      if (i + 1 >= argc) return "option " + std::string(name) + " needs a value";
      value = argv[++i];
    }
    *flag->text = *value;
    if (name == "--postgres") postgres_seen = true;
    if (name == "--sqlite") sqlite_seen = true;
    if (name == "--progress-every") progress_seen = true;
  }
  if (out->broker.empty()) return "--broker is required";
  if (out->keys.empty()) return "--keys is required";
  if (postgres_seen == sqlite_seen) return "give exactly one of --postgres and --sqlite";
  if (postgres_seen) out->postgres = postgres;
  if (sqlite_seen) out->sqlite = sqlite;
  if (progress_seen) {
    const std::from_chars_result read =
        std::from_chars(progress.data(), progress.data() + progress.size(), out->progress_every);
    if (progress.empty() || read.ec != std::errc() || read.ptr != progress.data() + progress.size()) {
      return "--progress-every needs a non-negative integer, not '" + progress + "'";
    }
  }
  if (out->tls_cert.empty() != out->tls_key.empty()) return "--tls-cert and --tls-key go together";
  if (!out->tls_cert.empty() && out->tls_ca.empty()) return "--tls-cert needs --tls-ca";
  if (!out->password.empty() && out->username.empty()) return "--password needs --username";
  return "";
}

void LogLine(std::string_view line) {
  std::fprintf(stderr, "cairn-ingest: %.*s\n", static_cast<int>(line.size()), line.data());
}

cairn::Result<std::unique_ptr<cairn::IngestSink>> OpenSink(cairn::Env* env, const CommandLine& command_line) {
  if (command_line.sqlite.has_value()) return cairn::OpenSqliteSink(env, *command_line.sqlite);
#ifdef CAIRN_INGEST_HAVE_POSTGRES
  return cairn::OpenPostgresSink(*command_line.postgres);
#else
  return cairn::Status::InvalidArgument("this build of cairn-ingest has no PostgreSQL support");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine command_line;
  if (std::string error = ParseCommandLine(argc, argv, &command_line); !error.empty()) {
    std::fprintf(stderr, "cairn-ingest: %s\nTry 'cairn-ingest --help' for usage.\n", error.c_str());
    return 2;
  }
  if (command_line.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // Before any thread starts, so that only the main loop receives them.
  if (cairn::Status blocked = cairn::TerminationSignals::Block(); !blocked.ok()) {
    LogLine("cannot block termination signals: " + blocked.ToString());
    return 1;
  }
  cairn::Env* env = cairn::Env::Default();

  cairn::Result<cairn::GatewayKeys> keys = cairn::LoadGatewayKeys(env, command_line.keys);
  if (!keys.ok()) {
    LogLine(keys.status().message());
    return 1;
  }
  cairn::Result<std::unique_ptr<cairn::IngestSink>> sink = OpenSink(env, command_line);
  if (!sink.ok()) {
    LogLine("cannot open the database: " + sink.status().ToString());
    return 1;
  }

  cairn::IngestServiceOptions options;
  options.link.server_uri = command_line.broker;
  options.link.client_id = command_line.client_id;
  options.link.username = command_line.username;
  options.link.password = command_line.password;
  if (!command_line.tls_ca.empty()) {
    options.link.tls =
        cairn::MqttTlsOptions{command_line.tls_ca, command_line.tls_cert, command_line.tls_key};
  }
  options.ingest.topic_prefix = command_line.topic_prefix;
  options.ingest.keys = std::move(keys).value();
  options.log = LogLine;
  options.progress_every_batches = command_line.progress_every;
  const std::string sink_kind(sink.value()->kind());

  cairn::Result<std::unique_ptr<cairn::IngestService>> service =
      cairn::IngestService::Create(env, std::move(options), std::move(sink).value());
  if (!service.ok()) {
    LogLine(service.status().message());
    return 1;
  }
  if (cairn::Status started = (*service)->Start(); !started.ok()) {
    LogLine("cannot start: " + started.ToString());
    return 1;
  }
  LogLine("storing in " + sink_kind + "; connecting to " + command_line.broker);

  while (true) {
    cairn::Result<cairn::ProcessSignal> signal = cairn::TerminationSignals::Wait(1000);
    if (!signal.ok()) {
      LogLine("cannot wait for signals: " + signal.status().ToString());
      break;
    }
    if (*signal == cairn::ProcessSignal::kTerminate) break;
  }
  (*service)->Stop();
  const cairn::IngestServiceStats stats = (*service)->stats();
  LogLine("stopped; batches stored " + std::to_string(stats.ingest.batches_stored) + ", rejected " +
          std::to_string(stats.ingest.batches_rejected) + "; messages dropped: unknown gateway " +
          std::to_string(stats.ingest.unknown_gateway) + ", forged " + std::to_string(stats.ingest.forged) +
          ", malformed " + std::to_string(stats.ingest.malformed));
  return 0;
}
