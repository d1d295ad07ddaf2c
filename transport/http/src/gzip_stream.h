// GzipStream: a gzip body inflated a piece at a time, so that a receiver
// holds a window of it rather than all of it (an 8 MiB body may inflate to
// 64 MiB). GunzippedSize checks a whole body first without keeping what it
// inflates, so that a body that is damaged or too large is refused before
// any of it is used.
//
// Thread-safety: none (one per request).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <zlib.h>

#include "cairn/platform/status.h"

namespace cairn {

class GzipStream {
 public:
  // `compressed` must outlive the stream. Only the first gzip member is
  // read (as the whole-body inflate did before).
  explicit GzipStream(std::string_view compressed);
  ~GzipStream();
  GzipStream(const GzipStream&) = delete;
  GzipStream& operator=(const GzipStream&) = delete;

  // Appends inflated bytes to `*out` until it has grown by at least
  // `at_least` bytes or the body has ended; true once it has ended.
  // InvalidArgument when the body is damaged or truncated.
  Result<bool> InflateInto(std::string* out, size_t at_least);

  // Bytes inflated so far.
  size_t inflated_bytes() const { return inflated_; }

 private:
  z_stream stream_ = {};
  Status init_;
  bool ended_ = false;
  size_t inflated_ = 0;
};

// The size `compressed` inflates to: ResourceExhausted past `limit` bytes,
// InvalidArgument when damaged or truncated. Holds at most one 64 KiB
// buffer of output at a time.
Result<size_t> GunzippedSize(std::string_view compressed, size_t limit);

}  // namespace cairn
