// Inflating gzip bodies a piece at a time (gzip_stream.h).
#include "gzip_stream.h"

#include <algorithm>

namespace cairn {

namespace {

constexpr size_t kPieceBytes = 64 * 1024;

}  // namespace

GzipStream::GzipStream(std::string_view compressed) {
  // 16 + MAX_WBITS: a gzip header and trailer around the deflate stream.
  if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) {
    init_ = Status::Internal("zlib inflateInit2 failed");
    return;
  }
  stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream_.avail_in = static_cast<uInt>(compressed.size());
}

GzipStream::~GzipStream() {
  if (init_.ok()) inflateEnd(&stream_);
}

Result<bool> GzipStream::InflateInto(std::string* out, size_t at_least) {
  CAIRN_RETURN_IF_ERROR(init_);
  const size_t start = out->size();
  while (!ended_ && out->size() - start < std::max<size_t>(at_least, 1)) {
    const size_t before = out->size();
    out->resize(before + kPieceBytes);
    stream_.next_out = reinterpret_cast<Bytef*>(out->data() + before);
    stream_.avail_out = static_cast<uInt>(kPieceBytes);
    const int result = inflate(&stream_, Z_NO_FLUSH);
    const size_t produced = kPieceBytes - stream_.avail_out;
    out->resize(before + produced);
    inflated_ += produced;
    if (result == Z_STREAM_END) {
      ended_ = true;
    } else if (result != Z_OK) {
      return Status::InvalidArgument(std::string("the gzip body is damaged: ") +
                                     (stream_.msg != nullptr ? stream_.msg : "truncated"));
    } else if (stream_.avail_in == 0 && stream_.avail_out != 0) {
      // Every input byte used, room left, and no end: the body stops early.
      return Status::InvalidArgument("the gzip body is truncated");
    }
  }
  return ended_;
}

Result<size_t> GunzippedSize(std::string_view compressed, size_t limit) {
  GzipStream stream(compressed);
  std::string piece;
  for (;;) {
    piece.clear();
    CAIRN_ASSIGN_OR_RETURN(const bool ended, stream.InflateInto(&piece, kPieceBytes));
    if (stream.inflated_bytes() > limit) {
      return Status::ResourceExhausted("the gzip body inflates to more than " + std::to_string(limit) + " bytes");
    }
    if (ended) return stream.inflated_bytes();
  }
}

}  // namespace cairn
