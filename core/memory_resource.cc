#include "core/memory_resource.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace matrixd {

// ---- LimitingResource ----

uint64_t LimitingResource::allocated() const {
  absl::MutexLock lock(&mutex_);
  return allocated_;
}

absl::StatusOr<void*> LimitingResource::DoAllocate(size_t bytes, MemoryStream stream) {
  {
    // Reserve first, so that concurrent allocations cannot together pass the limit.
    absl::MutexLock lock(&mutex_);
    const uint64_t free_bytes = limit_ - allocated_;
    if (bytes > free_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(bytes, " bytes requested, but only ",
                                                       free_bytes, " of the ", limit_,
                                                       "-byte limit are free"));
    }
    allocated_ += bytes;
  }
  absl::StatusOr<void*> data = upstream_->Allocate(bytes, stream);
  if (!data.ok()) {
    absl::MutexLock lock(&mutex_);
    allocated_ -= bytes;
  }
  return data;
}

void LimitingResource::DoDeallocate(void* data, size_t bytes, MemoryStream stream) {
  upstream_->Deallocate(data, bytes, stream);
  absl::MutexLock lock(&mutex_);
  allocated_ -= std::min<uint64_t>(bytes, allocated_);
}

// ---- StatisticsResource ----

MemoryStatistics StatisticsResource::statistics() const {
  absl::MutexLock lock(&mutex_);
  return statistics_;
}

void StatisticsResource::ResetPeaks() {
  absl::MutexLock lock(&mutex_);
  statistics_.peak_bytes = statistics_.current_bytes;
  statistics_.peak_count = statistics_.current_count;
}

absl::StatusOr<void*> StatisticsResource::DoAllocate(size_t bytes, MemoryStream stream) {
  absl::StatusOr<void*> data = upstream_->Allocate(bytes, stream);
  absl::MutexLock lock(&mutex_);
  MemoryStatistics& s = statistics_;
  if (!data.ok()) {
    ++s.failed_count;
    return data;
  }
  s.current_bytes += bytes;
  s.peak_bytes = std::max(s.peak_bytes, s.current_bytes);
  s.total_bytes += bytes;
  ++s.current_count;
  s.peak_count = std::max(s.peak_count, s.current_count);
  ++s.total_count;
  return data;
}

void StatisticsResource::DoDeallocate(void* data, size_t bytes, MemoryStream stream) {
  upstream_->Deallocate(data, bytes, stream);
  absl::MutexLock lock(&mutex_);
  statistics_.current_bytes -= std::min<uint64_t>(bytes, statistics_.current_bytes);
  statistics_.current_count -= std::min<uint64_t>(1, statistics_.current_count);
}

// ---- RetryOnExhaustionResource ----

absl::StatusOr<void*> RetryOnExhaustionResource::DoAllocate(size_t bytes, MemoryStream stream) {
  absl::StatusOr<void*> data = upstream_->Allocate(bytes, stream);
  for (int retry = 0; retry < max_retries_ && absl::IsResourceExhausted(data.status()); ++retry) {
    if (!reclaim_ || !reclaim_(bytes, stream)) break;
    data = upstream_->Allocate(bytes, stream);
  }
  return data;
}

void RetryOnExhaustionResource::DoDeallocate(void* data, size_t bytes, MemoryStream stream) {
  upstream_->Deallocate(data, bytes, stream);
}

}  // namespace matrixd
