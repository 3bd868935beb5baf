// The inverse mod p of a factored diagonal block D = L U (L unit lower, U upper triangular, both
// w x w balanced residues, w <= kMaxBlockInverseOrder), the arithmetic of the GPU's modular LU
// (core/cuda/modular_lu.h) that turns its triangular solves into matrix products: the inverses
// L^-1 and U^-1 by row sweeps, then D^-1 = U^-1 L^-1. Every dot product is one exact float64 sum
// per 16-bit piece of its right operand (a residue times a piece is below 2^46, a sum of at most
// 128 of them below 2^53), reduced once at its end, so that a sum costs two FMAs per term. The
// per-entry steps are shared by the device kernel (which splits each sum over threads) and the
// sequential host routine below, which the host tests check against 128-bit integers.
#ifndef MATRIXD_CORE_CUDA_BLOCK_INVERSE_H_
#define MATRIXD_CORE_CUDA_BLOCK_INVERSE_H_

#include <cmath>
#include <cstdint>

#include "core/cuda/balanced_residue.h"

namespace matrixd::cuda {

// Longest dot product PieceSums may hold: 128 terms of a residue (< 2^31) times a piece (<= 2^15)
// plus one residue stay below 2^53.
inline constexpr int kMaxPieceDotLength = 128;
// Largest block the routines below take.
inline constexpr int kMaxBlockInverseOrder = 64;

// The exact partial sums of a dot product, one per piece of its right operand.
struct PieceSums {
  double low = 0.0;
  double high = 0.0;
};

// sums += a b, b split as kPieceBase high + low. REQUIRES: a, b balanced residues mod a p < 2^32.
MATRIXD_HOST_DEVICE inline void AddPieceProduct(PieceSums& sums, double a, double b) {
  const double high = HighPiece(b);
  sums.high = fma(a, high, sums.high);
  sums.low = fma(a, LowPiece(b, high), sums.low);
}

// sum over t = begin, begin + step, ... < end of row[t] column[t * column_stride], in pieces.
MATRIXD_HOST_DEVICE inline PieceSums PieceDot(const double* row, const double* column,
                                              int64_t column_stride, int begin, int end, int step) {
  PieceSums sums;
  for (int t = begin; t < end; t += step) AddPieceProduct(sums, row[t], column[t * column_stride]);
  return sums;
}

// The balanced residue of `extra` + the dot product whose pieces are summed in `sums` (the sums
// of at most kMaxPieceDotLength terms, `extra` balanced).
MATRIXD_HOST_DEVICE inline double CombinePieces(const BalancedModulus& f, const PieceSums& sums,
                                                double extra) {
  // |low| + 2^16 |high| + |extra| < 2^31 (2 + 2^16) once both are reduced: exact.
  return f.Reduce(f.Reduce(sums.low) + kPieceBase * f.Reduce(sums.high) + extra);
}

// The w x w block `inverse` (row stride ld) holds the two triangular inverses while they are
// built: L^-1 strictly below the diagonal (its unit diagonal implied), U^-1 on and above it. The
// factors come in `lu` (row stride ld_lu: L strictly below the diagonal, U on and above it) and
// 1/u_ii in `inverse_diagonal`.

// L^-1[i][j], j < i, once rows j + 1 .. i - 1 of L^-1 are in place:
//   L^-1[i][j] = -(l_ij + sum_{t=j+1}^{i-1} l_it L^-1[t][j]).
// The dot product's terms t = j + 1 + part, step `step` (part < step): the caller adds the parts.
MATRIXD_HOST_DEVICE inline PieceSums LowerInversePart(const double* lu, int64_t ld_lu,
                                                      const double* inverse, int64_t ld, int i,
                                                      int j, int part, int step) {
  return PieceDot(lu + i * ld_lu, inverse + j, ld, j + 1 + part, i, step);
}
MATRIXD_HOST_DEVICE inline double LowerInverseValue(const BalancedModulus& f, const double* lu,
                                                    int64_t ld_lu, int i, int j,
                                                    const PieceSums& sums) {
  return -CombinePieces(f, sums, lu[i * ld_lu + j]);
}

// U^-1[i][j], j > i, once rows i + 1 .. j of U^-1 are in place:
//   U^-1[i][j] = -(1/u_ii) sum_{t=i+1}^{j} u_it U^-1[t][j];  U^-1[i][i] = 1/u_ii.
MATRIXD_HOST_DEVICE inline PieceSums UpperInversePart(const double* lu, int64_t ld_lu,
                                                      const double* inverse, int64_t ld, int i,
                                                      int j, int part, int step) {
  return PieceDot(lu + i * ld_lu, inverse + j, ld, i + 1 + part, j + 1, step);
}
MATRIXD_HOST_DEVICE inline double UpperInverseValue(const BalancedModulus& f,
                                                    double inverse_diagonal_i,
                                                    const PieceSums& sums) {
  return -f.Mul(inverse_diagonal_i, CombinePieces(f, sums, 0.0));
}

// D^-1[i][j] = sum_{t >= max(i, j)} U^-1[i][t] L^-1[t][j] (L^-1[j][j] = 1), from both inverses in
// `inverse` (w x w, stride ld): the term t = j (when i <= j) is U^-1[i][j] itself.
MATRIXD_HOST_DEVICE inline int InverseProductBegin(int i, int j) { return i > j + 1 ? i : j + 1; }
MATRIXD_HOST_DEVICE inline PieceSums InverseProductPart(const double* inverse, int64_t ld, int w,
                                                        int i, int j, int part, int step) {
  return PieceDot(inverse + i * ld, inverse + j, ld, InverseProductBegin(i, j) + part, w, step);
}
MATRIXD_HOST_DEVICE inline double InverseProductValue(const BalancedModulus& f,
                                                      const double* inverse, int64_t ld, int i,
                                                      int j, const PieceSums& sums) {
  return CombinePieces(f, sums, i <= j ? inverse[i * ld + j] : 0.0);
}

// Sequentially (the host's reference, and the tests'): `out` (w x w, stride ld_out) := D^-1 for
// D = L U given as above; `work` (w x w, stride w) is scratch. REQUIRES: 1 <= w <=
// kMaxBlockInverseOrder, u_ii invertible.
inline void InvertFactoredBlock(const BalancedModulus& f, const double* lu, int64_t ld_lu,
                                const double* inverse_diagonal, int w, double* work, double* out,
                                int64_t ld_out) {
  for (int s = 0; s < w; ++s) {
    const int i = s;  // row i of L^-1
    for (int j = 0; j < i; ++j) {
      work[i * w + j] =
          LowerInverseValue(f, lu, ld_lu, i, j, LowerInversePart(lu, ld_lu, work, w, i, j, 0, 1));
    }
    const int k = w - 1 - s;  // row k of U^-1
    work[k * w + k] = inverse_diagonal[k];
    for (int j = k + 1; j < w; ++j) {
      work[k * w + j] = UpperInverseValue(f, inverse_diagonal[k],
                                          UpperInversePart(lu, ld_lu, work, w, k, j, 0, 1));
    }
  }
  for (int i = 0; i < w; ++i) {
    for (int j = 0; j < w; ++j) {
      out[i * ld_out + j] =
          InverseProductValue(f, work, w, i, j, InverseProductPart(work, w, w, i, j, 0, 1));
    }
  }
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BLOCK_INVERSE_H_
