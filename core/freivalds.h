// Freivalds' check of a product C = op(A) op(B) (m x k times k x n), shared by every backend: the
// random vectors, the tolerance and the verdict. The backends (core/cpu/freivalds.h,
// core/cuda/freivalds.h) compute the thin products where the matrices live.
//
// With X an n x s matrix of random +-1 entries (s = FreivaldsOptions::vectors; exact in every
// precision), the check forms Y = op(B) X, Z = op(A) Y and W = C X, reading each of A, B and C once
// as a thin product, and reports
//
//   discrepancy = max_j ||Z_j - W_j||_2 / (||A||_F ||B||_F ||x_j||_2),   ||x_j||_2 = sqrt(n),
//
// which is scale-invariant (multiplying A or B by any factor leaves it unchanged). In floating
// point, |C - AB| <= gamma_k |A||B| entrywise for any ordering of the k-term sums (Higham, 2nd ed.,
// sec. 3.5), so ||(C - AB) x|| <= gamma_k ||A||_F ||B||_F ||x||; forming Y, Z and W in the same
// precision adds at most gamma_k + 2 gamma_n. The tolerance is therefore
//
//   tolerance = c (2k + 2n) u,   c = 1 for real, 2 for complex dtypes (complex products round
//                                twice per multiply-add),  u = 2^-24 (float32/complex64) or
//                                2^-53 (float64/complex128), 2^-11 for a float32 product on
//                                TF32 tensor cores,
//
// and `passed` is discrepancy <= tolerance. A single wrong entry C[i][j] off by d raises the
// discrepancy by |d| / (||A||_F ||B||_F sqrt(n)) for every vector (|x_j| = 1), so it is caught for
// certain once |d| > tolerance ||A||_F ||B||_F sqrt(n); any error matrix E with ||E x|| above the
// threshold for half of the sign vectors escapes all s of them with probability <= 2^-s.
#ifndef MATRIXD_CORE_FREIVALDS_H_
#define MATRIXD_CORE_FREIVALDS_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "core/matrix.h"

namespace matrixd {

// The number of random vectors checked by default: a generic error escapes with probability
// <= 2^-8, and 8 columns keep the thin products memory-bound on CPUs and GPUs alike.
inline constexpr int kFreivaldsVectors = 8;

struct FreivaldsOptions {
  int vectors = kFreivaldsVectors;  // s >= 1
  uint64_t seed = 0;                // of the sign vectors; the same seed gives the same X
  // The product ran on TF32 tensor cores (float32 with allow_tf32): u = 2^-11 instead of 2^-24.
  bool tf32 = false;
};

// The verdict of one check (see the header comment).
struct ProductCheck {
  double discrepancy = 0.0;  // +inf when Z or W is not finite, or A B = 0 but C X != 0
  double tolerance = 0.0;
  bool passed = false;
  int vectors = 0;
  uint64_t seed = 0;
};

// The dimensions of C = op(A) op(B): op(A) is m x k, op(B) k x n.
struct ProductShape {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
};

// The shape of the product to check. INVALID_ARGUMENT, naming the operand, unless a, b and c share
// one floating dtype and c is op(a) op(b)'s shape, every operand is non-empty and
// options.vectors is in [1, 64].
absl::StatusOr<ProductShape> FreivaldsShape(const MatrixView& a, const MatrixView& b,
                                            const MatrixView& c, bool transpose_a, bool transpose_b,
                                            const FreivaldsOptions& options);

// A fresh seed for FreivaldsOptions (from std::random_device).
uint64_t RandomFreivaldsSeed();

// The seed of every check of a deterministic request (MultiplyOptions::deterministic), reported
// like any other; the digits of pi's fraction in hex.
inline constexpr uint64_t kDeterministicFreivaldsSeed = 0x243F6A8885A308D3;

// kDeterministicFreivaldsSeed when `deterministic`, else RandomFreivaldsSeed().
inline uint64_t FreivaldsSeed(bool deterministic) {
  return deterministic ? kDeterministicFreivaldsSeed : RandomFreivaldsSeed();
}

// X: n x s random +-1 entries of `dtype` (floating), row-major, the same for the same seed.
Matrix FreivaldsVectors(int64_t n, int vectors, uint64_t seed, DType dtype);
// The same X stored vector by vector: a vectors x n row-major matrix whose row j is X's column j.
Matrix FreivaldsVectorsByVector(int64_t n, int vectors, uint64_t seed, DType dtype);

// The tolerance above for a product of inner dimension k and n columns in `dtype`.
double FreivaldsTolerance(DType dtype, int64_t k, int64_t n, bool tf32 = false);

// The verdict from Z = op(A) op(B) X and W = C X (host matrices, m x s, of the product's dtype)
// and the Frobenius norms of A and B. REQUIRES: z and w of one shape and floating dtype.
ProductCheck FreivaldsVerdict(const MatrixView& z, const MatrixView& w, double norm_a,
                              double norm_b, int64_t k, int64_t n, const FreivaldsOptions& options);

// The same verdict from the norms ||Z_j - W_j||_2 (one per vector, NaN where a difference was
// NaN) computed where Z and W are (the CUDA backend's check computes them on the device).
ProductCheck FreivaldsVerdictFromNorms(std::span<const double> difference_norms, double norm_a,
                                       double norm_b, DType dtype, int64_t k, int64_t n,
                                       const FreivaldsOptions& options);

}  // namespace matrixd

#endif  // MATRIXD_CORE_FREIVALDS_H_
