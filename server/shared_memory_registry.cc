#include "server/shared_memory_registry.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace matrixd::server {

// A registered region of either kind: what it is (info), and where its bytes are.
class MappedRegion {
 public:
  explicit MappedRegion(SharedMemoryRegionInfo info) : info_(std::move(info)) {}
  virtual ~MappedRegion() = default;
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  const SharedMemoryRegionInfo& info() const { return info_; }
  // True once the region's memory is gone from under it (a system region's object unlinked).
  virtual bool unlinked() const { return false; }
  // A system region's mapped bytes; null for a CUDA region.
  virtual std::byte* host_data() const { return nullptr; }
  // A CUDA region's device memory; null for a system region.
  virtual IpcMemory* device_memory() const { return nullptr; }

 protected:
  SharedMemoryRegionInfo info_;
};

namespace {

// One mapped object: the whole object up to the region's end (mmap wants a page-aligned file
// offset), the region's bytes inside it, the pin, and the descriptor that tells whether the
// object was unlinked.
class SystemRegion final : public MappedRegion {
 public:
  SystemRegion(SharedMemoryRegionInfo info, int fd, std::byte* base, size_t mapped_bytes)
      : MappedRegion(std::move(info)), fd_(fd), base_(base), mapped_bytes_(mapped_bytes) {}
  ~SystemRegion() override {
    pin_.reset();  // unregistered before the pages go
    munmap(base_, mapped_bytes_);
    close(fd_);
  }

  void set_pin(std::unique_ptr<HostMemoryPin> pin) {
    pin_ = std::move(pin);
    info_.pinned = pin_ != nullptr;
  }
  std::byte* host_data() const override { return base_ + info_.offset; }
  // True once the object has no name left (shm_unlink, or its file removed from /dev/shm).
  bool unlinked() const override {
    struct stat status;
    return fstat(fd_, &status) != 0 || status.st_nlink == 0;
  }

 private:
  int fd_;
  std::byte* base_;
  size_t mapped_bytes_;
  std::unique_ptr<HostMemoryPin> pin_;
};

// An opened CUDA IPC handle. It cannot tell when its client frees the allocation: the client
// unregisters first (docs/operations.md).
class CudaRegion final : public MappedRegion {
 public:
  CudaRegion(SharedMemoryRegionInfo info, std::unique_ptr<IpcMemory> memory)
      : MappedRegion(std::move(info)), memory_(std::move(memory)) {}
  IpcMemory* device_memory() const override { return memory_.get(); }

 private:
  const std::unique_ptr<IpcMemory> memory_;
};

const char* KindName(SharedMemoryKind kind) {
  return kind == SharedMemoryKind::kCuda ? "CUDA" : "system";
}

absl::Status CheckKey(const std::string& key) {
  if (key.size() < 2 || key[0] != '/' || key.find('/', 1) != std::string::npos ||
      key.size() > NAME_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("key \"", key,
                     "\" is not a shared-memory object name: want \"/name\", one leading slash "
                     "and no other (the name given to shm_open)"));
  }
  return absl::OkStatus();
}

absl::Status OpenError(const std::string& key, int error) {
  const std::string message =
      absl::StrCat("shared-memory object ", key, ": ", std::strerror(error),
                   error == ENOENT ? " (create it with shm_open before registering; in a "
                                     "container, the server must share /dev/shm with the client)"
                                   : "");
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

}  // namespace

SharedMemoryRegistry::SharedMemoryRegistry(Pinner pin, int max_regions, CudaOpener open_cuda)
    : pin_(std::move(pin)), open_cuda_(std::move(open_cuda)), max_regions_(max_regions) {}

absl::Status SharedMemoryRegistry::CheckRoomLocked(const std::string& name,
                                                   const std::string& owner,
                                                   int owner_max_regions) {
  SweepLocked();
  if (auto it = regions_.find({owner, name}); it != regions_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("region \"", name, "\" is registered already (a ",
                                                 KindName(it->second->info().kind),
                                                 " region); unregister it first or pick another "
                                                 "name"));
  }
  if (static_cast<int>(regions_.size()) >= max_regions_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        max_regions_, " shared-memory regions are registered, the most the server keeps"));
  }
  if (owner_max_regions > 0) {
    int owned = 0;
    for (auto it = regions_.lower_bound({owner, ""});
         it != regions_.end() && it->first.first == owner; ++it) {
      ++owned;
    }
    if (owned >= owner_max_regions) {
      return absl::ResourceExhaustedError(
          absl::StrCat("quota max_shm_regions: ", owner.empty() ? "this client" : owner, " has ",
                       owned, " shared-memory regions registered, its most is ", owner_max_regions,
                       "; unregister one first"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SharedMemoryRegionInfo> SharedMemoryRegistry::Add(
    std::shared_ptr<const MappedRegion> region) {
  const SharedMemoryRegionInfo& info = region->info();
  absl::MutexLock lock(&mutex_);
  if (!regions_.emplace(std::make_pair(info.owner, info.name), region).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("region \"", info.name, "\" was registered meanwhile by another call"));
  }
  return info;
}

SharedMemoryRegistry::~SharedMemoryRegistry() = default;

absl::StatusOr<SharedMemoryRegionInfo> SharedMemoryRegistry::Register(
    const std::string& name, const std::string& key, uint64_t offset, uint64_t byte_size,
    const std::string& owner, int owner_max_regions) {
  if (name.empty()) return absl::InvalidArgumentError("name is empty; name the region");
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (byte_size == 0) return absl::InvalidArgumentError("byte_size is 0; want the region's size");
  {
    absl::MutexLock lock(&mutex_);
    MATRIXD_RETURN_IF_ERROR(CheckRoomLocked(name, owner, owner_max_regions));
  }
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) return OpenError(key, errno);
  struct stat status;
  if (fstat(fd, &status) != 0) {
    const int error = errno;
    close(fd);
    return OpenError(key, error);
  }
  const uint64_t object_bytes = static_cast<uint64_t>(status.st_size);
  if (offset > object_bytes || byte_size > object_bytes - offset) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("offset ", offset, " + byte_size ", byte_size,
                                                   " runs past the end of ", key, " (",
                                                   object_bytes, " bytes)"));
  }
  const size_t mapped_bytes = static_cast<size_t>(offset + byte_size);
  void* base = mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return error == ENOMEM ? absl::ResourceExhaustedError(
                                 absl::StrCat("cannot map ", mapped_bytes, " bytes of ", key))
                           : OpenError(key, error);
  }
  auto region = std::make_shared<SystemRegion>(SharedMemoryRegionInfo{.owner = owner,
                                                                      .name = name,
                                                                      .key = key,
                                                                      .offset = offset,
                                                                      .byte_size = byte_size,
                                                                      .registered = absl::Now()},
                                               fd, static_cast<std::byte*>(base), mapped_bytes);
  // Outside the lock: page-locking gigabytes takes a while.
  if (pin_) region->set_pin(pin_(region->host_data(), byte_size));
  return Add(std::move(region));
}

absl::StatusOr<SharedMemoryRegionInfo> SharedMemoryRegistry::RegisterCuda(
    const std::string& name, std::span<const std::byte> raw_handle, int device_id,
    uint64_t byte_size, const std::string& owner, int owner_max_regions) {
  if (open_cuda_ == nullptr) {
    return absl::UnimplementedError(
        "this server opens no CUDA IPC memory; run matrixd with --backend=cuda");
  }
  if (name.empty()) return absl::InvalidArgumentError("name is empty; name the region");
  if (raw_handle.size() != kCudaIpcHandleBytes) {
    return absl::InvalidArgumentError(absl::StrCat("raw_handle has ", raw_handle.size(),
                                                   " bytes; want the ", kCudaIpcHandleBytes,
                                                   " bytes of a cudaIpcMemHandle_t"));
  }
  if (byte_size == 0) return absl::InvalidArgumentError("byte_size is 0; want the region's size");
  {
    absl::MutexLock lock(&mutex_);
    MATRIXD_RETURN_IF_ERROR(CheckRoomLocked(name, owner, owner_max_regions));
  }
  // Outside the lock: opening a handle maps the allocation into this process.
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<IpcMemory> memory,
                           open_cuda_(raw_handle, device_id, byte_size));
  SharedMemoryRegionInfo info{.owner = owner,
                              .name = name,
                              .byte_size = byte_size,
                              .registered = absl::Now(),
                              .kind = SharedMemoryKind::kCuda,
                              .device_id = device_id,
                              .device = memory->device()};
  return Add(std::make_shared<CudaRegion>(std::move(info), std::move(memory)));
}

int SharedMemoryRegistry::UnregisterAll() {
  std::vector<std::shared_ptr<const MappedRegion>> dropped;  // unmapped outside the lock
  absl::MutexLock lock(&mutex_);
  for (auto& [unused, region] : regions_) dropped.push_back(std::move(region));
  regions_.clear();
  return static_cast<int>(dropped.size());
}

absl::StatusOr<int> SharedMemoryRegistry::Unregister(absl::string_view name,
                                                     const std::string& owner,
                                                     SharedMemoryKind kind) {
  std::vector<std::shared_ptr<const MappedRegion>> dropped;  // unmapped outside the lock
  absl::MutexLock lock(&mutex_);
  SweepLocked();
  if (name.empty()) {
    for (auto it = regions_.lower_bound({owner, ""});
         it != regions_.end() && it->first.first == owner;) {
      if (it->second->info().kind != kind) {
        ++it;
        continue;
      }
      dropped.push_back(std::move(it->second));
      it = regions_.erase(it);
    }
    return static_cast<int>(dropped.size());
  }
  auto it = regions_.find({owner, std::string(name)});
  if (it == regions_.end()) {
    return absl::NotFoundError(absl::StrCat("no shared-memory region \"", name,
                                            "\" is registered (or its object was removed)"));
  }
  if (it->second->info().kind != kind) {
    return absl::NotFoundError(
        absl::StrCat("no ", KindName(kind), " region \"", name, "\" is registered: it is a ",
                     KindName(it->second->info().kind), " region; unregister it with Unregister",
                     kind == SharedMemoryKind::kCuda ? "System" : "Cuda", "SharedMemory"));
  }
  dropped.push_back(std::move(it->second));
  regions_.erase(it);
  return 1;
}

std::vector<SharedMemoryRegionInfo> SharedMemoryRegistry::List(const std::string& owner) {
  absl::MutexLock lock(&mutex_);
  SweepLocked();
  std::vector<SharedMemoryRegionInfo> infos;
  for (auto it = regions_.lower_bound({owner, ""});
       it != regions_.end() && it->first.first == owner; ++it) {
    infos.push_back(it->second->info());
  }
  return infos;
}

absl::StatusOr<SharedMemoryMatrix> SharedMemoryRegistry::Resolve(
    const SharedMemoryReference& reference, absl::string_view field, const std::string& owner) {
  std::shared_ptr<const MappedRegion> region;
  {
    absl::MutexLock lock(&mutex_);
    SweepLocked();
    auto it = regions_.find({owner, reference.region});
    if (it == regions_.end()) {
      return absl::NotFoundError(
          absl::StrCat(field, ".region \"", reference.region,
                       "\" is not registered (never, unregistered, or its object was removed)"));
    }
    region = it->second;
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (reference.rows < 1 || reference.cols < 1 || reference.rows > kMax / reference.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is ", reference.rows, "x", reference.cols, "; want at least 1x1"));
  }
  const uint64_t element = ElementSize(reference.dtype);
  const uint64_t elements = static_cast<uint64_t>(reference.rows * reference.cols);
  const uint64_t size = region->info().byte_size;
  if (reference.offset % element != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".offset ", reference.offset, " is not a multiple of the ", element,
                     "-byte element of ", DTypeName(reference.dtype)));
  }
  if (elements > std::numeric_limits<uint64_t>::max() / element || reference.offset > size ||
      elements * element > size - reference.offset) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", reference.rows, "x", reference.cols, " ",
                     DTypeName(reference.dtype), " at offset ", reference.offset,
                     " runs past the end of region \"", reference.region, "\" (", size, " bytes)"));
  }
  SharedMemoryMatrix matrix;
  if (IpcMemory* memory = region->device_memory(); memory != nullptr) {
    matrix.device =
        memory->MatrixAt(reference.offset, reference.rows, reference.cols, reference.dtype);
    matrix.view = matrix.device->view();
  } else {
    matrix.writable = region->host_data() + reference.offset;
    matrix.view = {.rows = reference.rows,
                   .cols = reference.cols,
                   .dtype = reference.dtype,
                   .data = matrix.writable};
  }
  matrix.region = std::move(region);
  return matrix;
}

void SharedMemoryRegistry::SweepLocked() {
  for (auto it = regions_.begin(); it != regions_.end();) {
    it = it->second->unlinked() ? regions_.erase(it) : std::next(it);
  }
}

}  // namespace matrixd::server
