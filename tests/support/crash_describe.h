// Descriptions of records, values and row differences for the failure
// messages of crash tests: every difference named with its identity and
// what the run knows about it.
//
// Header-only for the same reason as reference_model.h.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cairn/core/engine.h"
#include "cairn/core/record.h"

#include "reference_model.h"

namespace cairn::crash {

inline std::string Escape(std::string_view text, size_t max_bytes = 48) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  if (text.size() > max_bytes) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

inline std::string Describe(const Identity& identity) {
  std::string text = "(" + Escape(identity.device_id) + ", " + identity.measure_name;
  for (const auto& [name, value] : identity.dimensions) text += ", " + name + "=" + value;
  return text + ", " + std::to_string(identity.timestamp) + ")";
}

inline std::string Describe(const Value& value) {
  switch (value.index()) {
    case 0:
      return "absent";
    case 1: {
      char text[64];
      uint64_t bits;
      const double d = std::get<double>(value);
      std::memcpy(&bits, &d, sizeof bits);
      std::snprintf(text, sizeof text, "%.17g(0x%016" PRIx64 ")", d, bits);
      return text;
    }
    case 2:
      return std::to_string(std::get<int64_t>(value));
    case 3:
      return std::get<bool>(value) ? "true" : "false";
    case 4:
      return "\"" + Escape(std::get<std::string>(value)) + "\"";
    case 5:
      return "@" + std::to_string(std::get<Timestamp>(value).unix_nanos);
  }
  return "?";
}

inline std::string Describe(const std::vector<Field>& fields) {
  std::string out = "{";
  for (const Field& field : fields) {
    if (out.size() > 1) out += ", ";
    out += field.name + "=" + Describe(field.value);
  }
  return out + "}";
}

inline std::string Describe(const StoredRecord& record) {
  return "v" + std::to_string(record.version) + " ttl=" + std::to_string(record.ttl) + " " +
         Describe(record.fields);
}

inline std::string Describe(const RecordRow& row) {
  return Describe(IdentityOf(row)) + " shard=" + std::to_string(row.shard) + " " +
         Describe(StoredRecord{row.version, row.ttl, row.fields});
}

inline std::string OutcomeName(WriteOutcome outcome) {
  switch (outcome) {
    case WriteOutcome::kStored:
      return "stored";
    case WriteOutcome::kDuplicate:
      return "duplicate";
    case WriteOutcome::kRejectedVersion:
      return "rejected-version";
    case WriteOutcome::kInvalid:
      return "invalid";
    case WriteOutcome::kConflict:
      return "conflict";
  }
  return "?";
}

// Explains how two row lists differ: identities missing, unexpected,
// repeated, or present with other contents, and the first position where the
// order differs.
// `explain` adds what the run knows about an identity (its write history).
inline std::string DiffRows(const std::vector<RecordRow>& got, const std::vector<RecordRow>& want,
                     const std::function<std::string(const Identity&)>& explain) {
  std::map<Identity, std::vector<const RecordRow*>> got_by_identity, want_by_identity;
  for (const RecordRow& row : got) got_by_identity[IdentityOf(row)].push_back(&row);
  for (const RecordRow& row : want) want_by_identity[IdentityOf(row)].push_back(&row);
  std::string out = "got " + std::to_string(got.size()) + " rows, want " + std::to_string(want.size());
  int reported = 0;
  const auto add = [&](const std::string& line) {
    if (++reported <= 12) out += "\n    " + line;
  };
  for (const auto& [identity, rows] : want_by_identity) {
    auto it = got_by_identity.find(identity);
    if (it == got_by_identity.end()) {
      add("missing " + Describe(*rows.front()) + explain(identity));
    } else if (it->second.size() > 1) {
      add("returned " + std::to_string(it->second.size()) + " times: " + Describe(identity) +
          explain(identity));
    } else if (!SameRow(*it->second.front(), *rows.front())) {
      add("differs " + Describe(identity) + ": got " + Describe(*it->second.front()) + ", want " +
          Describe(*rows.front()) + explain(identity));
    }
  }
  for (const auto& [identity, rows] : got_by_identity) {
    if (want_by_identity.count(identity) == 0) {
      add("unexpected x" + std::to_string(rows.size()) + " " + Describe(*rows.front()) + explain(identity));
    }
  }
  if (reported == 0) {
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
      if (!SameRow(got[i], want[i])) {
        add("order differs at row " + std::to_string(i) + ": got " + Describe(IdentityOf(got[i])) +
            ", want " + Describe(IdentityOf(want[i])));
        break;
      }
    }
  }
  if (reported > 12) out += "\n    ... and " + std::to_string(reported - 12) + " more";
  return out;
}

inline bool SameRows(const std::vector<RecordRow>& a, const std::vector<RecordRow>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameRow(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace cairn::crash
