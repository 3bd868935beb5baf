#include "client/upload_chunker.h"

#include <algorithm>
#include <utility>

#include "core/crc32c.h"

namespace matrixd {

std::vector<ByteRange> SplitRows(int64_t rows, uint64_t row_bytes, int parts) {
  std::vector<ByteRange> ranges;
  if (rows <= 0 || row_bytes == 0) return ranges;
  const int64_t count = std::min<int64_t>(std::max(parts, 1), rows);
  for (int64_t i = 0; i < count; ++i) {
    // Row boundaries at rows * i / count: sizes differ by at most one row.
    const auto first = static_cast<uint64_t>(rows * i / count);
    const auto last = static_cast<uint64_t>(rows * (i + 1) / count);
    ranges.push_back({first * row_bytes, last * row_bytes});
  }
  return ranges;
}

UploadChunker::UploadChunker(UploadHeader header, std::span<const std::byte> bytes, ByteRange range,
                             uint64_t chunk_bytes)
    : header_(std::move(header)),
      bytes_(bytes),
      range_(range),
      chunk_bytes_(chunk_bytes),
      at_(range.begin) {}

bool UploadChunker::Next(v1::UploadChunk* chunk) {
  if (checksum_sent_) return false;
  chunk->Clear();
  if (!header_sent_) {
    if (header_.handle.empty()) {
      chunk->set_rows(header_.rows);
      chunk->set_cols(header_.cols);
      chunk->set_dtype(header_.dtype);
      chunk->set_label(header_.label);
      chunk->set_layout(header_.layout);
    } else {
      chunk->set_handle(header_.handle);
    }
    header_sent_ = true;
  }
  chunk->set_offset(at_);
  if (at_ == range_.end) {
    // The checksum alone, after the data: the CRC is only known once every byte has been read.
    chunk->mutable_checksum()->set_crc32c(crc_);
    checksum_sent_ = true;
    return true;
  }
  const uint64_t size = std::min(chunk_bytes_, range_.end - at_);
  const std::span<const std::byte> data = bytes_.subspan(at_, size);
  chunk->set_data(reinterpret_cast<const char*>(data.data()), data.size());
  crc_ = Crc32c(crc_, data);
  at_ += size;
  return true;
}

}  // namespace matrixd
