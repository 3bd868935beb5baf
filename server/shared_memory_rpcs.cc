// The shared-memory RPCs of MatrixService (matrixd.proto): register, unregister and list client
// regions, system and CUDA, in the SharedMemoryRegistry. Each answers at once; mapping and
// page-locking a large region, or opening a CUDA IPC handle, happen in the call.
#include <cstddef>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "server/matrix_service.h"
#include "server/status_conversion.h"

namespace matrixd::server {
namespace {

constexpr char kNoRegistry[] =
    "this server takes no shared-memory regions (it runs without a shared-memory registry)";

void ToProto(const SharedMemoryRegionInfo& info, absl::Time now, v1::SharedMemoryRegion* proto) {
  proto->set_name(info.name);
  proto->set_key(info.key);
  proto->set_offset(info.offset);
  proto->set_byte_size(info.byte_size);
  proto->set_pinned(info.pinned);
  proto->set_age_seconds(absl::ToDoubleSeconds(now - info.registered));
  proto->set_kind(info.kind == SharedMemoryKind::kCuda ? v1::SHARED_MEMORY_KIND_CUDA
                                                       : v1::SHARED_MEMORY_KIND_SYSTEM);
  if (info.kind == SharedMemoryKind::kCuda) proto->set_device_id(info.device_id);
}

// Finishes the call with `status` on the context's default reactor.
grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* MatrixService::RegisterSystemSharedMemory(
    grpc::CallbackServerContext* context, const v1::RegisterSystemSharedMemoryRequest* request,
    v1::RegisterSystemSharedMemoryResponse* response) {
  if (shared_memory_ == nullptr) return Answer(context, absl::UnimplementedError(kNoRegistry));
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) return Answer(context, client.status());
  absl::StatusOr<SharedMemoryRegionInfo> info = shared_memory_->Register(
      request->name(), request->key(), request->offset(), request->byte_size(), (*client)->name,
      (*client)->quota.max_shm_regions);
  if (info.ok()) ToProto(*info, absl::Now(), response->mutable_region());
  return Answer(context, CountRejection(**client, info.status()));
}

grpc::ServerUnaryReactor* MatrixService::UnregisterSystemSharedMemory(
    grpc::CallbackServerContext* context, const v1::UnregisterSystemSharedMemoryRequest* request,
    v1::UnregisterSystemSharedMemoryResponse* response) {
  if (shared_memory_ == nullptr) return Answer(context, absl::UnimplementedError(kNoRegistry));
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) return Answer(context, client.status());
  absl::StatusOr<int> dropped = shared_memory_->Unregister(request->name(), (*client)->name);
  if (dropped.ok()) response->set_unregistered(*dropped);
  return Answer(context, dropped.status());
}

grpc::ServerUnaryReactor* MatrixService::RegisterCudaSharedMemory(
    grpc::CallbackServerContext* context, const v1::RegisterCudaSharedMemoryRequest* request,
    v1::RegisterCudaSharedMemoryResponse* response) {
  if (shared_memory_ == nullptr) return Answer(context, absl::UnimplementedError(kNoRegistry));
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) return Answer(context, client.status());
  const std::string& raw = request->raw_handle();
  absl::StatusOr<SharedMemoryRegionInfo> info = shared_memory_->RegisterCuda(
      request->name(),
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(raw.data()), raw.size()),
      request->device_id(), request->byte_size(), (*client)->name,
      (*client)->quota.max_shm_regions);
  if (info.ok()) ToProto(*info, absl::Now(), response->mutable_region());
  return Answer(context, CountRejection(**client, info.status()));
}

grpc::ServerUnaryReactor* MatrixService::UnregisterCudaSharedMemory(
    grpc::CallbackServerContext* context, const v1::UnregisterCudaSharedMemoryRequest* request,
    v1::UnregisterCudaSharedMemoryResponse* response) {
  if (shared_memory_ == nullptr) return Answer(context, absl::UnimplementedError(kNoRegistry));
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) return Answer(context, client.status());
  absl::StatusOr<int> dropped =
      shared_memory_->Unregister(request->name(), (*client)->name, SharedMemoryKind::kCuda);
  if (dropped.ok()) response->set_unregistered(*dropped);
  return Answer(context, dropped.status());
}

grpc::ServerUnaryReactor* MatrixService::ListSharedMemory(
    grpc::CallbackServerContext* context, const v1::ListSharedMemoryRequest* /*request*/,
    v1::ListSharedMemoryResponse* response) {
  if (shared_memory_ == nullptr) return Answer(context, absl::UnimplementedError(kNoRegistry));
  absl::StatusOr<std::shared_ptr<const ClientIdentity>> client = Identify(*context);
  if (!client.ok()) return Answer(context, client.status());
  const absl::Time now = absl::Now();
  for (const SharedMemoryRegionInfo& info : shared_memory_->List((*client)->name)) {
    ToProto(info, now, response->add_regions());
  }
  return Answer(context, absl::OkStatus());
}

}  // namespace matrixd::server
