// The host side of a permanent, shared by the CPU walks (core/cpu/permanent.cc) and the CUDA ones
// (core/cuda/permanent.cu) so that both prepare a matrix and assemble a result alike: checking the
// input, scaling the rows, the steps and base of the Gray-code walks, the primes of an exact INT64
// permanent, and the sign and scale of the formulas. Plain C++: nvcc compiles the CUDA backend
// against it.
//
// Ryser's and Glynn's formulas as one walk over k in [0, 2^bits) in Gray-code order: with
// g = GrayCode(k),
//   r_i(k) = base_i + sum over set bits b of g of step_b[i],  term(k) = (-1)^k prod_i r_i(k),
// and per(A) = sign * scale * sum_k term(k), where (-1)^k is the parity of |g|.
//   Ryser (bits = n):     base = 0, step_b = column b,  sign = (-1)^n, scale = 1; g is the set
//                         S of columns and r_i the row sums over S.
//   Glynn (bits = n - 1): base_i = sum_j a_ij (all delta_j = +1), step_b = -2 * column b + 1
//                         (bit b set: delta_{b+1} = -1, and delta_0 stays +1), sign = +1,
//                         scale = 2^-(n-1); prod_k delta_k = (-1)^|g|.
#ifndef MATRIXD_CORE_CPU_PERMANENT_PREPARATION_H_
#define MATRIXD_CORE_CPU_PERMANENT_PREPARATION_H_

#include <complex>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cpu/permanent_arithmetic.h"
#include "core/exact_certificate.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cpu {

// The number of bits of the walk: n for Ryser, n - 1 for Glynn.
int PermanentWalkBits(int n, PermanentMethod method);

// InvalidArgument unless a is a non-empty square matrix of order <= max_order with a floating
// point or INT64 dtype. `name` names the operation in the message ("the permanent").
absl::Status CheckPermanentInput(const MatrixView& a, int max_order, absl::string_view name);

// A result with method_used (Ryser when asked for, else Glynn), precision_used (kExact for INT64,
// kFast for complex, else RealPermanentPrecision), walk_used kDense, stats.bytes_moved and
// stats.flops of one walk. REQUIRES: a passed CheckPermanentInput.
PermanentResult NewPermanentResult(const MatrixView& a, const PermanentOptions& options);

// Sets result->exact to `decimal`, result->value to its nearest double (+-inf past 1.8e308),
// result->certificate, and multiplies stats.flops by the number of primes walked (at least 1).
void SetExactPermanent(std::string decimal, ExactCertificate certificate, PermanentResult* result);

// ---- Floating-point matrices ----

// A matrix widened to T (double or std::complex<double>: FLOAT32 and COMPLEX64 are summed in
// double too) with each row scaled by a power of two so that its largest entry (max(|re|, |im|))
// lies in [1, 2): exact, and it keeps the products of n row sums away from overflow, underflow
// and subnormal slowness whatever the input's scale.
template <typename T>
struct ScaledRows {
  std::vector<T> entries;  // row-major n x n
  int exponent = 0;        // per(input) = 2^exponent * per(entries)
  // A row or a column is zero, so the permanent is 0 (entries and exponent may be partial).
  bool zero_row = false;
};

// InvalidArgument when an entry is NaN or infinite (in a row before any zero row).
// REQUIRES: a passed CheckPermanentInput with a floating-point dtype, complex only for
// T = std::complex<double>. Defined for T = double and std::complex<double>.
template <typename T>
absl::StatusOr<ScaledRows<T>> ScalePermanentRows(const MatrixView& a);

// Whether every row sum that a walk of the row-major n x n matrix a (as ScalePermanentRows left
// it) can reach, and every partial sum on the way, is exact in double: true when each row's
// entries are integer multiples of one power of two q_i with sum_j |a_ij| <= 2^53 q_i (entries
// k / 2^20, integer-valued floats). Then plain double row sums equal the double-double ones.
bool PermanentRowSumsAreExact(std::span<const double> a, int n);

// ---- The sparse walk ----
//
// The sparse walk skips the work of zero entries in the updates and in the products. Its rows
// fall into blocks of kPermanentBlockRows consecutive rows (row padding included) whose products
// it caches, with the suffix products S_q = P_q P_(q+1) ... of the blocks; a step that flips
// column c updates only c's non-zero rows, recomputes only the blocks holding them, and the
// suffix products from the highest such block down: the term is S_0. The ordering
// (OrderForSparseWalk) makes the fastest-flipping columns touch only the first blocks.
//
// Operations per term (FP64 instructions; walk::RealArithmetic, core/cpu/permanent_arithmetic.h):
//                     update a row  multiply a row (dense)  block product  suffix product
//   kDoubleDoubleRows  7             4                       12             4
//   kExactRows         1             3                        8             4
//   kFast              1             1                        3             1
// plus 10 for adding the term to the double-double sum, and for the sparse walk half an
// operation per block and term for testing its bit (an integer instruction). A random
// 30 %-dense n = 36 matrix (mean over 5 seeds): dense walk 72 + 10 = 82 (FAST) and
// 144 + 10 = 154 (EXTENDED, exact row sums); sparse walk 13.5 + 10 + 4.5 = 28 (FAST) and
// 28.8 + 10 + 4.5 = 43 (EXTENDED), of which the products are 5.8 and 21.
inline constexpr int kPermanentBlockRows = 4;

// Permutes the rows and columns of the row-major n x n matrix a (which leaves the permanent
// unchanged) for the sparse walk. Bit b of the Gray code flips every 2^(b+1) terms, so bit 0
// takes the sparsest column and each next bit the column that adds the fewest rows not touched by
// the bits before it (then the sparsest); Glynn's column 0, which never flips, is the densest.
// Rows are ordered by the first bit whose column touches them (rows touched by none last): the
// column of bit b then touches only rows among the first |rows touched by bits 0..b|.
void OrderForSparseWalk(std::vector<double>& a, int n, PermanentMethod method);

// Bit q of entry b: step b of the walk of a has a non-zero entry in rows
// [q kPermanentBlockRows, (q + 1) kPermanentBlockRows). PermanentWalkBits(n, method) entries.
std::vector<uint64_t> PermanentBlockMasks(std::span<const double> a, int n, PermanentMethod method);

// Estimated FP64 operations per term of either walk of a (the table above), each bit weighted by
// how often it flips (2^-(b+1) of the terms).
struct PermanentWalkCost {
  double dense = 0.0;
  double sparse = 0.0;
};
PermanentWalkCost EstimatePermanentWalkCost(std::span<const double> a, int n,
                                            PermanentMethod method,
                                            walk::RealArithmetic arithmetic);

// The head walk (core/cpu/permanent_head_walk.h, the GPU's sparse walk) of the ordered matrix
// a with head_rows head rows: the number of low walk bits (at most walk::kMaxHeadWalkBits) whose
// columns are zero outside rows [0, head_rows), and its estimated FP64 operations per term (the
// table above): head_rows row updates and multiplies and the group sum's 10 per term, and per
// group of 2^head_bits terms the update of all padded_order rows, the tail rows' product, the
// group sum times the tail product (4) and its addition to the sum (10).
struct HeadWalkPlan {
  int head_rows = 0;  // 0: no head size fits (the block walk runs)
  int head_bits = 0;
  double cost = 0.0;
};
HeadWalkPlan PlanHeadWalk(std::span<const double> a, int n, PermanentMethod method,
                          walk::RealArithmetic arithmetic, int head_rows);

// The plan of walk::kHeadWalkRows below the padded order (n rounded up to a multiple of 4) with
// the fewest estimated operations per term; head_rows 0 when none has head_bits >= 1.
HeadWalkPlan ChooseHeadWalk(std::span<const double> a, int n, PermanentMethod method,
                            walk::RealArithmetic arithmetic);

// kAuto's margin on the CPU: the sparse walk's branches and serial suffix products are not in
// the count.
inline constexpr double kSparsePermanentCostRatio = 0.8;

// How kAuto prices the sparse walk against the dense one. kCpu: the CPU's block walk by its count
// (EstimatePermanentWalkCost). kGpu: the GPU's sparse walk (core/cuda/permanent.cu), the head walk
// where a head fits, by its count (ChooseHeadWalk), which its time follows on an H100 (n = 36,
// 30 %-dense, docs/benchmarks.md: counts 0.56-0.57 of the dense walk's took 0.55-0.58 of its time
// under EXTENDED, 0.62 took 0.71 under FAST); else the block walk, by kGpuBlockWalkCountFactor x
// its count (its per-block branches and serial suffix products: counts 0.21 / 0.28 / FAST 0.34
// took 0.66 / 0.90 / 1.29 of the dense walk's time).
enum class SparseWalkCostModel { kCpu, kGpu };
inline constexpr double kGpuBlockWalkCountFactor = 4.0;

// The estimated cost per term of the sparse walk of the ordered matrix a under `model`, in the
// units of EstimatePermanentWalkCost.
double SparseWalkCost(std::span<const double> ordered, int n, PermanentMethod method,
                      walk::RealArithmetic arithmetic, SparseWalkCostModel model);

// The walk of the scaled real matrix a that `asked` resolves to, kAuto by the estimate: kSparse
// when its cost (SparseWalkCost under `model`) is at most max_sparse_cost_ratio of the dense
// walk's once a is ordered. When the answer is kSparse, a is left ordered (OrderForSparseWalk);
// otherwise unchanged.
PermanentWalk PrepareRealPermanentWalk(std::vector<double>& a, int n, PermanentMethod method,
                                       walk::RealArithmetic arithmetic, PermanentWalk asked,
                                       double max_sparse_cost_ratio = kSparsePermanentCostRatio,
                                       SparseWalkCostModel model = SparseWalkCostModel::kCpu);

// The precision a real walk runs at when `asked` for: FAST only for Glynn, whose terms cancel
// little; Ryser's cancel by up to 10 orders of magnitude (7 for a random positive n = 16 matrix),
// so a plain double product would leave ~1e-9 of its result, and Ryser runs EXTENDED.
PermanentPrecision RealPermanentPrecision(PermanentPrecision asked, PermanentMethod method);

// The arithmetic of a real walk of a (as ScalePermanentRows left it).
struct RealWalkArithmetic {
  PermanentPrecision precision = PermanentPrecision::kExtended;  // RealPermanentPrecision
  bool exact_row_sums = false;                                   // PermanentRowSumsAreExact

  // The walk's arithmetic: kFast, else kExactRows where the row sums are exact.
  walk::RealArithmetic arithmetic() const {
    return precision == PermanentPrecision::kFast ? walk::RealArithmetic::kFast
           : exact_row_sums                       ? walk::RealArithmetic::kExactRows
                                                  : walk::RealArithmetic::kDoubleDoubleRows;
  }
};
RealWalkArithmetic ChooseRealWalkArithmetic(std::span<const double> a, int n,
                                            PermanentPrecision precision, PermanentMethod method);

// Writes the walk of the row-major n x n matrix a: step b's n entries to
// steps[b * stride, b * stride + n), the base to base[0, n); nothing else. The real base is in
// double-double, base + base_lo. REQUIRES: steps.size() >= bits * stride, stride >= n,
// base.size() >= n, base_lo.size() >= n.
void FillPermanentWalk(std::span<const double> a, int n, PermanentMethod method, size_t stride,
                       std::span<double> steps, std::span<double> base, std::span<double> base_lo);
void FillPermanentWalk(std::span<const std::complex<double>> a, int n, PermanentMethod method,
                       size_t stride, std::span<std::complex<double>> steps,
                       std::span<std::complex<double>> base);

// The permanent from the sum of its walk's terms: times the formula's sign and scale and
// 2^exponent (the row scaling's).
std::complex<double> FloatPermanentValue(double walk_sum, int n, PermanentMethod method,
                                         int exponent);
std::complex<double> FloatPermanentValue(std::complex<double> walk_sum, int n,
                                         PermanentMethod method, int exponent);

// ---- INT64 matrices: the walk modulo primes ----

// The primes of LargePrimes (core/cpu/multimodular.h) to walk a modulo: enough to recover any
// integer below prod_i sum_j |a_ij|, which bounds |per A|. Empty when a row is zero (per A = 0).
std::vector<uint64_t> PermanentPrimes(std::span<const int64_t> a, int n);

// How an exact permanent reconstructed from `residues` mod `primes` (PermanentPrimes) was
// obtained: the walk's name, the primes, the residues and the bound they cover.
// REQUIRES: a row of a is non-zero everywhere (primes not empty).
ExactCertificate PermanentCertificate(std::span<const int64_t> a, int n, PermanentMethod method,
                                      std::vector<uint64_t> primes, std::vector<uint64_t> residues,
                                      const char* where);

// As FillPermanentWalk, modulo the odd prime p: every value in [0, p).
void FillModularPermanentWalk(std::span<const int64_t> a, int n, PermanentMethod method, uint64_t p,
                              size_t stride, std::span<uint64_t> steps, std::span<uint64_t> base);

// per A mod p from the sum mod p of its walk's terms taken as Montgomery products (R = 2^64),
// each of which carries a factor R^-(n-1): undoes that, then applies the formula's sign and scale.
uint64_t ModularPermanentValue(uint64_t walk_sum, int n, PermanentMethod method, uint64_t p);

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_PERMANENT_PREPARATION_H_
