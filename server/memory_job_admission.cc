#include "server/memory_job_admission.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace matrixd::server {

MemoryJobAdmission::MemoryJobAdmission(std::vector<MemoryAdmission*> devices)
    : devices_(std::move(devices)), admitted_jobs_(devices_.size(), 0) {}

absl::Status MemoryJobAdmission::CheckFits(const JobSpec& spec) {
  if (spec.device_span > 0) {
    if (spec.device_span > static_cast<int>(devices_.size())) {
      return absl::ResourceExhaustedError(absl::StrCat(spec.op, " runs on ", spec.device_span,
                                                       " devices; this server admits to ",
                                                       devices_.size()));
    }
    uint64_t smallest = devices_[0]->capacity();
    for (int i = 1; i < spec.device_span; ++i) {
      smallest = std::min(smallest, devices_[i]->capacity());
    }
    if (spec.device_bytes <= smallest) return absl::OkStatus();
    return absl::ResourceExhaustedError(absl::StrCat(
        spec.op, " needs about ", spec.device_bytes, " bytes of device memory on each of ",
        spec.device_span, " devices; the limit is ", smallest, " bytes (--device_memory_limit)"));
  }
  uint64_t largest = 0;
  for (const MemoryAdmission* device : devices_) largest = std::max(largest, device->capacity());
  if (spec.device_bytes <= largest) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(spec.op, " needs about ", spec.device_bytes,
                                                   " bytes of device memory; the limit is ",
                                                   largest, " bytes (--device_memory_limit)"));
}

bool MemoryJobAdmission::TryAdmit(Job& job) {
  absl::MutexLock lock(&mutex_);
  if (job.device_span() > 0) return TryAdmitSpan(job);
  std::vector<int> order(devices_.size());
  std::iota(order.begin(), order.end(), 0);
  // Fewest admitted jobs first, then most room; stable, so the lower index among equals.
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    if (admitted_jobs_[x] != admitted_jobs_[y]) return admitted_jobs_[x] < admitted_jobs_[y];
    return devices_[x]->capacity() - devices_[x]->reserved() >
           devices_[y]->capacity() - devices_[y]->reserved();
  });
  // A deterministic job runs on its pinned device or waits for it.
  if (const int pinned = job.pinned_device();
      pinned >= 0 && pinned < static_cast<int>(devices_.size())) {
    order.assign(1, pinned);
  }
  for (const int index : order) {
    if (!devices_[index]->TryReserve(job.device_bytes())) continue;
    ++admitted_jobs_[index];
    job.PlaceOnDevice(index);
    return true;
  }
  // Idle resident matrices may be what is in the way: spill them from the first device in order
  // where that would make room, and try there again.
  if (reclaimer_ == nullptr) return false;
  for (const int index : order) {
    MemoryAdmission& device = *devices_[index];
    if (job.device_bytes() > device.capacity()) continue;
    const uint64_t free_bytes = device.capacity() - std::min(device.reserved(), device.capacity());
    if (reclaimer_(index, job.device_bytes() - std::min(free_bytes, job.device_bytes())) == 0) {
      continue;
    }
    if (!device.TryReserve(job.device_bytes())) continue;
    ++admitted_jobs_[index];
    job.PlaceOnDevice(index);
    return true;
  }
  return false;
}

bool MemoryJobAdmission::TryReserveSpan(int span, uint64_t bytes) {
  for (int i = 0; i < span; ++i) {
    if (devices_[i]->TryReserve(bytes)) continue;
    while (i > 0) devices_[--i]->Unreserve(bytes);
    return false;
  }
  return true;
}

bool MemoryJobAdmission::TryAdmitSpan(Job& job) {
  const int span = std::min(job.device_span(), static_cast<int>(devices_.size()));
  const uint64_t bytes = job.device_bytes();
  bool admitted = TryReserveSpan(span, bytes);
  // Idle resident matrices may be in the way: spill them where the room is short, and try again.
  if (!admitted && reclaimer_ != nullptr) {
    bool freed = false;
    for (int i = 0; i < span; ++i) {
      const MemoryAdmission& device = *devices_[i];
      const uint64_t free_bytes =
          device.capacity() - std::min(device.reserved(), device.capacity());
      if (free_bytes < bytes && reclaimer_(i, bytes - free_bytes) > 0) freed = true;
    }
    admitted = freed && TryReserveSpan(span, bytes);
  }
  if (!admitted) return false;
  for (int i = 0; i < span; ++i) ++admitted_jobs_[i];
  job.PlaceOnDevice(0);
  return true;
}

void MemoryJobAdmission::Release(const Job& job) {
  if (job.device_span() > 0) {
    absl::MutexLock lock(&mutex_);
    const int span = std::min(job.device_span(), static_cast<int>(devices_.size()));
    for (int i = 0; i < span; ++i) {
      devices_[i]->Unreserve(job.device_bytes());
      --admitted_jobs_[i];
    }
    return;
  }
  const int index = job.device_index();
  if (index < 0 || index >= static_cast<int>(devices_.size())) return;
  absl::MutexLock lock(&mutex_);
  devices_[index]->Unreserve(job.device_bytes());
  --admitted_jobs_[index];
}

int MemoryJobAdmission::admitted_jobs(int index) const {
  absl::MutexLock lock(&mutex_);
  return admitted_jobs_[index];
}

}  // namespace matrixd::server
