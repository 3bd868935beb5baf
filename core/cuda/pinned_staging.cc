#include "core/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

void ParallelMemcpy(void* to, const void* from, size_t bytes) {
  // Below a few MiB a second thread costs more than it saves.
  constexpr size_t kBytesPerThread = size_t{4} << 20;
  const int threads = static_cast<int>(std::clamp<size_t>(
      bytes / kBytesPerThread, 1, static_cast<size_t>(PinnedStaging::kHostThreads)));
  if (threads == 1) {
    std::memcpy(to, from, bytes);
    return;
  }
  const size_t share = (bytes + threads - 1) / threads;
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) {
    const size_t begin = std::min(bytes, share * t);
    const size_t end = std::min(bytes, begin + share);
    helpers.emplace_back([=] {
      std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin,
                  end - begin);
    });
  }
  std::memcpy(to, from, std::min(bytes, share));
  for (std::thread& helper : helpers) helper.join();
}

absl::StatusOr<std::unique_ptr<PinnedStaging>> PinnedStaging::Create(cudaStream_t stream) {
  std::unique_ptr<PinnedStaging> staging(new PinnedStaging(stream));
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
  for (size_t offset = 0, chunk = 0; offset < bytes; offset += kChunkBytes, chunk ^= 1) {
    const size_t length = std::min(kChunkBytes, bytes - offset);
    // The transfer queued from this chunk two rounds ago must have read it.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(drained_[chunk]));
    ParallelMemcpy(chunks_[chunk], static_cast<const char*>(host) + offset, length);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(device) + offset,
                                                 chunks_[chunk], length, cudaMemcpyHostToDevice,
                                                 stream_));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(drained_[chunk], stream_));
  }
  return absl::OkStatus();
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
