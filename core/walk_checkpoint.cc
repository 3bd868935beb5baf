#include "core/walk_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace matrixd {
namespace {

constexpr char kMagic[8] = {'M', 'X', 'D', 'W', 'A', 'L', 'K', '1'};

struct Header {
  char magic[8];
  uint64_t key;
  int64_t chunks;
  uint64_t sum_bytes;
};

uint64_t Fnv1a(uint64_t hash, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

absl::Status FileError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool WriteAll(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

}  // namespace

uint64_t WalkKey(const MatrixView& a, std::span<const int64_t> parameters) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  const int64_t shape[3] = {a.rows, a.cols, static_cast<int64_t>(a.dtype)};
  hash = Fnv1a(hash, shape, sizeof(shape));
  hash = Fnv1a(hash, a.data, static_cast<size_t>(a.size()) * ElementSize(a.dtype));
  return Fnv1a(hash, parameters.data(), parameters.size_bytes());
}

absl::StatusOr<std::unique_ptr<WalkCheckpoint>> WalkCheckpoint::Open(const std::string& dir,
                                                                     uint64_t key, int64_t chunks,
                                                                     size_t sum_bytes) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create --state_dir ", dir, ": ", error.message()));
  }
  const std::string path = absl::StrFormat("%s/walk-%016x.ckpt", dir, key);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return FileError("cannot open", path);
  std::unique_ptr<WalkCheckpoint> checkpoint(new WalkCheckpoint(path, fd, chunks, sum_bytes));

  Header header{};
  const ssize_t header_read = pread(fd, &header, sizeof(header), 0);
  const bool same_walk = header_read == static_cast<ssize_t>(sizeof(header)) &&
                         std::memcmp(header.magic, kMagic, sizeof(kMagic)) == 0 &&
                         header.key == key && header.chunks == chunks &&
                         header.sum_bytes == sum_bytes;
  if (!same_walk) {
    std::memcpy(header.magic, kMagic, sizeof(kMagic));
    header.key = key;
    header.chunks = chunks;
    header.sum_bytes = sum_bytes;
    if (ftruncate(fd, 0) != 0 || !WriteAll(fd, &header, sizeof(header)) || fsync(fd) != 0) {
      return FileError("cannot write", path);
    }
    return checkpoint;
  }
  // The records: chunk index, then its sum. A record cut short by a crash is dropped (and
  // overwritten by the next append).
  const size_t record_bytes = sizeof(int64_t) + sum_bytes;
  std::vector<std::byte> record(record_bytes);
  off_t offset = sizeof(header);
  while (pread(fd, record.data(), record_bytes, offset) == static_cast<ssize_t>(record_bytes)) {
    int64_t chunk = 0;
    std::memcpy(&chunk, record.data(), sizeof(chunk));
    if (chunk < 0 || chunk >= chunks) break;
    if (!checkpoint->done(chunk)) ++checkpoint->resumed_;
    checkpoint->done_[static_cast<size_t>(chunk)] = 1;
    std::memcpy(checkpoint->sums_.data() + static_cast<size_t>(chunk) * sum_bytes,
                record.data() + sizeof(int64_t), sum_bytes);
    offset += static_cast<off_t>(record_bytes);
  }
  if (ftruncate(fd, offset) != 0 || lseek(fd, offset, SEEK_SET) != offset) {
    return FileError("cannot trim", path);
  }
  return checkpoint;
}

WalkCheckpoint::WalkCheckpoint(std::string path, int fd, int64_t chunks, size_t sum_bytes)
    : path_(std::move(path)),
      fd_(fd),
      sum_bytes_(sum_bytes),
      done_(static_cast<size_t>(chunks), 0),
      sums_(static_cast<size_t>(chunks) * sum_bytes) {}

WalkCheckpoint::~WalkCheckpoint() {
  if (fd_ >= 0) {
    fsync(fd_);
    close(fd_);
  }
}

void WalkCheckpoint::Load(int64_t chunk, std::span<std::byte> sum) const {
  std::memcpy(sum.data(), sums_.data() + static_cast<size_t>(chunk) * sum_bytes_, sum_bytes_);
}

absl::Status WalkCheckpoint::Record(int64_t chunk, std::span<const std::byte> sum) {
  std::vector<std::byte> record(sizeof(int64_t) + sum_bytes_);
  std::memcpy(record.data(), &chunk, sizeof(chunk));
  std::memcpy(record.data() + sizeof(chunk), sum.data(), sum_bytes_);
  absl::MutexLock lock(&mutex_);
  if (!WriteAll(fd_, record.data(), record.size())) return FileError("cannot append to", path_);
  const int64_t now = NowNs();
  if (now - last_sync_ns_ > 1'000'000'000) {
    last_sync_ns_ = now;
    if (fdatasync(fd_) != 0) return FileError("cannot sync", path_);
  }
  return absl::OkStatus();
}

void WalkCheckpoint::Remove() { unlink(path_.c_str()); }

}  // namespace matrixd
