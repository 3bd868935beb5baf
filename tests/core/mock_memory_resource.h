// Test doubles for MemoryResource (rmm's tests/mock_resource.hpp; leveldb's FaultInjectionTestEnv
// over EnvWrapper): a host resource to stack adaptors on without a GPU, and a wrapper that fails
// allocations on demand and checks that every deallocation matches an allocation.
#ifndef MATRIXD_TESTS_CORE_MOCK_MEMORY_RESOURCE_H_
#define MATRIXD_TESTS_CORE_MOCK_MEMORY_RESOURCE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <new>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/memory_resource.h"

namespace matrixd::testing {

// Host memory from operator new; the stream is ignored.
class HostMemoryResource final : public MemoryResource {
 private:
  absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream) override {
    return ::operator new(bytes);
  }
  void DoDeallocate(void* data, size_t, MemoryStream) override { ::operator delete(data); }
};

// Passes calls to `upstream` unless told to fail: the Nth allocation from now (FailAllocation), or
// every allocation while FailAll(true). A failure returns `failure` (RESOURCE_EXHAUSTED unless set)
// without calling the upstream. Records each live allocation's size and stream; a deallocation
// that matches none is counted in mismatched_deallocations().
class FaultInjectionResource final : public MemoryResource {
 public:
  explicit FaultInjectionResource(MemoryResource* upstream) : upstream_(upstream) {}

  // n >= 1: the n-th allocation from now fails (once).
  void FailAllocation(int n) {
    absl::MutexLock lock(&mutex_);
    countdown_ = n;
  }
  void FailAll(bool fail) {
    absl::MutexLock lock(&mutex_);
    fail_all_ = fail;
  }
  void SetFailure(absl::Status failure) {
    absl::MutexLock lock(&mutex_);
    failure_ = std::move(failure);
  }

  int allocations() const {
    absl::MutexLock lock(&mutex_);
    return allocations_;
  }
  int injected_failures() const {
    absl::MutexLock lock(&mutex_);
    return injected_failures_;
  }
  size_t live_allocations() const {
    absl::MutexLock lock(&mutex_);
    return live_.size();
  }
  int mismatched_deallocations() const {
    absl::MutexLock lock(&mutex_);
    return mismatched_deallocations_;
  }

 private:
  absl::StatusOr<void*> DoAllocate(size_t bytes, MemoryStream stream) override {
    {
      absl::MutexLock lock(&mutex_);
      ++allocations_;
      const bool nth = countdown_ > 0 && --countdown_ == 0;
      if (fail_all_ || nth) {
        ++injected_failures_;
        return failure_;
      }
    }
    absl::StatusOr<void*> data = upstream_->Allocate(bytes, stream);
    if (data.ok()) {
      absl::MutexLock lock(&mutex_);
      live_[*data] = {bytes, stream};
    }
    return data;
  }
  void DoDeallocate(void* data, size_t bytes, MemoryStream stream) override {
    {
      absl::MutexLock lock(&mutex_);
      const auto it = live_.find(data);
      if (it == live_.end() || it->second != std::make_pair(bytes, stream)) {
        ++mismatched_deallocations_;
      }
      if (it != live_.end()) live_.erase(it);
    }
    upstream_->Deallocate(data, bytes, stream);
  }

  MemoryResource* const upstream_;
  mutable absl::Mutex mutex_;
  int countdown_ ABSL_GUARDED_BY(mutex_) = 0;
  bool fail_all_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mutex_) =
      absl::ResourceExhaustedError("injected allocation failure");
  int allocations_ ABSL_GUARDED_BY(mutex_) = 0;
  int injected_failures_ ABSL_GUARDED_BY(mutex_) = 0;
  int mismatched_deallocations_ ABSL_GUARDED_BY(mutex_) = 0;
  std::map<void*, std::pair<size_t, MemoryStream>> live_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::testing

#endif  // MATRIXD_TESTS_CORE_MOCK_MEMORY_RESOURCE_H_
