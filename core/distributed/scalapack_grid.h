// The ranks of one `mpirun` as a ScaLAPACK process grid, and the jobs they run together. Rank 0
// (the root) holds the operands and the results; it broadcasts a GridJobHeader, scatters the
// operands block-cyclically, every rank computes its part with one of two engines, and the root
// gathers the result. The engines: ScaLAPACK on the CPU (always), and, when every rank has a GPU
// and the grid was given a DeviceGridEngine (device_grid_engine.h), cuBLASMp for products and
// cuSOLVERMp for determinants; the header says which one a job uses, and both share the header,
// scatter and gather here. The other ranks sit in ServeWorker. Every method here is collective: all
// ranks call it in the same order, and on the root from one thread at a time. MPI errors come back
// as UNAVAILABLE (the communicator returns errors instead of aborting); a rank that dies can also
// leave the others blocked, which the caller must bound with a timeout (see
// distributed_backend.h).
#ifndef MATRIXD_CORE_DISTRIBUTED_SCALAPACK_GRID_H_
#define MATRIXD_CORE_DISTRIBUTED_SCALAPACK_GRID_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/distributed/block_cyclic.h"
#include "core/distributed/device_grid_engine.h"
#include "core/matrix.h"
#include "core/scaled_number.h"

namespace matrixd::distributed {

enum class GridCommand : int32_t { kShutdown = 0, kMultiply = 1, kLu = 2 };

// What the root broadcasts before a job: enough for every rank to build its descriptors.
struct GridJobHeader {
  GridCommand command = GridCommand::kShutdown;
  int32_t transpose_a = 0;   // kMultiply
  int32_t transpose_b = 0;   // kMultiply
  int32_t want_factors = 0;  // kLu: gather L\U and the permutation to the root
  // 1: the device engine runs the job (kMultiply without transposes; kLu for the determinant
  // alone: no factors, no right-hand side); 0: ScaLAPACK.
  int32_t on_device = 0;
  // A DType: float32, float64, complex64 or complex128 for kMultiply; float64 or complex128 for
  // kLu (the caller widens float32 and complex64); float64 alone with on_device.
  int32_t dtype = static_cast<int32_t>(DType::kFloat64);
  int64_t a_rows = 0;
  int64_t a_cols = 0;
  int64_t b_rows = 0;  // kMultiply: B; kLu: the right-hand side (0 x 0 for none)
  int64_t b_cols = 0;
  int64_t block = 0;  // of the job's block-cyclic layout; 0: the grid's block()
};

// det = sign * exp(log_abs) as a ScaledNumber (mantissa and binary exponent), which cannot
// overflow: Zero for sign 0 or log_abs -inf. REQUIRES: |log_abs| < 1e18 when finite.
ScaledNumber ScaledFromSignedLog(const SignedLogDeterminant& det);

// An LU of a square float64 or complex128 matrix over the grid, on the root.
struct GridLu {
  ScaledNumber determinant = ScaledNumber::Zero();
  std::optional<int64_t> singular_column;  // first exactly zero pivot, 0-based
  Matrix lu;                               // packed L\U (want_factors)
  std::vector<int64_t> permutation;        // A[permutation[i], :] = (L U)[i, :] (want_factors)
  std::optional<Matrix> solution;          // X with A X = B (a right-hand side was given)
};

class ScalapackGrid {
 public:
  // Collective over MPI_COMM_WORLD (MPI already initialised): a grid of every rank,
  // ChooseGridShape(size), blocks of `block` x `block`. REQUIRES: block >= 1.
  static absl::StatusOr<std::unique_ptr<ScalapackGrid>> Create(int64_t block);
  ~ScalapackGrid();
  ScalapackGrid(const ScalapackGrid&) = delete;
  ScalapackGrid& operator=(const ScalapackGrid&) = delete;

  int rank() const { return rank_; }
  bool is_root() const { return rank_ == 0; }
  GridShape shape() const { return shape_; }
  int64_t block() const { return block_; }

  // Gives every rank's grid the GPU engine. Called on every rank, or on none (see
  // ChooseGridEngine in grid_engine_choice.h); jobs whose header has on_device use it.
  void SetDeviceEngine(std::unique_ptr<DeviceGridEngine> engine) {
    device_engine_ = std::move(engine);
  }
  DeviceGridEngine* device_engine() const { return device_engine_.get(); }

  // The root sends *header; the other ranks receive into it.
  absl::Status BroadcastHeader(GridJobHeader* header);

  // C = op(A) op(B) in header.dtype, by p?gemm (op: transpose, not conjugate) or
  // (header.on_device: float64, no transposes) cuBLASMp. The root passes A and B (host,
  // row-major, of header.dtype) and gets C; the other ranks pass null and get an empty matrix.
  // INVALID_ARGUMENT on every rank for a job the engine does not take.
  absl::StatusOr<Matrix> Multiply(const GridJobHeader& header, const MatrixView* a,
                                  const MatrixView* b);

  // LU with partial pivoting of a square A of header.dtype, float64 or complex128 (pdgetrf,
  // pzgetrf), det(A) from the distributed diagonal and pivots (reduced as mantissa and exponent,
  // so it cannot overflow; complex for complex128), and X with A X = B (p?getrs) when
  // header.b_cols > 0 and A is not singular. Root as Multiply. With header.on_device (float64, no
  // factors, no right-hand side) the LU is cuSOLVERMp's and only the determinant comes back
  // (singular_column unset, lu and permutation empty). INVALID_ARGUMENT on every rank for another
  // dtype.
  absl::StatusOr<GridLu> Lu(const GridJobHeader& header, const MatrixView* a,
                            const MatrixView* rhs);

  // A rank other than the root: runs the jobs the root broadcasts until kShutdown (OK) or an MPI
  // error (UNAVAILABLE).
  absl::Status ServeWorker();

 private:
  ScalapackGrid(int rank, GridShape shape, int64_t block, int context)
      : rank_(rank), shape_(shape), block_(block), context_(context) {}

  BlockCyclicLayout Layout(const GridJobHeader& header, int64_t rows, int64_t cols) const;
  absl::StatusOr<std::vector<int>> Descriptor(const BlockCyclicLayout& layout) const;
  // Scatters the root's `global` (row-major, elements T) into every rank's local part.
  template <typename T>
  absl::StatusOr<std::vector<T>> Scatter(const BlockCyclicLayout& layout, const MatrixView* global);
  // The ScaLAPACK engine's jobs, in the element type of header.dtype.
  template <typename T>
  absl::StatusOr<Matrix> ScalapackMultiply(const GridJobHeader& header, const MatrixView* a,
                                           const MatrixView* b);
  template <typename T>
  absl::StatusOr<GridLu> ScalapackLu(const GridJobHeader& header, const MatrixView* a,
                                     const MatrixView* rhs);
  // The determinant of header.on_device jobs (kLu).
  absl::StatusOr<GridLu> DeviceDeterminant(const GridJobHeader& header,
                                           const BlockCyclicLayout& layout, const MatrixView* a);
  // Gathers every rank's local part into a row-major matrix of T on the root (empty elsewhere).
  template <typename T>
  absl::StatusOr<Matrix> Gather(const BlockCyclicLayout& layout, const std::vector<T>& local);

  int rank_;
  GridShape shape_;
  int64_t block_;
  int context_;
  std::unique_ptr<DeviceGridEngine> device_engine_;  // null: ScaLAPACK only
};

}  // namespace matrixd::distributed

#endif  // MATRIXD_CORE_DISTRIBUTED_SCALAPACK_GRID_H_
