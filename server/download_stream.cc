#include "server/download_stream.h"

#include <algorithm>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/crc32c.h"
#include "core/status_macros.h"
#include "server/matrix_conversion.h"

namespace matrixd::server {

absl::StatusOr<DownloadStream> DownloadStream::Start(ResidentRegistry& registry,
                                                     const v1::DownloadRequest& request,
                                                     uint64_t max_message_bytes,
                                                     const std::string& owner) {
  if (request.handle().empty()) return absl::InvalidArgumentError("handle is empty");
  if (request.chunk_bytes() > kMaxChunkBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_bytes is ", request.chunk_bytes(), "; the most is ", kMaxChunkBytes));
  }
  MATRIXD_ASSIGN_OR_RETURN(ResidentLease lease,
                           registry.Acquire(request.handle(), "download", owner));
  const ResidentInfo& info = lease.info();
  int64_t row_begin = request.row_begin();
  int64_t row_end = request.row_end();
  if (row_begin == 0 && row_end == 0) row_end = info.rows;
  if (row_begin < 0 || row_end > info.rows || row_begin >= row_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("rows [", request.row_begin(), ", ", request.row_end(),
                     ") are not a non-empty ", "range within the matrix's ", info.rows, " rows"));
  }
  const uint64_t row_bytes = static_cast<uint64_t>(info.cols) * ElementSize(info.dtype);
  // Room for the message's other fields (shape, offset, CRC: well under 1 KiB).
  constexpr uint64_t kMessageOverhead = 1024;
  const uint64_t largest =
      std::max<uint64_t>(max_message_bytes, 2 * kMessageOverhead) - kMessageOverhead;
  const uint64_t chunk =
      std::min(request.chunk_bytes() > 0 ? request.chunk_bytes() : kDefaultChunkBytes, largest);
  return DownloadStream(std::move(lease), row_end - row_begin,
                        static_cast<uint64_t>(row_begin) * row_bytes,
                        static_cast<uint64_t>(row_end) * row_bytes, chunk);
}

absl::StatusOr<bool> DownloadStream::Next(v1::DownloadChunk* chunk) {
  if (at_ == end_ && started_) return false;
  chunk->Clear();
  if (!started_) {
    chunk->set_rows(rows_);
    chunk->set_cols(lease_.info().cols);
    chunk->set_dtype(ToProto(lease_.info().dtype));
    started_ = true;
  }
  const uint64_t size = std::min(chunk_bytes_, end_ - at_);
  std::string* data = chunk->mutable_data();
  data->resize(size);
  const std::span<std::byte> out(reinterpret_cast<std::byte*>(data->data()), size);
  MATRIXD_RETURN_IF_ERROR(lease_.Read(at_, out));
  chunk->set_offset(at_ - begin_);
  crc_ = Crc32c(crc_, out);
  at_ += size;
  if (at_ == end_) chunk->set_crc32c(crc_);
  return true;
}

}  // namespace matrixd::server
