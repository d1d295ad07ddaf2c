#include "engine/clock/held_readings.h"

#include "chunk/coding.h"
#include "chunk/crc32c.h"
#include "engine/write/write_batch.h"

namespace cairn {

namespace {

using namespace chunk_coding;

constexpr uint8_t kReadingsFrame = 1;
constexpr uint8_t kResolutionFrame = 2;
constexpr size_t kFrameHeaderBytes = 8;  // fixed32 length, fixed32 crc32c

void PutString(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

bool ReadString(ByteReader& reader, std::string* out) {
  uint64_t size;
  std::string_view bytes;
  if (!reader.ReadVarint(&size) || size > reader.remaining() || !reader.ReadBytes(size, &bytes)) return false;
  out->assign(bytes);
  return true;
}

std::string EncodeReadings(const std::vector<HeldReading>& readings, size_t begin, size_t end) {
  std::string payload;
  PutByte(&payload, kReadingsFrame);
  PutVarint(&payload, end - begin);
  for (size_t i = begin; i < end; ++i) {
    PutString(&payload, readings[i].boot_id);
    PutSignedVarint(&payload, readings[i].monotonic_ns);
    PutSignedVarint(&payload, readings[i].last_trusted_ns);
  }
  std::vector<LoggedRecord> logged;
  for (size_t i = begin; i < end; ++i)
    logged.push_back(LoggedRecord{&readings[i].table, &readings[i].record, readings[i].record.ttl});
  payload += EncodeWriteBatch(logged);
  return payload;
}

std::string EncodeResolution(const std::string& boot_id, BootResolution resolution) {
  std::string payload;
  PutByte(&payload, kResolutionFrame);
  PutString(&payload, boot_id);
  PutSignedVarint(&payload, resolution.offset_ns);
  PutByte(&payload, resolution.estimated ? 1 : 0);
  return payload;
}

std::string Frame(const std::string& payload) {
  std::string frame;
  PutFixed32(&frame, static_cast<uint32_t>(payload.size()));
  PutFixed32(&frame, Crc32c(payload));
  return frame + payload;
}

}  // namespace

Result<std::unique_ptr<HeldReadings>> HeldReadings::Open(Env* env, const std::string& dir) {
  std::unique_ptr<HeldReadings> held(new HeldReadings(env, JoinPath(dir, "held.log")));
  Result<std::string> text = env->ReadFileToString(held->path_);
  if (!text.ok()) {
    if (text.status().Is(StatusCode::kNotFound)) return held;
    return text.status();
  }
  const std::string& bytes = *text;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const auto corrupt = [&](std::string_view what) {
      return Status::Corruption(held->path_ + ": " + std::string(what) + " at offset " + std::to_string(offset) +
                                " (the readings held there wait for a trusted clock; move the file aside to "
                                "start without them)");
    };
    if (bytes.size() - offset < kFrameHeaderBytes) break;  // torn header at the end
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + offset);
    const uint32_t size = LoadLittleEndian32(p);
    const uint32_t crc = LoadLittleEndian32(p + 4);
    if (bytes.size() - offset - kFrameHeaderBytes < size) break;  // torn payload at the end
    const std::string_view payload(bytes.data() + offset + kFrameHeaderBytes, size);
    const bool last = offset + kFrameHeaderBytes + size == bytes.size();
    if (Crc32c(payload) != crc) {
      if (last) break;  // the last append was cut by a crash: never acknowledged
      return corrupt("checksum mismatch");
    }
    ByteReader reader(payload);
    uint8_t kind;
    if (!reader.ReadByte(&kind)) return corrupt("empty frame");
    if (kind == kResolutionFrame) {
      std::string boot;
      int64_t offset_ns;
      uint8_t estimated;
      if (!ReadString(reader, &boot) || !reader.ReadSignedVarint(&offset_ns) || !reader.ReadByte(&estimated))
        return corrupt("bad resolution frame");
      held->resolutions_[boot] = BootResolution{offset_ns, estimated != 0};
    } else if (kind == kReadingsFrame) {
      uint64_t count;
      if (!reader.ReadVarint(&count) || count > reader.remaining()) return corrupt("bad reading count");
      std::vector<HeldReading> readings(static_cast<size_t>(count));
      for (HeldReading& r : readings) {
        if (!ReadString(reader, &r.boot_id) || !reader.ReadSignedVarint(&r.monotonic_ns) ||
            !reader.ReadSignedVarint(&r.last_trusted_ns))
          return corrupt("bad reading");
      }
      const std::string_view batch(reinterpret_cast<const char*>(reader.position()), reader.remaining());
      Result<std::vector<DecodedWriteRecord>> decoded = DecodeWriteBatch(batch);
      if (!decoded.ok()) return corrupt(decoded.status().message());
      if (decoded->size() != readings.size()) return corrupt("reading count does not match its records");
      for (size_t i = 0; i < readings.size(); ++i) {
        readings[i].table = std::move((*decoded)[i].table);
        readings[i].record = std::move((*decoded)[i].record);
        readings[i].record.receiver_time = true;
        held->readings_.push_back(std::move(readings[i]));
      }
    } else {
      return corrupt("unknown frame kind " + std::to_string(kind));
    }
    offset += kFrameHeaderBytes + size;
  }
  if (offset < bytes.size()) {
    // Cut the torn tail so that the next append follows the last whole frame.
    CAIRN_ASSIGN_OR_RETURN(held->file_, env->OpenFile(held->path_, OpenMode::kReadWrite));
    CAIRN_RETURN_IF_ERROR(held->file_->Truncate(offset));
    CAIRN_RETURN_IF_ERROR(held->file_->Sync());
  }
  return held;
}

Status HeldReadings::AppendFrame(const std::string& payload) {
  if (!file_) {
    const bool existed = env_->FileExists(path_);
    CAIRN_ASSIGN_OR_RETURN(file_, env_->OpenFile(path_, OpenMode::kReadWrite));
    if (!existed) CAIRN_RETURN_IF_ERROR(env_->SyncDir(DirName(path_)));
  }
  CAIRN_ASSIGN_OR_RETURN(uint64_t size, file_->Size());
  Status written = file_->Append(Frame(payload));
  if (written.ok()) written = file_->Sync();
  if (!written.ok()) {
    // Nothing of a failed append may be read back as acknowledged.
    (void)file_->Truncate(size);
    file_.reset();
  }
  return written;
}

Status HeldReadings::Append(std::vector<HeldReading> readings) {
  CAIRN_RETURN_IF_ERROR(AppendFrame(EncodeReadings(readings, 0, readings.size())));
  for (HeldReading& r : readings) readings_.push_back(std::move(r));
  return Status::Ok();
}

Status HeldReadings::Resolve(const std::string& boot_id, BootResolution resolution) {
  CAIRN_RETURN_IF_ERROR(AppendFrame(EncodeResolution(boot_id, resolution)));
  resolutions_[boot_id] = resolution;
  return Status::Ok();
}

Status HeldReadings::Rewrite(std::vector<HeldReading> keep) {
  file_.reset();
  if (keep.empty()) {
    if (env_->FileExists(path_)) {
      CAIRN_RETURN_IF_ERROR(env_->RemoveFile(path_));
      CAIRN_RETURN_IF_ERROR(env_->SyncDir(DirName(path_)));
    }
    readings_.clear();
    resolutions_.clear();
    return Status::Ok();
  }
  std::map<std::string, BootResolution> kept_resolutions;
  for (const HeldReading& r : keep) {
    if (auto it = resolutions_.find(r.boot_id); it != resolutions_.end()) kept_resolutions.insert(*it);
  }
  std::string bytes;
  for (const auto& [boot, resolution] : kept_resolutions) bytes += Frame(EncodeResolution(boot, resolution));
  bytes += Frame(EncodeReadings(keep, 0, keep.size()));
  CAIRN_RETURN_IF_ERROR(env_->WriteFileAtomically(path_, bytes));
  readings_ = std::move(keep);
  resolutions_ = std::move(kept_resolutions);
  return Status::Ok();
}

}  // namespace cairn
