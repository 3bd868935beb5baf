// The column arithmetic of the GPU's staged det mod p (core/cuda/modular_lu.cc): the matrix
// arrives from the host in pieces of whole rows, each written transposed, so that piece k supplies
// columns [begin, end) of the matrix being factored (det A^T = det A), and the blocked LU goes as
// far as the landed columns allow before the next piece: the panels inside them are factored with
// their trailing updates cut at the last landed column, and each new piece's columns first take
// every earlier panel's deferred update, in panel order. Plain C++ (no CUDA), so that the CPU
// tests check it.
#ifndef MATRIXD_CORE_CUDA_MODULAR_LU_STAGES_H_
#define MATRIXD_CORE_CUDA_MODULAR_LU_STAGES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

namespace matrixd::cuda {

// Rows of A per piece for order n when a piece holds at most `piece_values` values: `requested`
// (0: as many as fit) clamped to [1, min(n, piece_values / n)], at least 1.
// REQUIRES: n >= 1.
inline int64_t StagedPieceRows(int64_t n, int64_t requested, int64_t piece_values) {
  const int64_t most = std::max<int64_t>(1, std::min(n, piece_values / n));
  return requested <= 0 ? most : std::min(requested, most);
}

// The most pieces an automatically sized overlapped upload may take (ModularLuTuning::piece_rows
// = 0): beyond it the deferred updates, a few small launches per earlier panel and piece, cost
// more than the overlap saves. Measured on an H100 (docs/benchmarks.md, 2026-11-27): n = 4096 in
// 4 pieces 17.4 ms overlapped against 18.4 ms after the upload; n = 8192 in 16 pieces 78.6 ms
// against 71.2 ms.
inline constexpr int64_t kMaxOverlappedPieces = 4;

// Whether the overlapped upload pays for order n in pieces of `piece_rows` rows (>= 1).
inline bool OverlapPays(int64_t n, int64_t piece_rows) {
  return (n + piece_rows - 1) / piece_rows <= kMaxOverlappedPieces;
}

// Where the panels of width `panel_width` (the last one narrower) stop when panels [0, factored)
// are done and columns [0, landed) are in place: the end of the last panel wholly inside them.
// REQUIRES: factored is 0 or a panel's end, factored <= landed <= n.
inline int64_t FactorableEnd(int64_t factored, int64_t landed, int64_t n, int64_t panel_width) {
  while (factored < n && factored + std::min(panel_width, n - factored) <= landed) {
    factored += std::min(panel_width, n - factored);
  }
  return factored;
}

// One piece's stage: columns [begin, end) land; panels [0, factored) apply their deferred work
// to them (in order); then panels [factored, factor_end) are factored, their trailing updates
// restricted to columns below `end`.
struct ColumnStage {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t factored = 0;
  int64_t factor_end = 0;
};

// The stages of order n in pieces of `piece_rows` rows (the last one shorter). The last stage
// ends at n with every panel factored. REQUIRES: n >= 1, piece_rows >= 1, panel_width >= 1.
inline std::vector<ColumnStage> PlanColumnStages(int64_t n, int64_t piece_rows,
                                                 int64_t panel_width) {
  std::vector<ColumnStage> stages;
  int64_t factored = 0;
  for (int64_t begin = 0; begin < n; begin += piece_rows) {
    const int64_t end = std::min(n, begin + piece_rows);
    const int64_t factor_end = FactorableEnd(factored, end, n, panel_width);
    stages.push_back(
        ColumnStage{.begin = begin, .end = end, .factored = factored, .factor_end = factor_end});
    factored = factor_end;
  }
  return stages;
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_MODULAR_LU_STAGES_H_
