#include "core/cuda/pinned_staging.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

namespace {

// Half the host's hardware threads, 1 to 8: on a 16-core H100 host (2026-11-27) the narrowing of
// a 134 MB int64 matrix took 12.5 / 8.4 / 7.4 / 9.2 / 11.6 ms with 2 / 4 / 8 / 12 / 16 threads
// (docs/benchmarks.md), the memory bus, not the threads, setting the pace from 8.
std::atomic<int> host_threads{PinnedStaging::DefaultHostThreads()};

// Runs copy(begin, end) over [0, bytes) split among up to PinnedStaging::HostThreads() threads
// (this one included), in shares that are multiples of `granule` bytes; returns whether every
// share's copy returned true.
template <typename Copy>
bool SplitOverHostThreads(size_t bytes, size_t granule, const Copy& copy) {
  // Below a MiB or so a second thread costs more than it saves.
  const int threads =
      static_cast<int>(std::clamp<size_t>(bytes / PinnedStaging::kMinBytesPerThread, 1,
                                          static_cast<size_t>(PinnedStaging::HostThreads())));
  if (threads == 1) return copy(size_t{0}, bytes);
  const size_t share = (bytes / granule + threads - 1) / threads * granule;
  std::vector<std::thread> helpers;
  std::vector<char> fits(static_cast<size_t>(threads), 1);
  for (int t = 1; t < threads; ++t) {
    const size_t begin = std::min(bytes, share * t);
    const size_t end = std::min(bytes, begin + share);
    helpers.emplace_back([&, t, begin, end] { fits[t] = copy(begin, end) ? 1 : 0; });
  }
  fits[0] = copy(size_t{0}, std::min(bytes, share)) ? 1 : 0;
  for (std::thread& helper : helpers) helper.join();
  return std::all_of(fits.begin(), fits.end(), [](char f) { return f != 0; });
}

}  // namespace

int PinnedStaging::DefaultHostThreads() {
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency() / 2), 1, 8);
}

int PinnedStaging::HostThreads() { return host_threads.load(std::memory_order_relaxed); }

void PinnedStaging::SetHostThreads(int threads) {
  host_threads.store(std::clamp(threads, 1, kMaxHostThreads), std::memory_order_relaxed);
}

void ParallelMemcpy(void* to, const void* from, size_t bytes) {
  SplitOverHostThreads(bytes, 1, [&](size_t begin, size_t end) {
    std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin,
                end - begin);
    return true;
  });
}

bool NarrowToInt32(const int64_t* __restrict from, size_t count, int32_t* __restrict to) {
  // v fits iff v + 2^31 lies in [0, 2^32): the high word of the unsigned sum, or-ed over all
  // values, is zero iff all fit (unsigned wrap-around makes it non-zero for every other v).
  uint64_t outside = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t v = static_cast<uint64_t>(from[i]);
    to[i] = static_cast<int32_t>(from[i]);
    outside |= (v + (uint64_t{1} << 31)) >> 32;
  }
  return outside == 0;
}

bool ParallelNarrowToInt32(const int64_t* from, size_t count, int32_t* to) {
  // Split by the bytes read, as ParallelMemcpy splits its bytes.
  return SplitOverHostThreads(
      count * sizeof(int64_t), sizeof(int64_t), [&](size_t begin, size_t end) {
        const size_t first = begin / sizeof(int64_t);
        return NarrowToInt32(from + first, end / sizeof(int64_t) - first, to + first);
      });
}

absl::StatusOr<std::unique_ptr<PinnedStaging>> PinnedStaging::Create(cudaStream_t stream) {
  MATRIXD_ASSIGN_OR_RETURN(CudaStream copy_stream, CudaStream::Create());
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent joined, CudaEvent::Create());
  std::unique_ptr<PinnedStaging> staging(
      new PinnedStaging(stream, std::move(copy_stream), std::move(joined)));
  for (int i = 0; i < 2; ++i) {
    if (absl::Status s = ToStatus(cudaMallocHost(&staging->chunks_[i], kChunkBytes),
                                  "cudaMallocHost(staging chunk)", MATRIXD_CUDA_CALL_SITE);
        !s.ok()) {
      return absl::UnavailableError(s.message());
    }
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaEventCreateWithFlags(&staging->drained_[i], cudaEventDisableTiming));
  }
  return staging;
}

PinnedStaging::~PinnedStaging() {
  for (int i = 0; i < 2; ++i) {
    if (drained_[i] != nullptr) {
      MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventSynchronize(drained_[i]));
      MATRIXD_ASSERT_CUDA_SUCCESS(cudaEventDestroy(drained_[i]));
    }
    if (chunks_[i] != nullptr) MATRIXD_ASSERT_CUDA_SUCCESS(cudaFreeHost(chunks_[i]));
  }
}

absl::Status PinnedStaging::Upload(const void* host, void* device, size_t bytes) {
  for (size_t offset = 0; offset < bytes; offset += kChunkBytes) {
    const size_t length = std::min(kChunkBytes, bytes - offset);
    const size_t chunk = next_upload_chunk_;
    next_upload_chunk_ ^= 1;
    // The last transfer queued from this chunk (two chunks ago) must have read it.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(drained_[chunk]));
    ParallelMemcpy(chunks_[chunk], static_cast<const char*>(host) + offset, length);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(device) + offset,
                                                 chunks_[chunk], length, cudaMemcpyHostToDevice,
                                                 stream_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(drained_[chunk], stream_));
  }
  return absl::OkStatus();
}

absl::Status PinnedStaging::UploadInPieces(const int64_t* host, size_t count, size_t piece_values,
                                           std::array<void*, 2> device_slots,
                                           PieceConsumer consume) {
  if (piece_values < 1 || piece_values > kPieceValues) {
    return absl::InvalidArgumentError(absl::StrCat("UploadInPieces: ", piece_values,
                                                   " values a piece; want 1 to ", kPieceValues));
  }
  const cudaStream_t lane = copy_stream_.get();
  // The slots and their readers' outputs may have been allocated on the staging's stream.
  MATRIXD_RETURN_IF_ERROR(joined_.Record(stream_));
  MATRIXD_RETURN_IF_ERROR(joined_.MakeWait(lane));
  bool narrow = true;
  // Copies piece `first` into its chunk once the transfer two pieces back has read it; sets
  // `narrow` for it.
  auto prepare = [&](size_t first, size_t chunk) -> absl::Status {
    const size_t length = std::min(piece_values, count - first);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(drained_[chunk]));
    if (narrow) {
      narrow = ParallelNarrowToInt32(host + first, length, static_cast<int32_t*>(chunks_[chunk]));
    }
    if (!narrow) ParallelMemcpy(chunks_[chunk], host + first, length * sizeof(int64_t));
    return absl::OkStatus();
  };
  absl::Status status = count > 0 ? prepare(0, 0) : absl::OkStatus();
  for (size_t first = 0, chunk = 0; status.ok() && first < count;
       first += piece_values, chunk ^= 1) {
    const size_t length = std::min(piece_values, count - first);
    const bool piece_narrow = narrow;
    const size_t bytes = length * (piece_narrow ? sizeof(int32_t) : sizeof(int64_t));
    status = ToStatus(
        cudaMemcpyAsync(device_slots[chunk], chunks_[chunk], bytes, cudaMemcpyHostToDevice, lane),
        "cudaMemcpyAsync(piece)", MATRIXD_CUDA_CALL_SITE);
    if (status.ok()) {
      status = ToStatus(cudaEventRecord(drained_[chunk], lane), "cudaEventRecord(piece)",
                        MATRIXD_CUDA_CALL_SITE);
    }
    if (!status.ok()) break;
    // The next piece is copied into the other chunk while this thread queues the consumer's work.
    const size_t next = first + piece_values;
    absl::Status prepared = absl::OkStatus();
    std::thread preparing;
    if (next < count) preparing = std::thread([&] { prepared = prepare(next, chunk ^ 1); });
    status = consume(LandedPiece{.first = first,
                                 .count = length,
                                 .data = device_slots[chunk],
                                 .narrow = piece_narrow,
                                 .stream = lane});
    if (preparing.joinable()) preparing.join();
    if (status.ok()) status = prepared;
  }
  // Whatever happened, the staging's stream goes on after the copy stream's work.
  absl::Status joined = joined_.Record(lane);
  if (joined.ok()) joined = joined_.MakeWait(stream_);
  return status.ok() ? joined : status;
}

absl::Status PinnedStaging::Download(const void* device, void* host, size_t bytes) {
  // Chunk k's transfer is queued before chunk k-1 is copied out on the host, so the two overlap.
  size_t pending_offset = 0;
  size_t pending_length = 0;
  int pending_chunk = 0;
  auto drain_pending = [&]() -> absl::Status {
    if (pending_length == 0) return absl::OkStatus();
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(drained_[pending_chunk]));
    ParallelMemcpy(static_cast<char*>(host) + pending_offset, chunks_[pending_chunk],
                   pending_length);
    pending_length = 0;
    return absl::OkStatus();
  };
  for (size_t offset = 0, chunk = 0; offset < bytes; offset += kChunkBytes, chunk ^= 1) {
    const size_t length = std::min(kChunkBytes, bytes - offset);
    // Both chunks are free here: the one two rounds back was drained in the previous round.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(chunks_[chunk],
                                                 static_cast<const char*>(device) + offset, length,
                                                 cudaMemcpyDeviceToHost, stream_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(drained_[chunk], stream_));
    MATRIXD_RETURN_IF_ERROR(drain_pending());
    pending_offset = offset;
    pending_length = length;
    pending_chunk = static_cast<int>(chunk);
  }
  return drain_pending();
}

}  // namespace matrixd::cuda
