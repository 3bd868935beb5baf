#include "core/cuda/device_streams.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace matrixd::cuda {

DeviceStreams::Lease::~Lease() {
  if (owner_ != nullptr) owner_->Return(context_);
}

absl::StatusOr<std::unique_ptr<DeviceStreams>> DeviceStreams::Create(
    int device, int streams, const DeviceMemoryLimit& memory_limit) {
  if (streams < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("streams per device is ", streams, "; want at least 1"));
  }
  std::vector<std::unique_ptr<DeviceContext>> contexts;
  for (int i = 0; i < streams; ++i) {
    MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<DeviceContext> context,
                             DeviceContext::Create(device, memory_limit));
    contexts.push_back(std::move(context));
  }
  std::string description =
      absl::StrCat(contexts.front()->properties().name, " (device ", device, ")");
  return std::unique_ptr<DeviceStreams>(
      new DeviceStreams(std::move(description), std::move(contexts)));
}

DeviceStreams::DeviceStreams(std::string description,
                             std::vector<std::unique_ptr<DeviceContext>> contexts)
    : description_(std::move(description)), contexts_(std::move(contexts)) {
  for (const auto& context : contexts_) free_.push_back(context.get());
}

DeviceStreams::Lease DeviceStreams::Acquire() {
  absl::MutexLock lock(&mutex_);
  mutex_.Await(absl::Condition(
      +[](std::vector<DeviceContext*>* free) { return !free->empty(); }, &free_));
  DeviceContext* context = free_.back();
  free_.pop_back();
  return Lease(this, context);
}

int DeviceStreams::busy() const {
  absl::MutexLock lock(&mutex_);
  return static_cast<int>(contexts_.size() - free_.size());
}

void DeviceStreams::Return(DeviceContext* context) {
  absl::MutexLock lock(&mutex_);
  free_.push_back(context);
}

}  // namespace matrixd::cuda
