// Cutting a matrix's bytes into Upload messages: the ranges of a parallel upload's parts (whole
// rows each) and, for one stream, the chunks with their offsets and the CRC32C that the server
// checks. No I/O: the caller writes each message to its stream.
#ifndef MATRIXD_CLIENT_UPLOAD_CHUNKER_H_
#define MATRIXD_CLIENT_UPLOAD_CHUNKER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

// Bytes [begin, end) of a packed row-major matrix.
struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool operator==(const ByteRange&) const = default;
};

// Splits `rows` rows of `row_bytes` bytes each into at most `parts` contiguous, non-empty ranges
// of whole rows that together cover every byte once, in order. Fewer parts when there are fewer
// rows; none for an empty matrix. REQUIRES: parts >= 1.
std::vector<ByteRange> SplitRows(int64_t rows, uint64_t row_bytes, int parts);

// What the first message of a stream says about the matrix: its shape and dtype (a whole
// upload), or the handle of the matrix that CreateMatrix made (one part of a parallel upload).
struct UploadHeader {
  int64_t rows = 0;
  int64_t cols = 0;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::string label = {};
  v1::ResidentLayout layout = v1::RESIDENT_LAYOUT_SINGLE_DEVICE;  // a whole upload's
  std::string handle = {};  // non-empty: a part of this matrix; rows, cols and dtype are not sent
};

// The messages of one Upload stream over `range` of `bytes`: chunks of at most `chunk_bytes`
// (the first with the header), then a last message without data that carries the CRC32C of the
// range. The bytes must outlive the chunker.
class UploadChunker {
 public:
  // REQUIRES: range within bytes, chunk_bytes > 0.
  UploadChunker(UploadHeader header, std::span<const std::byte> bytes, ByteRange range,
                uint64_t chunk_bytes);

  // Fills `chunk` with the next message; false when there is none left.
  bool Next(v1::UploadChunk* chunk);
  // Bytes of data handed out so far.
  uint64_t bytes_sent() const { return at_ - range_.begin; }

 private:
  UploadHeader header_;
  std::span<const std::byte> bytes_;
  ByteRange range_;
  uint64_t chunk_bytes_;
  uint64_t at_;
  uint32_t crc_ = 0;
  bool header_sent_ = false;
  bool checksum_sent_ = false;
};

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_UPLOAD_CHUNKER_H_
