// cairnd's TOML config file (/etc/cairn/cairn.toml; firmware/cairn.toml.example
// lists every key with its default).
//
//   [storage] [ingest] [serial] [http] [tls] [sync] [mqtt_input] [flash_wear]
//       one key per flag, named in flag_table.cc (e.g. http.max_connections
//       for --http-max-connections), with the flag's value as a TOML value:
//       true/false for a flag without value, an integer for N/MS/SECONDS, an
//       integer or float for TB/X, an integer or "512M" for SIZE, else a
//       string.
//   [tables.NAME]
//       a table cairnd creates at start when missing and brings to these
//       options when present: period ("hour", "day", "week", "month"),
//       retention and default_ttl (durations as the shell takes them: "30d",
//       "12h", "90m"; default_ttl "0s" = never), on_conflict ("reject",
//       "overwrite"), sync (bool), max_series (integer, 0 = the engine's
//       default), attributes (array of tag names). Keys left out keep the
//       engine's defaults for a new table and the stored value for an
//       existing one.
//
// An unknown section or key, a value of the wrong type or a value the flag
// refuses is InvalidArgument "FILE:LINE:COLUMN: KEY: why".
//
// Secrets: no key holds secret material itself. Keys, certificates and the
// broker password stay in files that cairnd reads at start (tls.key,
// sync.key_file, sync.tls_key, sync.password_file); only their paths are in
// the config, and `cairnd config show` prints them as they are. What show
// redacts is credentials written into a broker URI (sync.broker,
// mqtt_input.broker: tcp://USER:PASSWORD@host becomes tcp://<redacted>@host).
//
// Thread-safety: pure functions, except ReadConfigFile (reads through `env`).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "cairn/platform/env.h"
#include "cairn/platform/status.h"

#include "cairnd/options.h"

namespace cairn::cairnd {

// The config file at `path`: nullopt when `path` is empty (--config none) or
// when the default file (`named` false) does not exist. NotFound naming the
// file when a named one does not exist; the read error when it cannot be read.
Result<std::optional<ConfigText>> ReadConfigFile(Env* env, const std::string& path, bool named);

// Applies every key of `config` to `parsed` through its flag's row and adds
// the flag's name to `seen` (a bool key set to false adds nothing: it is the
// default). Table sections go to parsed->options.tables.
Status ApplyConfigText(const ConfigText& config, ParsedCommandLine* parsed, std::set<std::string_view>* seen);

// The options as a config file, every key in flag_table.cc's order: set keys
// as `key = value`, unset ones (and the sync keys while sync is off) as
// comments, then the declared tables. Parsing it back gives the same
// options. Broker URIs are redacted as described above.
std::string RenderConfig(const DaemonOptions& options);

}  // namespace cairn::cairnd
