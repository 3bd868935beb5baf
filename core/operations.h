// Options and results of the four operations, shared by every backend.
#ifndef MATRIXD_CORE_OPERATIONS_H_
#define MATRIXD_CORE_OPERATIONS_H_

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/matrix.h"
#include "core/resident_matrix.h"
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
};

// What a request asks of a backend, without its data: enough for Backend::Supports to answer
// before the job is queued.
enum class Operation { kDeterminant, kFactorize, kMultiply, kPermanent };
struct OperationQuery {
  Operation operation = Operation::kDeterminant;
  DType dtype = DType::kFloat64;
  int64_t rows = 0;  // of the (first) input
  int64_t cols = 0;
};

// ---- Determinant ----
enum class DeterminantMethod { kAuto, kLu, kCondensation };

struct DeterminantOptions {
  DeterminantMethod method = DeterminantMethod::kAuto;
  // 0: over the reals / complex numbers. Otherwise a prime p < 2^62: det over Z/p.
  uint64_t modulus = 0;
};

struct DeterminantResult {
  // det over R or C (modulus 0). Zero when singular.
  ScaledNumber value = ScaledNumber::Zero();
  // det mod p in [0, p) (modulus > 0).
  uint64_t residue = 0;
  // Exact integer determinant in decimal (INT64 input, modulus 0); empty if not computed.
  std::string exact;
  DeterminantMethod method_used = DeterminantMethod::kLu;
  ComputeStats stats;
};

// ---- Factorize ----
enum class FactorizationKind { kLu, kCholesky, kQr };

struct FactorizeOptions {
  FactorizationKind kind = FactorizationKind::kLu;
  // 0: the input is one matrix. > 0: a batch of that many matrices of one shape, stacked
  // vertically (a.rows = batch_count * rows of each; rhs likewise), each factorized on its own.
  // Every field of the result is then stacked or concatenated in the same order.
  int64_t batch_count = 0;
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
  ComputeStats stats;
};

// ---- Multiply ----
struct MultiplyOptions {
  bool transpose_a = false;  // plain transpose, also for complex
  bool transpose_b = false;
  // > 0: treat op(A) and op(B) as grids of block_size x block_size blocks and multiply only
  // pairs of non-zero blocks.
  int64_t block_size = 0;
  bool allow_tf32 = false;
  // Where the caller keeps C (a resident matrix of C's shape and dtype), or null. A backend may
  // write C straight into it (a device backend, when it lives on the device the product runs on)
  // and then leaves MultiplyResult::c empty; otherwise it returns C as usual and the caller
  // stores it.
  ResidentMatrix* output = nullptr;
};

struct MultiplyResult {
  Matrix c;
  int64_t block_products = 0;        // block products that ran (block_size > 0)
  int64_t block_products_total = 0;  // block products of the dense blocked product
  ComputeStats stats;
};

// ---- Permanent ----
enum class PermanentMethod { kAuto, kRyser, kGlynn };

struct PermanentOptions {
  PermanentMethod method = PermanentMethod::kAuto;
};

struct PermanentResult {
  std::complex<double> value;
  // Exact permanent in decimal (INT64 input); empty otherwise.
  std::string exact;
  PermanentMethod method_used = PermanentMethod::kGlynn;
  ComputeStats stats;
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_OPERATIONS_H_
