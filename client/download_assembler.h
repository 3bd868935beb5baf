// Putting a Download stream back together: checks that the chunks arrive in order without gaps,
// that they fill the announced shape exactly, and that the CRC32C in the last one matches what
// arrived. No I/O: the caller feeds it each message it reads.
#ifndef MATRIXD_CLIENT_DOWNLOAD_ASSEMBLER_H_
#define MATRIXD_CLIENT_DOWNLOAD_ASSEMBLER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

class DownloadAssembler {
 public:
  // Takes the next message. The first must carry a valid shape and dtype. DATA_LOSS naming the
  // problem for a chunk out of order (gap or overlap) or past the end, or a missing shape.
  absl::Status Add(v1::DownloadChunk& chunk);
  // The matrix, once the stream has ended. DATA_LOSS when bytes are missing or the CRC32C of the
  // bytes received differs from the one the server sent.
  absl::StatusOr<v1::Matrix> Finish() &&;

  uint64_t bytes_received() const { return received_; }
  // The size announced in the first message (0 before it).
  uint64_t total_bytes() const { return total_; }

 private:
  v1::Matrix matrix_;
  bool started_ = false;
  uint64_t total_ = 0;
  uint64_t received_ = 0;
  uint32_t crc_ = 0;
  uint32_t sent_crc_ = 0;
};

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_DOWNLOAD_ASSEMBLER_H_
