// Client shared-memory regions, of two kinds in one namespace. System regions
// (RegisterSystemSharedMemory): POSIX shared-memory objects that clients on the server's host
// create, which the server maps once, page-locks through the backend and resolves into host matrix
// views. CUDA regions (RegisterCudaSharedMemory): device allocations that clients on the host share
// by CUDA IPC handle, opened once through the backend (Backend::OpenCudaIpc) and resolved into
// device views used in place. Either way operands and results move without gRPC.
// A system region whose object was unlinked (its client removed it, or died and its files were
// cleaned up) is dropped the next time the registry looks at it: every call sweeps. A resolved
// matrix keeps its mapping alive, so an unregister never pulls memory from under a running job.
// Regions belong to the client that registered them (owner; "" is the anonymous client of a
// server without tokens): names are per owner, and another owner's region is NOT_FOUND.
// Thread-safe.
#ifndef MATRIXD_SERVER_SHARED_MEMORY_REGISTRY_H_
#define MATRIXD_SERVER_SHARED_MEMORY_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/ipc_memory.h"
#include "core/matrix.h"

namespace matrixd::server {

enum class SharedMemoryKind { kSystem, kCuda };

struct SharedMemoryRegionInfo {
  std::string owner = {};
  std::string name;
  std::string key = {};  // the shm_open name (system regions)
  uint64_t offset = 0;
  uint64_t byte_size = 0;
  bool pinned = false;
  absl::Time registered;
  SharedMemoryKind kind = SharedMemoryKind::kSystem;
  int device_id = -1;       // CUDA regions: the device as the client numbered it
  std::string device = {};  // CUDA regions: where it lives, as ComputeStats::device
};

// A matrix in a region: rows x cols of dtype at byte `offset`.
struct SharedMemoryReference {
  std::string region;
  uint64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kFloat64;
};

class MappedRegion;

// A resolved reference and the region it lives in (held until this is destroyed). In a system
// region: a host view of the bytes, `writable` for results. In a CUDA region: a device view, and
// `device`, the non-owning device matrix behind it (ResidentMatrix::device_data for results written
// in place, Read/Write for host copies); `writable` is null.
struct SharedMemoryMatrix {
  MatrixView view;
  std::byte* writable = nullptr;
  std::shared_ptr<const MappedRegion> region;
  std::shared_ptr<ResidentMatrix> device;  // after `region`: destroyed before it
};

class SharedMemoryRegistry {
 public:
  // Page-locks a mapped range, or returns null (Backend::PinHostMemory).
  using Pinner = std::function<std::unique_ptr<HostMemoryPin>(const void*, size_t)>;
  // Opens a CUDA IPC handle (Backend::OpenCudaIpc).
  using CudaOpener = std::function<absl::StatusOr<std::unique_ptr<IpcMemory>>(
      std::span<const std::byte> raw_handle, int device_id, uint64_t byte_size)>;

  // Without `open_cuda`, RegisterCuda is UNIMPLEMENTED.
  explicit SharedMemoryRegistry(Pinner pin, int max_regions = 256, CudaOpener open_cuda = nullptr);
  ~SharedMemoryRegistry();

  // Maps [offset, offset + byte_size) of the object `key` read-write and pins it.
  // INVALID_ARGUMENT for an empty name, a key that is not "/name" (one leading slash, no other),
  // a zero size or a range past the object's end; NOT_FOUND when the object does not exist (or
  // cannot be opened: the message says why); ALREADY_EXISTS for a registered name;
  // RESOURCE_EXHAUSTED past max_regions, or (naming the quota max_shm_regions) when `owner`
  // holds `owner_max_regions` regions already (0: no quota).
  absl::StatusOr<SharedMemoryRegionInfo> Register(const std::string& name, const std::string& key,
                                                  uint64_t offset, uint64_t byte_size,
                                                  const std::string& owner = {},
                                                  int owner_max_regions = 0);
  // Opens the CUDA IPC handle `raw_handle` of device memory (Backend::OpenCudaIpc) as the region
  // `name`: its first byte_size bytes. INVALID_ARGUMENT for an empty name, a zero size and
  // OpenCudaIpc's errors (raw_handle not kCudaIpcHandleBytes, an unknown device_id, a handle the
  // driver refuses); UNIMPLEMENTED without a CUDA backend; ALREADY_EXISTS and RESOURCE_EXHAUSTED
  // as Register (one namespace for both kinds).
  absl::StatusOr<SharedMemoryRegionInfo> RegisterCuda(const std::string& name,
                                                      std::span<const std::byte> raw_handle,
                                                      int device_id, uint64_t byte_size,
                                                      const std::string& owner = {},
                                                      int owner_max_regions = 0);
  // Drops `owner`'s region `name` of `kind`, or every region of `owner` of that kind for an empty
  // name; returns how many. NOT_FOUND for an unknown name, or one of the other kind.
  absl::StatusOr<int> Unregister(absl::string_view name, const std::string& owner = {},
                                 SharedMemoryKind kind = SharedMemoryKind::kSystem);
  // Drops every region of every owner; returns how many.
  int UnregisterAll();
  // `owner`'s registered regions of both kinds, in name order.
  std::vector<SharedMemoryRegionInfo> List(const std::string& owner = {});
  // The matrix `reference` names. NOT_FOUND naming `field` for an unknown region or one whose
  // object was removed; INVALID_ARGUMENT for a shape or dtype that is not a matrix, a range that
  // leaves the region, or an offset that is not a multiple of the element size. A reference into
  // a CUDA region gives a device view (see SharedMemoryMatrix).
  // Only `owner`'s regions are found.
  absl::StatusOr<SharedMemoryMatrix> Resolve(const SharedMemoryReference& reference,
                                             absl::string_view field,
                                             const std::string& owner = {});

 private:
  // Drops the regions whose object was unlinked.
  void SweepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // OK when `owner` may add the region `name`: ALREADY_EXISTS or RESOURCE_EXHAUSTED otherwise.
  absl::Status CheckRoomLocked(const std::string& name, const std::string& owner,
                               int owner_max_regions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Adds `region` unless its name was taken meanwhile; its info.
  absl::StatusOr<SharedMemoryRegionInfo> Add(std::shared_ptr<const MappedRegion> region);

  const Pinner pin_;
  const CudaOpener open_cuda_;
  const int max_regions_;
  absl::Mutex mutex_;
  // By (owner, name).
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const MappedRegion>> regions_
      ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_SHARED_MEMORY_REGISTRY_H_
