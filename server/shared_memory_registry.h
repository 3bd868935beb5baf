// Client shared-memory regions (RegisterSystemSharedMemory): POSIX shared-memory objects that
// clients on the server's host create, which the server maps once, page-locks through the backend
// and resolves into matrix views for requests, so that operands and results move without gRPC.
// A region whose object was unlinked (its client removed it, or died and its files were cleaned
// up) is dropped the next time the registry looks at it: every call sweeps. A resolved matrix
// keeps its mapping alive, so an unregister never pulls memory from under a running job.
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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/matrix.h"

namespace matrixd::server {

struct SharedMemoryRegionInfo {
  std::string owner = {};
  std::string name;
  std::string key;  // the shm_open name
  uint64_t offset = 0;
  uint64_t byte_size = 0;
  bool pinned = false;
  absl::Time registered;
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

// A resolved reference: a host view of the bytes, writable for results, and the mapping it lives
// in (held until this is destroyed).
struct SharedMemoryMatrix {
  MatrixView view;
  std::byte* writable = nullptr;
  std::shared_ptr<const MappedRegion> region;
};

class SharedMemoryRegistry {
 public:
  // Page-locks a mapped range, or returns null (Backend::PinHostMemory).
  using Pinner = std::function<std::unique_ptr<HostMemoryPin>(const void*, size_t)>;

  explicit SharedMemoryRegistry(Pinner pin, int max_regions = 256);
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
  // Drops `owner`'s region `name`, or every region of `owner` for an empty name; returns how
  // many. NOT_FOUND for an unknown name.
  absl::StatusOr<int> Unregister(absl::string_view name, const std::string& owner = {});
  // Drops every region of every owner; returns how many.
  int UnregisterAll();
  // `owner`'s registered regions, in name order.
  std::vector<SharedMemoryRegionInfo> List(const std::string& owner = {});
  // The matrix `reference` names. NOT_FOUND naming `field` for an unknown region or one whose
  // object was removed; INVALID_ARGUMENT for a shape or dtype that is not a matrix, a range that
  // leaves the region, or an offset that is not a multiple of the element size.
  // Only `owner`'s regions are found.
  absl::StatusOr<SharedMemoryMatrix> Resolve(const SharedMemoryReference& reference,
                                             absl::string_view field,
                                             const std::string& owner = {});

 private:
  // Drops the regions whose object was unlinked.
  void SweepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const Pinner pin_;
  const int max_regions_;
  absl::Mutex mutex_;
  // By (owner, name).
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const MappedRegion>> regions_
      ABSL_GUARDED_BY(mutex_);
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_SHARED_MEMORY_REGISTRY_H_
