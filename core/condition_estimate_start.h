// The entries of the block condition estimator's starting vectors and of its random sign vectors
// (core/condition_estimate.h), as plain functions that compile for the host and, under nvcc, for
// CUDA devices, so that every backend starts from the very same block (bit-identical estimates
// whichever backend holds the vectors). No CUDA header needed.
#ifndef MATRIXD_CORE_CONDITION_ESTIMATE_START_H_
#define MATRIXD_CORE_CONDITION_ESTIMATE_START_H_

#include <cstdint>

#if !defined(MATRIXD_HOST_DEVICE)
#if defined(__CUDACC__)
#define MATRIXD_HOST_DEVICE __host__ __device__
#else
#define MATRIXD_HOST_DEVICE
#endif
#endif

namespace matrixd {

// +1 or -1: entry `row` of random sign vector number `draw`, from SplitMix64 (Steele, Lea and
// Flood 2014) of a fixed seed, the draw and the row: no state, so the same on every backend.
MATRIXD_HOST_DEVICE inline double RandomSign(uint64_t draw, uint64_t row) {
  uint64_t z = 0x6d61747269786421ull + draw * 0x9e3779b97f4a7c15ull + row * 0xd1b54a32d192ed03ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (z >> 63) != 0 ? -1.0 : 1.0;
}

// Entry (row, column) of the n x t starting block, every column of 1-norm 1 (to rounding):
// column 0 is e / n (Hager's start), column 1 Higham's vector (-1)^i (1 + i / (n - 1)) divided by
// its 1-norm 3n/2, which catches the matrices on which the sign iteration stalls (LAPACK ?lacn2's
// last step), and columns 2.. random sign vectors / n (Higham and Tisseur's start; draw = column).
// REQUIRES: n >= 2 for column 1.
MATRIXD_HOST_DEVICE inline double StartingEntry(int64_t n, int64_t row, int column) {
  const double nd = static_cast<double>(n);
  if (column == 0) return 1.0 / nd;
  if (column == 1) {
    const double magnitude = (1.0 + static_cast<double>(row) / (nd - 1.0)) / (1.5 * nd);
    return row % 2 == 0 ? magnitude : -magnitude;
  }
  return RandomSign(static_cast<uint64_t>(column), static_cast<uint64_t>(row)) / nd;
}

// Draw numbers of the sign vectors that replace parallel ones start here, after the starting
// block's.
inline constexpr uint64_t kFirstResampleDraw = 1000;

}  // namespace matrixd

#endif  // MATRIXD_CORE_CONDITION_ESTIMATE_START_H_
