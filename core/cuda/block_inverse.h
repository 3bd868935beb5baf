// The inverse mod p of a factored diagonal block D = L U (L unit lower, U upper triangular, both
// w x w balanced residues, w <= kMaxBlockInverseOrder), the arithmetic of the GPU's modular LU
// (core/cuda/modular_lu.h) that turns its triangular solves into matrix products: the inverses
// L^-1 and U^-1, then D^-1 = U^-1 L^-1. Every dot product is one exact float64 sum per 16-bit
// piece of one operand (a residue times a piece is below 2^46, a sum of at most 128 of them below
// 2^53), reduced once at its end, so that a sum costs two FMAs per term. Two ways to the
// triangular inverses: row sweeps (InvertFactoredBlock, w dependent steps, the host's plain
// reference) and blocks (InvertFactoredBlockBlocked: 8 x 8 diagonal blocks by forward
// substitution, then three levels of two small products each, the leaf kernel's way: few
// dependent steps). The per-entry steps are shared by the device kernel and the sequential host
// routines below, which the host tests check against 128-bit integers.
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

// ---- The blocked triangular inverses ----
//
// Both triangular inverses come from inverting two unit lower triangular matrices: L itself and
// M = Uh^T, Uh = diag(1/u) U the unit upper triangle of U (so U^-1 = Uh^-1 diag(1/u)). One square
// array holds each pair: the factors as F (L strictly below the diagonal, Uh strictly above it,
// so M[i][j] = F[j][i]) and the inverses as I (L^-1 strictly below, M^-1 transposed = Uh^-1
// strictly above); a StrictLowerView reads either triangle as a lower one. Unit diagonals are
// implied and never read. Blocks: the 8 x 8 diagonal blocks by forward substitution (one column
// each, in registers), then for blocks of s = 8, 16, 32: [A 0; B C]^-1 has the lower left block
// -C^-1 (B A^-1), two products of at most s terms per entry.

#if defined(__CUDA_ARCH__)
#define MATRIXD_UNROLL _Pragma("unroll")
#else
#define MATRIXD_UNROLL
#endif

// Order of the diagonal blocks inverted by forward substitution.
inline constexpr int kTriangularBaseOrder = 8;
// Every blocked inverse is taken at this order (a smaller block padded with the identity).
inline constexpr int kBlockedInverseOrder = 64;
static_assert(kBlockedInverseOrder == kMaxBlockInverseOrder);
// Entries of the products' scratch: s^2 per pair of blocks and matrix, 64 s for the two
// matrices at the widest level (s = 32).
inline constexpr int kCouplingWords = kBlockedInverseOrder * kBlockedInverseOrder / 2;

// A unit lower triangular matrix as the strict lower (row_step = ld, col_step = 1) or, transposed,
// the strict upper (row_step = 1, col_step = ld) triangle of a square array.
struct StrictLowerView {
  double* data;
  int64_t row_step;
  int64_t col_step;
  MATRIXD_HOST_DEVICE double& operator()(int i, int j) const {
    return data[i * row_step + j * col_step];
  }
};
MATRIXD_HOST_DEVICE inline StrictLowerView LowerTriangleOf(double* a, int64_t ld) {
  return {a, ld, 1};
}
MATRIXD_HOST_DEVICE inline StrictLowerView UpperTriangleOf(double* a, int64_t ld) {
  return {a, 1, ld};
}

// Column c of the inverse of the unit lower triangular 8 x 8 diagonal block of x at (base, base)
// into y: y_c = 1, y_i = -sum_{c <= t < i} x_it y_t for i > c (rows c + 1 .. 7 written).
MATRIXD_HOST_DEVICE inline void InvertBaseBlockColumn(const BalancedModulus& f, StrictLowerView x,
                                                      StrictLowerView y, int base, int c) {
  // y_t as pieces kPieceBase high + low, in registers (the loops are unrolled on the device).
  double high[kTriangularBaseOrder];
  double low[kTriangularBaseOrder];
  MATRIXD_UNROLL
  for (int t = 0; t < kTriangularBaseOrder; ++t) {
    high[t] = 0.0;
    low[t] = t == c ? 1.0 : 0.0;
  }
  MATRIXD_UNROLL
  for (int i = 1; i < kTriangularBaseOrder; ++i) {
    if (i > c) {
      PieceSums sums;
      MATRIXD_UNROLL
      for (int t = 0; t < i; ++t) {
        // Entries t < c hold zero pieces: their terms add nothing.
        const double a = x(base + i, base + t);
        sums.high = fma(a, high[t], sums.high);
        sums.low = fma(a, low[t], sums.low);
      }
      const double v = -CombinePieces(f, sums, 0.0);
      y(base + i, base + c) = v;
      high[i] = HighPiece(v);
      low[i] = LowPiece(v, high[i]);
    }
  }
}

// For the pair of s x s diagonal blocks at `first` (A) and first + s (C), both inverted in y:
// entry (i, j) of B A^-1, B = x's block at (first + s, first):
//   T[i][j] = x(first + s + i, first + j) + sum_{j < t < s} x(first + s + i, first + t) A^-1[t][j].
MATRIXD_HOST_DEVICE inline double CouplingTimesInverse(const BalancedModulus& f, StrictLowerView x,
                                                       StrictLowerView y, int first, int s, int i,
                                                       int j) {
  PieceSums sums;
  for (int t = j + 1; t < s; ++t) {
    AddPieceProduct(sums, x(first + s + i, first + t), y(first + t, first + j));
  }
  return CombinePieces(f, sums, x(first + s + i, first + j));
}

// Then entry (i, j) of the inverse's lower left block -C^-1 T, T (s x s) row-major in `coupling`:
//   -(T[i][j] + sum_{t < i} C^-1[i][t] T[t][j]).
MATRIXD_HOST_DEVICE inline double LowerLeftOfInverse(const BalancedModulus& f, StrictLowerView y,
                                                     const double* coupling, int first, int s,
                                                     int i, int j) {
  PieceSums sums;
  for (int t = 0; t < i; ++t) {
    AddPieceProduct(sums, y(first + s + i, first + s + t), coupling[t * s + j]);
  }
  return -CombinePieces(f, sums, coupling[i * s + j]);
}

// Entry (i, j) of the 64 x 64 array that holds both factors (F above) of order w <= 64, zero
// outside w x w: l_ij below the diagonal, u_ii on it, u_ij / u_ii above it. `inverse_diagonal`
// holds 1/u_ii.
MATRIXD_HOST_DEVICE inline double UnitUpperEntry(const BalancedModulus& f, double u_ij,
                                                 double inverse_diagonal_i) {
  return f.Mul(u_ij, inverse_diagonal_i);
}

// Once I holds L^-1 below and Uh^-1 above the diagonal: U^-1 = Uh^-1 diag(1/u) in place,
// entry (i, t), t >= i (the diagonal takes 1/u_ii).
MATRIXD_HOST_DEVICE inline double UpperInverseEntry(const BalancedModulus& f, double uh_inverse_it,
                                                    const double* inverse_diagonal, int i, int t) {
  return t == i ? inverse_diagonal[i] : f.Mul(uh_inverse_it, inverse_diagonal[t]);
}

// D^-1[i][j0 + k step] for k < kTile from I holding L^-1 below and U^-1 on and above the
// diagonal (stride ld, order w): D^-1[i][j] = sum_{t >= max(i, j + 1)} U^-1[i][t] L^-1[t][j]
// + (i <= j ? U^-1[i][j] : 0). Each U^-1[i][t] is split into pieces once for the kTile entries.
template <int kTile>
MATRIXD_HOST_DEVICE inline void InverseProductRow(const BalancedModulus& f, const double* inverse,
                                                  int64_t ld, int w, int i, int j0, int step,
                                                  double (&out)[kTile]) {
  PieceSums sums[kTile];
  const int begin = i > j0 + 1 ? i : j0 + 1;
  for (int t = begin; t < w; ++t) {
    const double u = inverse[i * ld + t];
    const double high = HighPiece(u);
    const double low = LowPiece(u, high);
    MATRIXD_UNROLL
    for (int k = 0; k < kTile; ++k) {
      const int j = j0 + k * step;
      if (t > j) {
        const double l = inverse[t * ld + j];
        sums[k].high = fma(l, high, sums[k].high);
        sums[k].low = fma(l, low, sums[k].low);
      }
    }
  }
  MATRIXD_UNROLL
  for (int k = 0; k < kTile; ++k) {
    const int j = j0 + k * step;
    out[k] = CombinePieces(f, sums[k], i <= j ? inverse[i * ld + j] : 0.0);
  }
}

// The levels of the blocked inverse: s = 8, 16, 32 (pairs of s x s blocks).
inline constexpr int kBlockedLevels = 3;
MATRIXD_HOST_DEVICE inline int LevelOrder(int level) { return kTriangularBaseOrder << level; }

// Sequentially, the leaf kernel's steps in its order (the tests' model of the kernel):
// `out` (w x w, stride ld_out) := D^-1 for D = L U given as for InvertFactoredBlock. REQUIRES:
// 1 <= w <= kMaxBlockInverseOrder, u_ii invertible.
inline void InvertFactoredBlockBlocked(const BalancedModulus& f, const double* lu, int64_t ld_lu,
                                       const double* inverse_diagonal, int w, double* out,
                                       int64_t ld_out) {
  constexpr int n = kBlockedInverseOrder;
  double factors[n * n] = {};
  double inverse[n * n] = {};
  double diagonal[n] = {};
  double coupling[kCouplingWords] = {};
  for (int i = 0; i < w; ++i) {
    diagonal[i] = inverse_diagonal[i];
    for (int j = 0; j < w; ++j) {
      const double x = lu[i * ld_lu + j];
      factors[i * n + j] = i < j ? UnitUpperEntry(f, x, inverse_diagonal[i]) : x;
    }
  }
  const StrictLowerView x[2] = {LowerTriangleOf(factors, n), UpperTriangleOf(factors, n)};
  const StrictLowerView y[2] = {LowerTriangleOf(inverse, n), UpperTriangleOf(inverse, n)};
  for (int m = 0; m < 2; ++m) {
    for (int base = 0; base < n; base += kTriangularBaseOrder) {
      for (int c = 0; c < kTriangularBaseOrder; ++c) InvertBaseBlockColumn(f, x[m], y[m], base, c);
    }
  }
  for (int level = 0; level < kBlockedLevels; ++level) {
    const int s = LevelOrder(level);
    for (int m = 0; m < 2; ++m) {
      for (int first = 0; first < n; first += 2 * s) {
        for (int i = 0; i < s; ++i) {
          for (int j = 0; j < s; ++j) {
            coupling[i * s + j] = CouplingTimesInverse(f, x[m], y[m], first, s, i, j);
          }
        }
        for (int i = 0; i < s; ++i) {
          for (int j = 0; j < s; ++j) {
            y[m](first + s + i, first + j) = LowerLeftOfInverse(f, y[m], coupling, first, s, i, j);
          }
        }
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    for (int t = i; t < n; ++t) {
      inverse[i * n + t] = UpperInverseEntry(f, inverse[i * n + t], diagonal, i, t);
    }
  }
  for (int i = 0; i < w; ++i) {
    for (int j = 0; j < w; ++j) {
      double entry[1];
      InverseProductRow<1>(f, inverse, n, w, i, j, 1, entry);
      out[i * ld_out + j] = entry[0];
    }
  }
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BLOCK_INVERSE_H_
