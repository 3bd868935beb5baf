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

namespace matrixd::server {

// One mapped object: the whole object up to the region's end (mmap wants a page-aligned file
// offset), the region's bytes inside it, the pin, and the descriptor that tells whether the
// object was unlinked.
class MappedRegion {
 public:
  MappedRegion(SharedMemoryRegionInfo info, int fd, std::byte* base, size_t mapped_bytes)
      : info_(std::move(info)), fd_(fd), base_(base), mapped_bytes_(mapped_bytes) {}
  ~MappedRegion() {
    pin_.reset();  // unregistered before the pages go
    munmap(base_, mapped_bytes_);
    close(fd_);
  }
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  void set_pin(std::unique_ptr<HostMemoryPin> pin) {
    pin_ = std::move(pin);
    info_.pinned = pin_ != nullptr;
  }
  const SharedMemoryRegionInfo& info() const { return info_; }
  std::byte* data() const { return base_ + info_.offset; }
  // True once the object has no name left (shm_unlink, or its file removed from /dev/shm).
  bool unlinked() const {
    struct stat status;
    return fstat(fd_, &status) != 0 || status.st_nlink == 0;
  }

 private:
  SharedMemoryRegionInfo info_;
  int fd_;
  std::byte* base_;
  size_t mapped_bytes_;
  std::unique_ptr<HostMemoryPin> pin_;
};

namespace {

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

SharedMemoryRegistry::SharedMemoryRegistry(Pinner pin, int max_regions)
    : pin_(std::move(pin)), max_regions_(max_regions) {}

SharedMemoryRegistry::~SharedMemoryRegistry() = default;

absl::StatusOr<SharedMemoryRegionInfo> SharedMemoryRegistry::Register(
    const std::string& name, const std::string& key, uint64_t offset, uint64_t byte_size,
    const std::string& owner, int owner_max_regions) {
  if (name.empty()) return absl::InvalidArgumentError("name is empty; name the region");
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  if (byte_size == 0) return absl::InvalidArgumentError("byte_size is 0; want the region's size");
  {
    absl::MutexLock lock(&mutex_);
    SweepLocked();
    if (regions_.contains({owner, name})) {
      return absl::AlreadyExistsError(absl::StrCat(
          "region \"", name, "\" is registered already; unregister it first or pick another name"));
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
                         owned, " shared-memory regions registered, its most is ",
                         owner_max_regions, "; unregister one first"));
      }
    }
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
  auto region = std::make_shared<MappedRegion>(SharedMemoryRegionInfo{.owner = owner,
                                                                      .name = name,
                                                                      .key = key,
                                                                      .offset = offset,
                                                                      .byte_size = byte_size,
                                                                      .registered = absl::Now()},
                                               fd, static_cast<std::byte*>(base), mapped_bytes);
  // Outside the lock: page-locking gigabytes takes a while.
  if (pin_) region->set_pin(pin_(region->data(), byte_size));
  absl::MutexLock lock(&mutex_);
  if (!regions_.emplace(std::make_pair(owner, name), region).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("region \"", name, "\" was registered meanwhile by another call"));
  }
  return region->info();
}

int SharedMemoryRegistry::UnregisterAll() {
  std::vector<std::shared_ptr<const MappedRegion>> dropped;  // unmapped outside the lock
  absl::MutexLock lock(&mutex_);
  for (auto& [unused, region] : regions_) dropped.push_back(std::move(region));
  regions_.clear();
  return static_cast<int>(dropped.size());
}

absl::StatusOr<int> SharedMemoryRegistry::Unregister(absl::string_view name,
                                                     const std::string& owner) {
  std::vector<std::shared_ptr<const MappedRegion>> dropped;  // unmapped outside the lock
  absl::MutexLock lock(&mutex_);
  SweepLocked();
  if (name.empty()) {
    for (auto it = regions_.lower_bound({owner, ""});
         it != regions_.end() && it->first.first == owner;) {
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
  matrix.writable = region->data() + reference.offset;
  matrix.view = {.rows = reference.rows,
                 .cols = reference.cols,
                 .dtype = reference.dtype,
                 .data = matrix.writable};
  matrix.region = std::move(region);
  return matrix;
}

void SharedMemoryRegistry::SweepLocked() {
  for (auto it = regions_.begin(); it != regions_.end();) {
    it = it->second->unlinked() ? regions_.erase(it) : std::next(it);
  }
}

}  // namespace matrixd::server
