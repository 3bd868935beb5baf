// Copies between pageable host memory and the device through two page-locked chunks owned by one
// stream: host threads copy a chunk into (or out of) one pinned buffer while the copy engine
// moves the other. Pageable copies otherwise go through the driver's own staging at a fraction
// of the pinned bandwidth (7-9 GB/s against 55 GB/s host to device on the H100). Not
// thread-safe: one per stream, used by whoever holds the stream. UploadInPieces sends int64 values
// narrowed to int32 where they fit (half the host writes and half the transfer), piece by piece,
// on a copy stream of its own, handing each landed piece to the caller's conversion while the
// next one is copied: a caller that queues other work on its own stream meanwhile (a factorization
// of the landed part) does not hold up the transfers behind it.
#ifndef MATRIXD_CORE_CUDA_PINNED_STAGING_H_
#define MATRIXD_CORE_CUDA_PINNED_STAGING_H_

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/cuda_stream.h"

namespace matrixd::cuda {

class PinnedStaging {
 public:
  // Each pinned chunk.
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  // The most host threads a copy into or out of a chunk is split over: DefaultHostThreads()
  // unless SetHostThreads chose otherwise (process-wide; a copy splits only when each thread gets
  // at least kMinBytesPerThread).
  static int DefaultHostThreads();
  static constexpr int kMaxHostThreads = 32;
  static constexpr size_t kMinBytesPerThread = size_t{1} << 20;
  static int HostThreads();
  // Sets HostThreads to `threads` clamped to [1, kMaxHostThreads] for the copies that start after
  // it (for the benchmarks and the server's --staging_threads).
  static void SetHostThreads(int threads);
  // The most values per piece of UploadInPieces: a chunk holds one at full width (int64).
  static constexpr size_t kPieceValues = kChunkBytes / sizeof(int64_t);

  // Allocates the two chunks (cudaMallocHost) for copies on `stream`. UNAVAILABLE when the
  // driver refuses page-locked memory.
  static absl::StatusOr<std::unique_ptr<PinnedStaging>> Create(cudaStream_t stream);
  // Waits for the copies still reading or writing the chunks, then frees them.
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Queues host -> device. Returns once `host` has been read entirely (the caller may reuse it);
  // the last chunk's transfer may still be in flight on the stream.
  absl::Status Upload(const void* host, void* device, size_t bytes);
  // Device -> host, in stream order after the work queued before it. Returns once `host` holds
  // the data.
  absl::Status Download(const void* device, void* host, size_t bytes);

  // Values [first, first + count) of an UploadInPieces, landed on the device at `data`: int32
  // when `narrow`, else int64, in the order of `stream` (the staging's copy stream).
  struct LandedPiece {
    size_t first = 0;
    size_t count = 0;
    const void* data = nullptr;
    bool narrow = true;
    cudaStream_t stream = nullptr;
  };
  // Queues on piece.stream the work that reads a landed piece (a conversion kernel); other streams
  // that need the piece wait for an event recorded there after it.
  using PieceConsumer = absl::FunctionRef<absl::Status(const LandedPiece&)>;
  // Queues host -> device of `count` int64 values in pieces of `piece_values`, piece k into
  // device_slots[k % 2] (each min(count, piece_values) int64 wide), then consume(piece k), which
  // the transfer of piece k + 2 into the same slot follows in stream order. The transfers and the
  // consumers' work go on the staging's copy stream, after the work queued on the staging's
  // stream before the call; consume(piece k) runs on the calling thread while other threads copy
  // piece k + 1 into pinned memory. A piece goes as int32 when all its values fit, else as int64,
  // and so do all the pieces after it (one narrowing tried in vain, not one per piece). Returns
  // once `host` has been read, with the staging's stream ordered after everything queued on the
  // copy stream (the transfers and the consumers' work may still be in flight). Returns the
  // first error of a copy or of `consume`. REQUIRES: 1 <= piece_values <= kPieceValues.
  absl::Status UploadInPieces(const int64_t* host, size_t count, size_t piece_values,
                              std::array<void*, 2> device_slots, PieceConsumer consume);

 private:
  PinnedStaging(cudaStream_t stream, CudaStream copy_stream, CudaEvent joined)
      : stream_(stream), copy_stream_(std::move(copy_stream)), joined_(std::move(joined)) {}

  cudaStream_t stream_;
  CudaStream copy_stream_;  // UploadInPieces' transfers and consumers
  CudaEvent joined_;        // orders the two streams at the start and the end of UploadInPieces
  std::array<void*, 2> chunks_{};
  std::array<cudaEvent_t, 2> drained_{};  // recorded after each transfer from or to a chunk
  // The chunk Upload fills next: the alternation goes on across calls, so that a stream of
  // pieces (StagedUpload) fills one chunk while the other's transfer runs, whatever their sizes.
  size_t next_upload_chunk_ = 0;
};

// memcpy split over up to PinnedStaging::HostThreads() threads for large sizes.
void ParallelMemcpy(void* to, const void* from, size_t bytes);

// to[i] := from[i] narrowed to int32 (its low 32 bits) for i < count. Returns whether every value
// lay in [INT32_MIN, INT32_MAX]; `to` is written either way. One pass, no branch per value, so
// that it vectorizes and runs at about memcpy's speed (it reads as much and writes half).
bool NarrowToInt32(const int64_t* from, size_t count, int32_t* to);
// NarrowToInt32 split over up to PinnedStaging::HostThreads() threads as ParallelMemcpy is.
bool ParallelNarrowToInt32(const int64_t* from, size_t count, int32_t* to);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_PINNED_STAGING_H_
