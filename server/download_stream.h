// Cuts a resident matrix, or a range of its rows, into DownloadChunk messages: the first carries
// the shape and dtype of what is sent, each its byte offset, the last the CRC32C of all bytes
// sent. Holds the matrix in place (a ResidentLease) until destroyed. Not thread-safe.
#ifndef MATRIXD_SERVER_DOWNLOAD_STREAM_H_
#define MATRIXD_SERVER_DOWNLOAD_STREAM_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/resident_registry.h"

namespace matrixd::server {

class DownloadStream {
 public:
  static constexpr uint64_t kDefaultChunkBytes = uint64_t{4} << 20;
  static constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;

  // INVALID_ARGUMENT for an empty handle, a row range outside the matrix or empty, or
  // chunk_bytes above kMaxChunkBytes; NOT_FOUND for an unknown handle or
  // one that is not `owner`'s. Chunks are cut smaller
  // than `max_message_bytes` (the server's largest message) whatever the request asks.
  static absl::StatusOr<DownloadStream> Start(ResidentRegistry& registry,
                                              const v1::DownloadRequest& request,
                                              uint64_t max_message_bytes = kMaxChunkBytes * 2,
                                              const std::string& owner = {});

  // Fills `chunk` with the next piece; false once everything was sent (chunk untouched).
  absl::StatusOr<bool> Next(v1::DownloadChunk* chunk);

  uint64_t bytes() const { return end_ - begin_; }

 private:
  DownloadStream(ResidentLease lease, int64_t rows, uint64_t begin, uint64_t end,
                 uint64_t chunk_bytes)
      : lease_(std::move(lease)),
        rows_(rows),
        begin_(begin),
        end_(end),
        at_(begin),
        chunk_bytes_(chunk_bytes) {}

  ResidentLease lease_;
  int64_t rows_;    // rows sent
  uint64_t begin_;  // byte range of the matrix sent
  uint64_t end_;
  uint64_t at_;  // next byte to send
  uint64_t chunk_bytes_;
  uint32_t crc_ = 0;
  bool started_ = false;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_DOWNLOAD_STREAM_H_
