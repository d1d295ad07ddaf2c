// The PostgreSQL sink of the ingest service, through libpq. Available only in
// builds that found libpq (the macro CAIRN_INGEST_HAVE_POSTGRES is defined
// for code that links cairn_ingest); the ARM builds have no libpq.
//
// Schema: cloud/ingest/ingest_schema.md. Each batch is one transaction of
// multi-row INSERT ... ON CONFLICT ... DO UPDATE ... WHERE stored.version <
// incoming.version statements whose values travel as parameters, never as
// SQL text.
//
// Thread-safety: as IngestSink (one thread at a time).
#pragma once

#include <memory>
#include <string>

#include "cairn/ingest/ingest_sink.h"
#include "cairn/platform/status.h"

namespace cairn {

// Connects with libpq `conninfo` ("host=... port=... dbname=... user=..." or
// a postgresql:// URI) and creates the schema if it is missing.
// Unavailable when the server cannot be reached (the message is libpq's);
// InvalidArgument for a malformed conninfo.
Result<std::unique_ptr<IngestSink>> OpenPostgresSink(const std::string& conninfo);

}  // namespace cairn
