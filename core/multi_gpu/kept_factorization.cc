#include "core/multi_gpu/kept_factorization.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/operations.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

// Rows gathered at a time by Read: about 64 MiB of them (at least one).
constexpr uint64_t kReadChunkBytes = uint64_t{64} << 20;

// Solver: CusolverMgLu or CusolverMgCholesky (grid(), factors(), device_bytes(g), Solve(b)).
template <typename Solver>
class KeptFactorization final : public DeviceFactorization {
 public:
  KeptFactorization(std::unique_ptr<Solver> solver, FactorizationKind kind,
                    std::vector<int> device_indices)
      : DeviceFactorization(solver->factors().rows(), solver->factors().dtype(), kind),
        solver_(std::move(solver)) {
    for (size_t g = 0; g < device_indices.size(); ++g) {
      parts_.push_back(
          {.device_index = device_indices[g], .bytes = solver_->device_bytes(static_cast<int>(g))});
    }
  }

  int device_index() const override { return parts_.front().device_index; }

  std::string device() const override {
    std::vector<int> indices;
    for (const DevicePart& part : parts_) indices.push_back(part.device_index);
    return absl::StrCat("distributed over ", parts_.size(),
                        " devices in cusolverMg's column blocks of ", solver_->factors().block(),
                        " (devices ", absl::StrJoin(indices, ", "), ")");
  }

  absl::Status Read(uint64_t offset, std::span<std::byte> out) const override {
    MATRIXD_RETURN_IF_ERROR(CheckRange(offset, out.size()));
    if (out.empty()) return absl::OkStatus();
    const uint64_t row_bytes = static_cast<uint64_t>(cols()) * ElementSize(dtype());
    const uint64_t chunk_rows = std::max<uint64_t>(1, kReadChunkBytes / row_bytes);
    const uint64_t end = offset + out.size();
    std::vector<std::byte> rows;
    absl::MutexLock lock(&mutex_);
    // Whole rows at a time, each chunk's bytes inside [offset, end) copied out.
    for (uint64_t row = offset / row_bytes; row * row_bytes < end; row += chunk_rows) {
      const uint64_t count = std::min(chunk_rows, static_cast<uint64_t>(this->rows()) - row);
      rows.resize(count * row_bytes);
      MATRIXD_RETURN_IF_ERROR(
          solver_->factors().GatherRows(static_cast<int64_t>(row), static_cast<int64_t>(count),
                                        rows.data(), kind() == FactorizationKind::kCholesky));
      const uint64_t begin = std::max(offset, row * row_bytes);
      const uint64_t stop = std::min(end, (row + count) * row_bytes);
      std::memcpy(out.data() + (begin - offset), rows.data() + (begin - row * row_bytes),
                  stop - begin);
    }
    return absl::OkStatus();
  }

  uint64_t device_bytes() const override {
    uint64_t total = 0;
    for (const DevicePart& part : parts_) total += part.bytes;
    return total;
  }

  std::vector<DevicePart> Parts() const override { return parts_; }

  absl::StatusOr<Matrix> Solve(const MatrixView& rhs) override {
    absl::MutexLock lock(&mutex_);
    absl::StatusOr<Matrix> x = SolveLocked(rhs);
    // The workspace getrs (potrs) grew goes, so that only the parts stay held.
    absl::Status released = solver_->grid().ReleaseWorkspace();
    if (!x.ok()) return x;
    if (!released.ok()) return released;
    return x;
  }

 private:
  absl::StatusOr<Matrix> SolveLocked(const MatrixView& rhs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    CusolverMgMatrix& factors = solver_->factors();
    MATRIXD_ASSIGN_OR_RETURN(
        CusolverMgMatrix b,
        CusolverMgMatrix::Create(solver_->grid(), rhs.rows, rhs.cols, rhs.dtype, factors.block()));
    MATRIXD_RETURN_IF_ERROR(b.Scatter(rhs));
    MATRIXD_RETURN_IF_ERROR(solver_->Solve(b));
    Matrix x(rhs.rows, rhs.cols, rhs.dtype);
    MATRIXD_RETURN_IF_ERROR(b.Gather(x.mutable_bytes(), false));
    return x;
  }

  // Serialises Read and Solve: they share the parts' staging, streams and the grid's workspace.
  mutable absl::Mutex mutex_;
  const std::unique_ptr<Solver> solver_;
  std::vector<DevicePart> parts_;
};

template <typename Solver>
absl::StatusOr<std::unique_ptr<DeviceFactorization>> Keep(std::unique_ptr<Solver> solver,
                                                          FactorizationKind kind,
                                                          std::vector<int> device_indices) {
  if (device_indices.size() != solver->grid().devices().size()) {
    return absl::InternalError(absl::StrCat("a factorization kept over ",
                                            solver->grid().devices().size(), " GPUs named ",
                                            device_indices.size(), " device indices"));
  }
  MATRIXD_RETURN_IF_ERROR(solver->grid().ReleaseWorkspace());
  return std::unique_ptr<DeviceFactorization>(
      new KeptFactorization<Solver>(std::move(solver), kind, std::move(device_indices)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceFactorization>> KeepLu(std::unique_ptr<CusolverMgLu> lu,
                                                            std::vector<int> device_indices) {
  return Keep(std::move(lu), FactorizationKind::kLu, std::move(device_indices));
}

absl::StatusOr<std::unique_ptr<DeviceFactorization>> KeepCholesky(
    std::unique_ptr<CusolverMgCholesky> cholesky, std::vector<int> device_indices) {
  return Keep(std::move(cholesky), FactorizationKind::kCholesky, std::move(device_indices));
}

}  // namespace matrixd::multi_gpu
