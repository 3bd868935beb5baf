// LU with partial pivoting (P A = L U) of one n x n floating matrix over several GPUs of this
// process, and its determinant, with one host thread queueing everything (no NCCL: peer copies).
// The LU runs in float64 or complex128 (its element type, chosen at Create): float32 and complex64
// operands are widened as they are copied in, as the single-GPU determinant widens them.
//
// Layout: 1-D block-column cyclic, column-major: block column k (columns [k nb, (k+1) nb)) lives
// on GPU k mod R, all n rows of it, at local columns (k div R) nb (the 1 x R grid of
// cuda::BlockCyclicPart, leading dimension n).
// Algorithm: right-looking, one panel of nb columns per step, with a look-ahead of one panel: at
// step k the owner of panel k+1 first applies panel k to that panel alone (row swaps, triangular
// solve, GEMM) and factors it (cuSOLVER getrf on the tall panel) on a high-priority stream, then
// copies its L part and pivots to the other GPUs, while every GPU applies panel k to the rest of
// its trailing columns (row swaps, cuBLAS TRSM and GEMM of the element type) on a second stream.
// Only the determinant is wanted, so the row swaps are not applied to the columns left of a panel
// (L is left unpermuted; U and the pivots are LAPACK's).
#ifndef MATRIXD_CORE_MULTI_GPU_MULTI_GPU_LU_H_
#define MATRIXD_CORE_MULTI_GPU_MULTI_GPU_LU_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/distributed_resident_matrix.h"
#include "core/matrix.h"
#include "core/multi_gpu/device_allocation.h"
#include "core/multi_gpu/lu_lane.h"
#include "core/multi_gpu/pivot_counts.h"

namespace matrixd::multi_gpu {

class MultiGpuLu {
 public:
  // Plans the LU of an n x n matrix of element type `element` (kFloat64 or kComplex128) over
  // `devices` (CUDA ordinals, distinct) with panels of `block` columns, and allocates each GPU's
  // part, two panel buffers per GPU (R > 1) and the workspaces; enables peer access between the
  // GPUs where they support it (copies go through the host otherwise). INVALID_ARGUMENT for no
  // devices, a repeated device, n < 1 or n >= 2^31, block < 1, another element type;
  // RESOURCE_EXHAUSTED naming the GPU when a part does not fit; INTERNAL for CUDA errors.
  static absl::StatusOr<std::unique_ptr<MultiGpuLu>> Create(std::vector<int> devices, int64_t n,
                                                            int64_t block,
                                                            DType element = DType::kFloat64);
  MultiGpuLu(const MultiGpuLu&) = delete;
  MultiGpuLu& operator=(const MultiGpuLu&) = delete;
  ~MultiGpuLu();

  int gpus() const { return static_cast<int>(lanes_.size()); }
  int64_t n() const { return n_; }
  int64_t block() const { return block_; }
  DType element() const { return complex_ ? DType::kComplex128 : DType::kFloat64; }
  // GPU g's part (the 1 x R grid's part g) and its elements on device devices[g]: doubles, two per
  // element (real, imaginary) when the element type is complex128.
  const cuda::BlockCyclicPart& part(int g) const { return parts_[g]; }
  double* matrix(int g) const { return matrices_[g].get(); }

  // The LU's element type for an operand of `dtype`: complex128 for the complex dtypes, else
  // float64.
  static DType ElementFor(DType dtype) {
    return IsComplex(dtype) ? DType::kComplex128 : DType::kFloat64;
  }

  // Copies the n x n matrix `a` (row-major, in host memory or on any GPU: see operand_source.h) of
  // a floating dtype whose ElementFor is element() onto the GPUs, widened to the element type, and
  // checks its entries there unless `a` is in host memory and `host_entries_checked` says the
  // caller has checked them already. The factorisation is then that of its transpose (row-major
  // rows are column-major columns), whose determinant is the same. INVALID_ARGUMENT for another
  // dtype or shape, and for a NaN or Inf entry (NonFiniteEntryError for "matrix",
  // core/validation.h: a device operand was never read on the host).
  absl::Status Upload(const MatrixView& a, bool host_entries_checked = false);
  // Copies a distributed resident matrix's parts onto the GPUs, each part on its own GPU (no copy
  // between GPUs: its rows are this LU's part of A^T, core/distributed_resident_matrix.h), and
  // checks the entries as Upload does (a float32 or complex64 part is widened on its GPU).
  // FAILED_PRECONDITION naming `layout` unless the matrix is n x n of a dtype Upload takes, in
  // blocks of block() rows over gpus() parts, part g on devices[g] as the caller's
  // `device_of_part` maps backend device indices to CUDA ordinals.
  absl::Status UploadParts(const DistributedResidentMatrix& a,
                           const std::vector<int>& device_of_part);
  // Makes `matrix` from `seed` in place (cuda::LaunchGenerate: the same global matrix as on one
  // GPU). Returns before it completes; Factor waits for it. FAILED_PRECONDITION unless the element
  // type is float64.
  absl::Status Generate(cuda::GeneratedMatrix matrix, uint64_t seed);

  // Factors the matrix in place and returns when every GPU is done. INTERNAL naming the call that
  // failed (CUDA, cuBLAS, cuSOLVER) or a getrf argument error. A zero pivot is no error.
  absl::Status Factor();

  // The determinant of the last factorisation: sign, log|det| and, for complex128, the argument
  // (sign 0 and -inf when singular). OUT_OF_RANGE when a pivot overflowed the double range (and
  // none is zero); INTERNAL when the pivots fail pivot_counts.h's checks.
  absl::StatusOr<DistributedDeterminant> Determinant();

 private:
  MultiGpuLu() = default;

  int Owner(int64_t panel) const { return static_cast<int>(panel % gpus()); }
  int64_t LocalColumn(int64_t panel) const { return (panel / gpus()) * block_; }
  int64_t Width(int64_t panel) const;
  // Whether Upload takes an operand of `dtype` (floating, with ElementFor element()), and those
  // dtypes in words.
  bool TakesDType(DType dtype) const { return IsFloating(dtype) && ElementFor(dtype) == element(); }
  const char* TakenDTypes() const {
    return complex_ ? "complex64 or complex128" : "float32 or float64";
  }
  // Doubles per element: 1, or 2 for complex128.
  int64_t Words() const { return complex_ ? 2 : 1; }
  size_t ElementBytes() const { return static_cast<size_t>(Words()) * sizeof(double); }
  // Element `offset` (in elements) of GPU g's part.
  double* ElementOf(int g, int64_t offset) const { return matrices_[g].get() + offset * Words(); }
  // Panel k's L on GPU g: its own columns on the owner, else the buffer it was copied to; element
  // (global row r, panel column c) at element [r + c n].
  const double* PanelOn(int g, int64_t panel) const;
  // GPU g's local columns from its first block at or after `first_panel` to its last.
  std::array<int64_t, 2> TrailingColumns(int g, int64_t first_panel) const;

  absl::Status WaitForPanel(int g, int64_t panel, cudaStream_t stream);
  // Row swaps, TRSM and GEMM of panel k on `cols` local columns of GPU g from `first_col`.
  absl::Status ApplyPanel(int g, int64_t panel, int64_t first_col, int64_t cols,
                          cublasHandle_t blas, cudaStream_t stream);
  // getrf of panel k on its owner's panel stream, then its copies to the other GPUs.
  absl::Status FactorPanel(int64_t panel);
  absl::Status LookAhead(int64_t panel);       // step `panel`'s work for panel + 1 (its owner)
  absl::Status UpdateTrailing(int64_t panel);  // step `panel`'s trailing update, every GPU
  absl::Status SynchronizeAll();
  // INVALID_ARGUMENT naming the first NaN or Inf of the uploaded matrix (row-major order).
  absl::Status CheckFinite();

  int64_t n_ = 0;
  int64_t block_ = 0;
  int64_t panels_ = 0;
  bool complex_ = false;  // the element type: complex128, else float64
  std::vector<std::unique_ptr<LuLane>> lanes_;
  std::vector<cuda::BlockCyclicPart> parts_;
  // In doubles (Words() per element):
  std::vector<DeviceAllocation<double>> matrices_;
  std::vector<std::array<DeviceAllocation<double>, 2>> panel_copies_;  // by step parity (R > 1)
  std::vector<DeviceAllocation<int>> pivots_;      // n global 1-based pivots on every GPU
  std::vector<DeviceAllocation<int>> infos_;       // getrf's info of each panel the GPU factors
  std::vector<DeviceAllocation<double>> work_;     // getrf's workspace (in doubles)
  std::vector<DeviceAllocation<double>> summary_;  // cuda::LaunchDiagonalSummary's fields
  std::vector<DeviceAllocation<unsigned long long>> first_nonfinite_;  // of the local part
};

// The determinant of the n x n float32, float64, complex64 or complex128 matrix `a` (host or device
// memory) by MultiGpuLu over `devices` with panels of `block` columns, in the ElementFor type
// (`host_entries_checked` as Upload's). Errors as Create, Upload, Factor and Determinant.
absl::StatusOr<DistributedDeterminant> MultiGpuDeterminant(const std::vector<int>& devices,
                                                           const MatrixView& a, int64_t block,
                                                           bool host_entries_checked = false);
// The same of a distributed resident matrix, read in place (UploadParts), with its own blocks;
// `device_of_part` maps the parts' backend device indices to CUDA ordinals. Errors as Create,
// UploadParts, Factor and Determinant.
absl::StatusOr<DistributedDeterminant> MultiGpuDeterminant(const std::vector<int>& devices,
                                                           const DistributedResidentMatrix& a,
                                                           const std::vector<int>& device_of_part);

}  // namespace matrixd::multi_gpu

#endif  // MATRIXD_CORE_MULTI_GPU_MULTI_GPU_LU_H_
