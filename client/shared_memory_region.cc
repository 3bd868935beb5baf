#include "client/shared_memory_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/matrix_values.h"

namespace matrixd {
namespace {

std::atomic<int> next_region{0};

absl::Status ErrnoStatus(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

// A name usable inside a shm_open key: letters, digits, '-' and '_' kept, the rest '_'.
std::string KeyPart(absl::string_view name) {
  std::string part(name);
  for (char& c : part) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    if (!plain) c = '_';
  }
  return part;
}

std::string Shape(int64_t rows, int64_t cols, v1::DType dtype) {
  return absl::StrCat(rows, " x ", cols, " ", DTypeFlagName(dtype));
}

}  // namespace

v1::SharedMemoryRef SharedMatrixView::shared_memory_ref() const {
  v1::SharedMemoryRef ref;
  ref.set_region(region);
  ref.set_offset(offset);
  ref.set_rows(rows);
  ref.set_cols(cols);
  ref.set_dtype(dtype);
  return ref;
}

v1::MatrixRef SharedMatrixView::ref() const {
  v1::MatrixRef ref;
  *ref.mutable_shared_memory() = shared_memory_ref();
  return ref;
}

absl::Status SharedMatrixView::CopyFrom(const v1::Matrix& matrix) const {
  if (absl::Status shape = CheckMatrixShape(matrix); !shape.ok()) return shape;
  if (matrix.rows() != rows || matrix.cols() != cols || matrix.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix is ", Shape(matrix.rows(), matrix.cols(), matrix.dtype()),
        "; the shared-memory view at ", region, "+", offset, " is ", Shape(rows, cols, dtype)));
  }
  if (!matrix.data().empty()) std::memcpy(bytes.data(), matrix.data().data(), bytes.size());
  return absl::OkStatus();
}

v1::Matrix SharedMatrixView::ToMatrix() const {
  v1::Matrix matrix;
  matrix.set_rows(rows);
  matrix.set_cols(cols);
  matrix.set_dtype(dtype);
  matrix.set_data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return matrix;
}

void WriteResultInto(v1::ResultOptions& options, const std::string& field,
                     const SharedMatrixView& target) {
  (*options.mutable_shared_memory_outputs())[field] = target.shared_memory_ref();
}

absl::StatusOr<SharedMemoryRegion> SharedMemoryRegion::Create(Client* client, std::string name,
                                                              uint64_t byte_size,
                                                              SharedMemoryRegionOptions options) {
  if (name.empty()) return absl::InvalidArgumentError("a shared-memory region needs a name");
  if (byte_size == 0 || byte_size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory region ", name, ": byte_size ", byte_size, " is not > 0"));
  }
  std::string key = options.key;
  if (key.empty()) {
    key = absl::StrCat("/matrixd_", KeyPart(name), "_", getpid(), "_", next_region++);
  }
  if (key.size() < 2 || key[0] != '/' || key.find('/', 1) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory key '", key, "' must be '/' and a name without slashes"));
  }
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("shm_open(", key, ")"));
  SharedMemoryRegion region;
  region.client_ = client;
  region.name_ = std::move(name);
  region.key_ = key;
  // From here on the destructor unlinks the object.
  if (ftruncate(fd, static_cast<off_t>(byte_size)) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(key.c_str());
    return ErrnoStatus(error, absl::StrCat("ftruncate(", key, ", ", byte_size, ")"));
  }
  void* data = mmap(nullptr, byte_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) {
    shm_unlink(key.c_str());
    return ErrnoStatus(error, absl::StrCat("mmap(", key, ", ", byte_size, ")"));
  }
  region.data_ = static_cast<std::byte*>(data);
  region.size_ = byte_size;
  if (options.register_now) {
    if (absl::Status registered = region.Register(); !registered.ok()) return registered;
  }
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() { Close(); }

SharedMemoryRegion::SharedMemoryRegion(SharedMemoryRegion&& other) noexcept
    : client_(std::exchange(other.client_, nullptr)),
      name_(std::move(other.name_)),
      key_(std::exchange(other.key_, "")),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      allocated_(std::exchange(other.allocated_, 0)),
      registered_(std::exchange(other.registered_, false)) {}

SharedMemoryRegion& SharedMemoryRegion::operator=(SharedMemoryRegion&& other) noexcept {
  if (this != &other) {
    Close();
    client_ = std::exchange(other.client_, nullptr);
    name_ = std::move(other.name_);
    key_ = std::exchange(other.key_, "");
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    allocated_ = std::exchange(other.allocated_, 0);
    registered_ = std::exchange(other.registered_, false);
  }
  return *this;
}

void SharedMemoryRegion::Close() {
  // Unregister first: the server then unmaps (and unpins) at once instead of at its next sweep.
  if (registered_) static_cast<void>(Unregister());
  if (data_ != nullptr) munmap(data_, size_);
  if (!key_.empty()) shm_unlink(key_.c_str());
  data_ = nullptr;
  size_ = 0;
  key_.clear();
  registered_ = false;
}

absl::Status SharedMemoryRegion::Register() {
  if (data_ == nullptr || client_ == nullptr) {
    return absl::FailedPreconditionError("the shared-memory region is empty (moved from?)");
  }
  if (registered_) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared-memory region ", name_, " is already registered"));
  }
  absl::StatusOr<v1::SharedMemoryRegion> registered =
      client_->RegisterSharedMemory(name_, key_, 0, size_);
  if (!registered.ok()) return registered.status();
  registered_ = true;
  return absl::OkStatus();
}

absl::Status SharedMemoryRegion::Unregister() {
  if (!registered_ || client_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared-memory region ", name_, " is not registered"));
  }
  registered_ = false;
  return client_->UnregisterSharedMemory(name_).status();
}

uint64_t SharedMemoryRegion::AllocationSize(int64_t rows, int64_t cols, v1::DType dtype) {
  const int64_t element = ElementSize(dtype);
  if (rows <= 0 || cols <= 0 || element == 0) return 0;
  const uint64_t bytes =
      static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * static_cast<uint64_t>(element);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

absl::StatusOr<SharedMatrixView> SharedMemoryRegion::View(uint64_t offset, int64_t rows,
                                                          int64_t cols, v1::DType dtype) const {
  const int64_t element = ElementSize(dtype);
  if (element == 0 || rows <= 0 || cols <= 0 ||
      cols > std::numeric_limits<int64_t>::max() / element / rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory view ", Shape(rows, cols, dtype), " is not a matrix"));
  }
  const uint64_t bytes = static_cast<uint64_t>(rows * cols * element);
  if (offset % static_cast<uint64_t>(element) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory offset ", offset, " is not a multiple of the element size ", element));
  }
  if (offset > size_ || bytes > size_ - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat(Shape(rows, cols, dtype), " (", bytes, " bytes) at offset ", offset,
                     " leaves shared-memory region ", name_, " of ", size_, " bytes"));
  }
  return SharedMatrixView{.region = name_,
                          .offset = offset,
                          .rows = rows,
                          .cols = cols,
                          .dtype = dtype,
                          .bytes = std::span<std::byte>(data_ + offset, bytes)};
}

absl::StatusOr<SharedMatrixView> SharedMemoryRegion::Allocate(int64_t rows, int64_t cols,
                                                              v1::DType dtype) {
  const uint64_t padded = AllocationSize(rows, cols, dtype);
  if (padded == 0) return View(allocated_, rows, cols, dtype);  // its error for the shape
  // The last matrix needs no padding after it.
  const uint64_t exact =
      static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * ElementSize(dtype);
  const uint64_t left = allocated_ < size_ ? size_ - allocated_ : 0;
  if (exact > left) {
    return absl::ResourceExhaustedError(absl::StrCat("shared-memory region ", name_, " has ", left,
                                                     " bytes left; ", Shape(rows, cols, dtype),
                                                     " needs ", exact));
  }
  absl::StatusOr<SharedMatrixView> view = View(allocated_, rows, cols, dtype);
  if (view.ok()) allocated_ += padded;
  return view;
}

absl::StatusOr<SharedMatrixView> SharedMemoryRegion::Put(const v1::Matrix& matrix) {
  if (absl::Status shape = CheckMatrixShape(matrix); !shape.ok()) return shape;
  absl::StatusOr<SharedMatrixView> view = Allocate(matrix.rows(), matrix.cols(), matrix.dtype());
  if (!view.ok()) return view.status();
  if (absl::Status copied = view->CopyFrom(matrix); !copied.ok()) return copied;
  return view;
}

absl::Status ReadResultsBack(const SharedMemoryRegion& region, const v1::ResultOptions& options,
                             google::protobuf::Message& response) {
  const google::protobuf::Descriptor& type = *response.GetDescriptor();
  for (const auto& [field_name, ref] : options.shared_memory_outputs()) {
    const google::protobuf::FieldDescriptor* field = type.FindFieldByName(field_name);
    if (field == nullptr || field->is_repeated() ||
        field->message_type() != v1::Matrix::descriptor()) {
      return absl::InvalidArgumentError(
          absl::StrCat(type.name(), " has no matrix field '", field_name, "'"));
    }
    if (ref.region() != region.name()) {
      return absl::InvalidArgumentError(absl::StrCat("result ", field_name, " went to region ",
                                                     ref.region(), ", not ", region.name()));
    }
    absl::StatusOr<SharedMatrixView> view =
        region.View(ref.offset(), ref.rows(), ref.cols(), ref.dtype());
    if (!view.ok()) return view.status();
    v1::Matrix* matrix =
        static_cast<v1::Matrix*>(response.GetReflection()->MutableMessage(&response, field));
    *matrix = view->ToMatrix();
  }
  return absl::OkStatus();
}

}  // namespace matrixd
