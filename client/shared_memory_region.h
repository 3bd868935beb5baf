// matrixd::SharedMemoryRegion: a POSIX shared-memory object made by this client (shm_open,
// ftruncate, mmap), registered with a matrixd server on the same host
// (RegisterSystemSharedMemory), so that requests name matrices in it instead of carrying them and
// results can be written into it. Destroying it unregisters, unmaps and unlinks the object.
// Movable, not copyable; the Client it registers through must outlive it.
// SharedMatrixView: a matrix placed at an offset of a region, with its bytes mapped here.
#ifndef MATRIXD_CLIENT_SHARED_MEMORY_REGION_H_
#define MATRIXD_CLIENT_SHARED_MEMORY_REGION_H_

#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

class Client;

// rows x cols of dtype, packed row-major little-endian, at `offset` bytes into the region
// registered as `region`. `bytes` are this process's mapping of them: valid while the region
// lives.
struct SharedMatrixView {
  std::string region;
  uint64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::span<std::byte> bytes = {};

  // The reference a request takes in place of an inline matrix (MatrixRef.shared_memory).
  v1::MatrixRef ref() const;
  v1::SharedMemoryRef shared_memory_ref() const;
  // The elements as T (float, double, std::complex<float|double>, int64_t, uint32_t).
  // REQUIRES: T is dtype's element type.
  template <typename T>
  std::span<T> values() const {
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  // Copies `matrix` in. INVALID_ARGUMENT naming both shapes when its shape or dtype differ.
  absl::Status CopyFrom(const v1::Matrix& matrix) const;
  // A copy of the bytes as an inline Matrix message.
  v1::Matrix ToMatrix() const;
};

// Has the server write the result `field` ("c", "lu", "solution", ...) into `target` instead of
// the response (ResultOptions.shared_memory_outputs).
void WriteResultInto(v1::ResultOptions& options, const std::string& field,
                     const SharedMatrixView& target);

struct SharedMemoryRegionOptions {
  // The shm_open name; empty: "/matrixd_<name>_<pid>_<counter>". Must be "/" and a name without
  // further slashes. An existing object of that name is an error (ALREADY_EXISTS).
  std::string key = {};
  // Register with the server in Create; otherwise call Register() later.
  bool register_now = true;
};

class SharedMemoryRegion {
 public:
  // Makes an object of `byte_size` bytes, maps it and (by default) registers it with `client`'s
  // server as `name`. The object's own errors (ALREADY_EXISTS, PERMISSION_DENIED, ...) name the
  // key; the server's registration error is returned as is, after the object is removed.
  static absl::StatusOr<SharedMemoryRegion> Create(Client* client, std::string name,
                                                   uint64_t byte_size,
                                                   SharedMemoryRegionOptions options = {});

  SharedMemoryRegion() = default;
  // Unregisters (errors ignored: the server may have dropped it already), unmaps and unlinks.
  ~SharedMemoryRegion();
  SharedMemoryRegion(SharedMemoryRegion&& other) noexcept;
  SharedMemoryRegion& operator=(SharedMemoryRegion&& other) noexcept;
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  // Registers the whole object under name(). The server's error as is (ALREADY_EXISTS for a
  // name in use); FAILED_PRECONDITION when already registered or empty.
  absl::Status Register();
  // Unregisters it; the mapping and the object stay. NOT_FOUND as the server says it.
  absl::Status Unregister();

  bool registered() const { return registered_; }
  const std::string& name() const { return name_; }
  // The shm_open name; the file is /dev/shm + key on Linux.
  const std::string& key() const { return key_; }
  uint64_t size() const { return size_; }
  std::span<std::byte> bytes() const { return {data_, size_}; }

  // rows x cols of dtype at `offset`. INVALID_ARGUMENT for a bad shape or dtype, an offset that
  // is not a multiple of the element size, or a range past the end.
  absl::StatusOr<SharedMatrixView> View(uint64_t offset, int64_t rows, int64_t cols,
                                        v1::DType dtype) const;
  // A view at the next free offset (aligned to kAlignment) after those handed out before.
  // RESOURCE_EXHAUSTED when the region has no room left; View's errors.
  absl::StatusOr<SharedMatrixView> Allocate(int64_t rows, int64_t cols, v1::DType dtype);
  // Allocate, then copy `matrix` in.
  absl::StatusOr<SharedMatrixView> Put(const v1::Matrix& matrix);

  // Places matrices at multiples of this, so that each starts on a cache line and a page-aligned
  // region gives page-aligned matrices for the larger ones.
  static constexpr uint64_t kAlignment = 256;
  // The bytes Allocate uses for rows x cols of dtype, rounded up to kAlignment (0 for a bad
  // shape or dtype).
  static uint64_t AllocationSize(int64_t rows, int64_t cols, v1::DType dtype);

 private:
  void Close();

  Client* client_ = nullptr;
  std::string name_;
  std::string key_;
  std::byte* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t allocated_ = 0;
  bool registered_ = false;
};

// Reads the results that `options.shared_memory_outputs` sent into `region` back into their
// fields of `response` (a Determinant/Factorize/Solve/MultiplyResponse), as if they had come
// inline. INVALID_ARGUMENT for an output that is not in `region` or not a Matrix field.
absl::Status ReadResultsBack(const SharedMemoryRegion& region, const v1::ResultOptions& options,
                             google::protobuf::Message& response);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_SHARED_MEMORY_REGION_H_
