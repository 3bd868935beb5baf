// Options and results of the operations, shared by every backend.
#ifndef MATRIXD_CORE_OPERATIONS_H_
#define MATRIXD_CORE_OPERATIONS_H_

#include <complex>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/accuracy.h"
#include "core/device_factorization.h"
#include "core/exact_certificate.h"
#include "core/freivalds.h"
#include "core/matrix.h"
#include "core/resident_matrix.h"
#include "core/result_destinations.h"
#include "core/scaled_number.h"

namespace matrixd {

// One timed kernel or library call of an operation (CUDA: events on the job's stream around it;
// CPU: the whole operation, named for its method). `bytes` counts the bytes the call reads and
// writes in device (or main) memory by the same model as ComputeStats::bytes_moved.
struct KernelRecord {
  std::string kernel;  // e.g. "cusolver_getrf", "scale_rows", "cublas_gemm"
  double seconds = 0.0;
  uint64_t bytes = 0;
  double flops = 0.0;
};

// What every result carries: where and how long it ran, and how much it moved and computed.
struct ComputeStats {
  std::string backend;   // "cpu" or "cuda"
  std::string device;    // human-readable device name
  double seconds = 0.0;  // compute time, excluding queueing and (de)serialisation
  uint64_t bytes_moved = 0;
  double flops = 0.0;
  // The main kernels of the operation, in order; empty when the backend timed none separately.
  std::vector<KernelRecord> kernels = {};  // "= {}": designated initialisers may leave it out
  // The arithmetic the result was computed in where it differs from the input's dtype (e.g.
  // "tf32" for a float32 product on tensor cores); empty: the input's dtype.
  std::string precision = {};
};

// ---- Determinant ----
enum class DeterminantMethod { kAuto, kLu, kCondensation };

struct DeterminantOptions {
  DeterminantMethod method = DeterminantMethod::kAuto;
  // 0: over the reals / complex numbers. Otherwise a prime p < 2^62: det over Z/p.
  uint64_t modulus = 0;
  // One determinant over several GPUs (FLOAT64 LU): 1 = one device; > 1 = that many GPUs of the
  // server (docs/distributed.md), taken by the CUDA backend built with NCCL
  // (core/multi_gpu/multi_gpu_backend.h); other backends refuse > 1 in Supports.
  int devices = 1;
  // The operand when it is a distributed resident matrix read in place (its view then has null
  // data): only a backend whose DeterminantReadsOnDevice is true with devices > 1 is given one.
  const DistributedResidentMatrix* distributed = nullptr;
  // What the caller has worked out of the matrix already, so that a backend need not read it again
  // (the server's validation sets both; a direct caller may leave them):
  // log2 of Hadamard's bound of an INT64 matrix (core/hadamard_bound.h), which sizes the exact
  // determinant's primes; computed by the backend when absent. REQUIRES: when set, the bound of
  // this very matrix.
  std::optional<double> hadamard_bound_bits = std::nullopt;
  // The matrix, when in host memory, has been found free of NaN and Inf (core/validation.h), so a
  // backend that uploads it need not look again. A device operand is checked whatever this says.
  bool host_entries_checked = false;
};

struct DeterminantResult {
  // det over R or C (modulus 0). Zero when singular.
  ScaledNumber value = ScaledNumber::Zero();
  // det mod p in [0, p) (modulus > 0).
  uint64_t residue = 0;
  // Exact integer determinant in decimal (INT64 input, modulus 0); empty if not computed.
  std::string exact;
  DeterminantMethod method_used = DeterminantMethod::kLu;
  // The condition estimate and error bound of `value` (LU over R/C); empty for the other methods
  // and modulus > 0. With an exact integer determinant the bound is the rounding of `exact`.
  std::optional<Accuracy> accuracy;
  // How `residue` (modulus > 0) or `exact` was obtained; empty when neither was computed.
  std::optional<ExactCertificate> certificate;
  ComputeStats stats;
};

// ---- Factorize ----
enum class FactorizationKind { kLu, kCholesky, kQr };

// The precision an LU factorization runs in for iterative refinement (core/refinement.h).
enum class RefinePrecision {
  kInput,    // the input's dtype; the residual in higher precision
  kFloat32,  // float32 (complex64) factors for float64 (complex128) input
  kTf32,     // GPU only; the CPU backend runs kFloat32
  kFloat16,  // GPU only; the CPU backend runs kFloat32
};

// Iterative refinement of X in an LU solve (docs/accuracy.md, "Iterative refinement").
struct RefineOptions {
  bool enabled = false;
  RefinePrecision factor_precision = RefinePrecision::kInput;
  // Correction steps at most; 0: kDefaultRefineIterations (kInput) or the library's default.
  int max_iterations = 0;
};

struct FactorizeOptions {
  FactorizationKind kind = FactorizationKind::kLu;
  // 0: the input is one matrix. > 0: a batch of that many matrices of one shape, stacked
  // vertically (a.rows = batch_count * rows of each; rhs likewise), each factorized on its own.
  // Every field of the result is then stacked or concatenated in the same order.
  int64_t batch_count = 0;
  // Also estimate the condition of the factorized matrix (FactorizeResult::accuracy): LU the
  // 1-norm condition of A, Cholesky of A, QR of R's leading min(m, n) square (A's first min(m, n)
  // columns). REQUIRES: one matrix (batch_count 0), square for LU (core/validation.h).
  bool estimate_condition = false;
  // REQUIRES (core/validation.h): LU of one square matrix with a right-hand side.
  RefineOptions refine = {};
  // Host memory for the result matrices ("lu", "l", "solution") and index results
  // ("permutation"), where the caller wants them.
  ResultDestinations destinations = {};
  // > 1: LU or Cholesky of one square matrix (any floating dtype) over this many GPUs of the
  // backend (core/multi_gpu/multi_gpu_factorize.h); no batch, refinement or condition estimate.
  int devices = 1;
  // Keep the factorization on the GPU or GPUs it ran on (FactorizeResult::kept) instead of
  // bringing its factor to host memory: over several GPUs (devices > 1), and on one CUDA device
  // an LU or Cholesky of one square matrix (core/cuda/kept_factorization.h). A backend that
  // cannot ignores it.
  bool keep_on_devices = false;
};

// What iterative refinement did (FactorizeOptions::refine).
struct Refinement {
  int iterations = 0;  // correction steps taken
  // ||A X - B||_inf / (||A||_inf ||X||_inf + ||B||_inf) of the returned X, the residual computed
  // in more than the input's precision.
  double backward_error = 0.0;
  bool converged = false;        // backward_error <= threshold
  double threshold = 0.0;        // core/refinement.h's RefineThreshold
  std::string factor_precision;  // what the factorization ran in: "float32", "tf32", ...
  bool fell_back = false;        // the low-precision path failed: refactorized in full precision
};

// In a batch, each Matrix field holds the matrices' results stacked vertically, `permutation`
// the matrices' permutations one after the other (each 0-based within its matrix), and
// singular_column is that of the first singular matrix.
struct FactorizeResult {
  FactorizationKind kind = FactorizationKind::kLu;
  // LU: packed factors (unit lower L strictly below the diagonal, U on and above), rows x cols.
  Matrix lu;
  // LU: 0-based; A[permutation[i], :] = (L U)[i, :].
  std::vector<int64_t> permutation;
  // LU: the permutation was written into options.destinations' "permutation" instead
  // (ResultDestinations::Indices), and `permutation` is empty.
  bool permutation_in_destination = false;
  // LU: first column whose U diagonal entry is exactly zero.
  std::optional<int64_t> singular_column;
  // LU of a batch: each matrix's singular column, -1 when it has none. Empty otherwise.
  std::vector<int64_t> singular_columns;
  // CHOLESKY: lower factor with A = L L^H (upper triangle zero).
  Matrix l;
  // QR: Q (rows x k, orthonormal columns) and R (k x cols, upper triangular), k = min(rows, cols).
  Matrix q;
  Matrix r;
  // X with A X = rhs when a right-hand side was given.
  std::optional<Matrix> solution;
  // With FactorizeOptions::estimate_condition: rcond of the factorized matrix and the relative
  // error bound of a solve with these factors (FactorizationAccuracy in the dtype's roundoff);
  // rcond 0 when a pivot (LU: U[j, j], QR: R[j, j]) is exactly zero. Its kernel record is
  // "condition_estimate".
  std::optional<Accuracy> accuracy;
  // With options.refine. A refinement whose factorization ran in a lower precision than the
  // input's (the mixed path) returns no factors: lu and permutation are empty.
  std::optional<Refinement> refinement;
  // With options.keep_on_devices, where honoured: the factorization left on the GPU or GPUs
  // (core/device_factorization.h); `lu` or `l` is then empty (the permutation still comes back).
  std::unique_ptr<DeviceFactorization> kept;
  ComputeStats stats;
};

// ---- Multiply ----
// How one product is spread over several GPUs (MultiplyOptions::devices > 1).
enum class MultiplyMethod {
  kAuto,      // one device; Cannon when devices > 1
  kCannon,    // Cannon's algorithm over NCCL in this process (core/multi_gpu/cannon_gemm.h)
  kCublasMp,  // NVIDIA cuBLASMp, one process per GPU: the --distributed grid's GPU engine
};

struct MultiplyOptions {
  bool transpose_a = false;  // plain transpose, also for complex
  bool transpose_b = false;
  // > 0: treat op(A) and op(B) as grids of block_size x block_size blocks and multiply only
  // pairs of non-zero blocks.
  int64_t block_size = 0;
  bool allow_tf32 = false;
  // Where the caller keeps C (a resident matrix of C's shape and dtype), or null. A backend may
  // write C straight into it (a device backend, when it lives on the device the product runs on;
  // a product over several GPUs, when it lies on any of them or is a distributed matrix whose
  // parts do) and then leaves MultiplyResult::c empty; otherwise it returns C as usual and the
  // caller stores it.
  ResidentMatrix* output = nullptr;
  // Also run Freivalds' check of C (core/freivalds.h) where C was computed, before it is returned.
  // REQUIRES: a floating dtype.
  bool verify = false;
  // > 1: one product over this many GPUs of the backend (float32, float64, complex64 or
  // complex128; dense, no transposes, no allow_tf32, no verify).
  int devices = 1;
  MultiplyMethod method = MultiplyMethod::kAuto;
  // An operand that is a distributed resident matrix read in place (its view then has null data):
  // only a backend whose MultiplyReadsOnDevice is true for a product over several GPUs
  // (IsMultiDeviceProduct) is given one.
  const DistributedResidentMatrix* distributed_a = nullptr;
  const DistributedResidentMatrix* distributed_b = nullptr;
  // Bit-identical repeats: Freivalds' vectors from kDeterministicFreivaldsSeed (core/freivalds.h).
  // REQUIRES: !allow_tf32.
  bool deterministic = false;
};

// True when `options` asks for one product over several GPUs.
inline bool IsMultiDeviceProduct(const MultiplyOptions& options) {
  return options.devices > 1 || options.method != MultiplyMethod::kAuto;
}

struct MultiplyResult {
  Matrix c;
  int64_t block_products = 0;        // block products that ran (block_size > 0)
  int64_t block_products_total = 0;  // block products of the dense blocked product
  // Freivalds' verdict on C (options.verify); its kernel record is "freivalds".
  std::optional<ProductCheck> check;
  ComputeStats stats;
};

// ---- Permanent ----
enum class PermanentMethod { kAuto, kRyser, kGlynn };

// How a real walk carries its arithmetic (docs/benchmarks.md, "Permanent precision").
//   kExtended: the terms' products in double-double and the sum compensated; the row sums in
//              plain double when every row sum of the walk is exact in double (entries on a common
//              grid, such as k / 2^20), in double-double otherwise. Within ~1e-14 of the exact
//              value on the matrices of the accuracy table.
//   kFast:     row sums and products in plain double, the row sums restarted from compensated
//              sums every 2^12 terms so that they drift by at most 2^12 roundings; the sum of the
//              terms compensated. 2 FP64 operations per row and term (kExtended: 4 or 11);
//              ~1e-14 to ~1e-12 relative on positive matrices. Glynn only: Ryser's terms cancel
//              too much, and Ryser runs kExtended.
//   kExact:    reported only: INT64 matrices are walked modulo primes, exactly.
// Complex walks have one precision (plain double row sums restarted every 2^10 terms, a
// compensated sum) and report kFast.
enum class PermanentPrecision { kExtended, kFast, kExact };

// Which Gray-code walk runs. kSparse updates only the non-zero entries of the column that a step
// flips and recomputes only the products of the row blocks they lie in (rows and columns ordered
// so that the fastest-changing bits touch the fewest rows); kAuto picks it when its estimated
// operations per term are at most the backend's margin of the dense walk's
// (core/cpu/permanent_preparation.h has the estimate and both margins).
enum class PermanentWalk { kAuto, kDense, kSparse };

struct PermanentOptions {
  PermanentMethod method = PermanentMethod::kAuto;
  PermanentPrecision precision = PermanentPrecision::kExtended;  // kExact is not a request
  PermanentWalk walk = PermanentWalk::kAuto;
  // > 1: the walk split into equal shares over this many GPUs of the backend (float64).
  int devices = 1;
};

struct PermanentResult {
  std::complex<double> value;
  // Exact permanent in decimal (INT64 input); empty otherwise.
  std::string exact;
  PermanentMethod method_used = PermanentMethod::kGlynn;
  PermanentPrecision precision_used = PermanentPrecision::kExtended;
  PermanentWalk walk_used = PermanentWalk::kDense;  // never kAuto
  // How `exact` was obtained (INT64 input); empty otherwise.
  std::optional<ExactCertificate> certificate;
  ComputeStats stats;
};

// ---- Capability query (Backend::Supports) ----
enum class Operation { kDeterminant, kFactorize, kMultiply, kPermanent };

// What a call asks of a backend, without its data: the operation, its operands' dtype and shapes,
// and the options that choose its kernels. Enough for Backend::Supports to answer before the job
// is queued; only the options of `operation` are read. core/backend.h makes one from a call's
// arguments (DeterminantQuery, ...).
struct OperationQuery {
  Operation operation = Operation::kDeterminant;
  DType dtype = DType::kFloat64;  // of the (first) operand; the others share it
  int64_t rows = 0;               // of the (first) operand; a batch's matrices stacked
  int64_t cols = 0;
  // The second operand as stored (before any transpose): Multiply's b, Factorize's rhs. 0 x 0
  // when there is none.
  int64_t second_rows = 0;
  int64_t second_cols = 0;
  DeterminantOptions determinant = {};
  FactorizeOptions factorize = {};
  MultiplyOptions multiply = {};
  PermanentOptions permanent = {};
};

// ---- Solve with a kept factorization ----

// op(A) in op(A) X = B.
enum class SolveTranspose { kNone, kTranspose, kConjugateTranspose };

// A factorization of an m x n matrix A as Factorize returned it (core/factorization.h makes one
// from a FactorizeResult), borrowed: host views, or device views of resident matrices on one
// device. The layouts are FactorizeResult's, so a kept factorization is its result's matrices.
// QR is kept as explicit Q and R (not Householder reflectors and tau): Q^H B is one gemm, as
// accurate as applying the reflectors because Q is orthonormal to working precision, and the
// factors are the ones Factorize already returns.
struct FactorizationView {
  FactorizationKind kind = FactorizationKind::kLu;
  // LU: the packed factors (n x n); CHOLESKY: L (n x n); QR: Q (m x k), k = min(m, n).
  MatrixView factor;
  // QR: R (k x n). Unused otherwise.
  MatrixView r;
  // LU: FactorizeResult::permutation as a 1 x n INT64 matrix (0-based). Unused otherwise.
  MatrixView permutation;
  // A itself (m x n), kept for the residual; rows == 0 when it was not kept.
  MatrixView input;
  // The first column whose pivot (U[j, j] of LU, R[j, j] of QR) is exactly zero, or -1: a
  // factorization with one cannot be solved with.
  int64_t singular_column = -1;
  // 0: one matrix. > 0: the factorizations of a batch of that many matrices of one shape (a
  // Factorize with batch_count), every part holding its members' parts stacked vertically (the
  // permutation: each member's, 0-based within it, side by side); B and X are stacked likewise.
  int64_t batch_count = 0;
  // Of a batch: the first member with a zero pivot (at its singular_column), or -1.
  int64_t singular_member = -1;
  // A factorization kept on the GPUs that computed it (core/device_factorization.h): `factor` is
  // then its null-data device view, there is no permutation part, and only a backend that made
  // one solves with it. Null otherwise.
  DeviceFactorization* kept = nullptr;

  // How many matrices: batch_count, or 1.
  int64_t members() const { return batch_count > 0 ? batch_count : 1; }
  // A's shape (of each member of a batch).
  int64_t rows() const { return factor.rows / members(); }
  int64_t cols() const { return kind == FactorizationKind::kQr ? r.cols : factor.cols; }
  DType dtype() const { return factor.dtype; }
};

struct SolveOptions {
  SolveTranspose transpose = SolveTranspose::kNone;  // LU only
  // Also compute ||op(A) X - B||_F / (||A||_F ||X||_F + ||B||_F). REQUIRES: the input was kept.
  bool residual = false;
  // Where the caller keeps X, or null; as MultiplyOptions::output.
  ResidentMatrix* output = nullptr;
};

struct SolveResult {
  Matrix x;  // X (n x B.cols); empty when written into SolveOptions::output
  std::optional<double> residual;
  ComputeStats stats;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_OPERATIONS_H_
