#include "core/cpu/modular_lu.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/cpu/block_sparse.h"
#include "core/cpu/modular_fields.h"
#include "core/cpu/modular_gemm.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cpu {
namespace {

// Panels this narrow are eliminated column by column; wider ones split in two halves, so that all
// but O(n^2 kLeafWidth) of the work is in modular products. 8 was as fast as 4 and faster than 16
// and 32 at n = 1024 and 2048.
constexpr int64_t kLeafWidth = 8;
// The triangular solve for U12 runs on blocks of this many columns, one thread each.
constexpr int64_t kSolveColumns = 256;

int64_t CeilDiv(int64_t x, int64_t d) { return x / d + (x % d != 0 ? 1 : 0); }

// PA = LU in place over the field, L unit lower triangular; only det(A) is kept.
template <typename Field>
class BlockedLu {
 public:
  using Value = typename Field::Value;

  BlockedLu(const Field& field, std::vector<uint64_t> residues, int64_t n, int threads,
            ComputeStats* stats)
      : field_(field), n_(n), threads_(threads), stats_(stats) {
    if constexpr (std::is_same_v<Value, uint64_t>) {
      a_ = std::move(residues);  // residues are already the uint64 field's form
    } else {
      a_.resize(residues.size());
      for (size_t i = 0; i < residues.size(); ++i) a_[i] = field.FromResidue(residues[i]);
    }
  }

  // Factors columns [c, c + width) of rows [c, n), swapping whole rows to bring a non-zero pivot
  // to each diagonal entry. Returns false, with the matrix left part-way, when a column has none
  // (det = 0).
  bool FactorColumns(int64_t c, int64_t width) {
    if (width <= kLeafWidth) return EliminateColumns(c, width);
    const int64_t half = width / 2;
    if (!FactorColumns(c, half)) return false;
    Update(c, half, c + half, width - half);
    return FactorColumns(c + half, width - half);
  }

  // With columns [c, c + h) factored, turns rows [c, c + h) of columns [j, j + cols) into U12 =
  // L11^-1 A12 and subtracts L21 U12 from the rows below.
  void Update(int64_t c, int64_t h, int64_t j, int64_t cols) {
    if (cols == 0) return;
    // Row i of U12 is row i of A12 less L11[i, 0:i) times the rows above it: a product of one
    // row, in column blocks that are independent of each other.
    const int64_t blocks = CeilDiv(cols, kSolveColumns);
    RunParallel(blocks, std::min<int64_t>(threads_, blocks), nullptr, [&](int64_t block) {
      const int64_t j0 = j + block * kSolveColumns;
      const int64_t width = std::min(kSolveColumns, j + cols - j0);
      for (int64_t i = 1; i < h; ++i) {
        Subtract(
            {.m = 1, .n = width, .k = i, .a = at(c + i, c), .b = at(c, j0), .c = at(c + i, j0)}, 1);
      }
    });
    const int64_t below = n_ - c - h;
    Subtract({.m = below, .n = cols, .k = h, .a = at(c + h, c), .b = at(c, j), .c = at(c + h, j)},
             threads_);
    stats_->flops +=
        static_cast<double>(cols) * static_cast<double>(h) * static_cast<double>(h - 1 + 2 * below);
  }

  uint64_t det() const { return det_; }

 private:
  Value* at(int64_t row, int64_t col) { return a_.data() + row * n_ + col; }

  // C -= A B with every leading dimension n.
  void Subtract(ModularProduct<Value> product, int threads) {
    product.lda = product.ldb = product.ldc = n_;
    SubtractProduct(field_, product, threads);
  }

  bool EliminateColumns(int64_t c, int64_t width) {
    const uint64_t p = field_.modulus();
    for (int64_t k = c; k < c + width; ++k) {
      // Over a field any non-zero pivot is exact: the first one found needs no magnitude test.
      int64_t pivot_row = k;
      while (pivot_row < n_ && field_.IsZero(*at(pivot_row, k))) ++pivot_row;
      if (pivot_row == n_) return false;
      if (pivot_row != k) {
        std::swap_ranges(at(k, 0), at(k, 0) + n_, at(pivot_row, 0));
        det_ = p - det_;  // det_ is a product of units, never 0
      }
      det_ = MulMod(det_, field_.ToResidue(*at(k, k)), p);
      const Value inverse = field_.Inverse(*at(k, k));
      const int64_t right = c + width - k - 1;
      for (int64_t i = k + 1; i < n_; ++i) {
        Value& multiplier = *at(i, k);
        if (field_.IsZero(multiplier)) continue;
        multiplier = field_.Multiply(multiplier, inverse);
        field_.SubtractMultiple(multiplier, at(k, k + 1), at(i, k + 1), right);
      }
      stats_->flops += 2.0 * static_cast<double>(n_ - k - 1) * static_cast<double>(right);
    }
    return true;
  }

  const Field& field_;
  int64_t n_;
  int threads_;
  ComputeStats* stats_;
  std::vector<Value> a_;
  uint64_t det_ = 1;
};

template <typename Field>
absl::StatusOr<uint64_t> FactorInPanels(const Field& field, std::vector<uint64_t> a, int64_t n,
                                        const ModularLuOptions& options,
                                        const ProgressRange& progress, ComputeStats* stats) {
  BlockedLu<Field> lu(field, std::move(a), n, options.threads, stats);
  for (int64_t k = 0; k < n; k += options.panel_width) {
    if (progress.cancelled()) return absl::CancelledError("determinant cancelled");
    const int64_t width = std::min(options.panel_width, n - k);
    if (!lu.FactorColumns(k, width)) break;
    const int64_t rest = n - k - width;
    lu.Update(k, width, k + width, rest);
    // The panel is read and written once, the trailing block once per panel.
    stats->bytes_moved += sizeof(typename Field::Value) *
                          static_cast<uint64_t>(2 * (n - k) * width + 2 * rest * rest);
    progress.Report(1.0 - EliminationWorkLeft(rest, n));
    if (rest == 0) {
      progress.Report(1.0);
      return lu.det();
    }
  }
  progress.Report(1.0);
  return 0;  // a column without a pivot
}

}  // namespace

absl::StatusOr<uint64_t> BlockedModularDeterminant(std::vector<uint64_t> a, int64_t n, uint64_t p,
                                                   const ModularLuOptions& options,
                                                   const ProgressRange& progress,
                                                   ComputeStats* stats) {
  if (p < kBalancedDoubleModulusLimit) {
    return FactorInPanels(BalancedDoubleField(p), std::move(a), n, options, progress, stats);
  }
  return FactorInPanels(Uint64Field(p), std::move(a), n, options, progress, stats);
}

}  // namespace matrixd::cpu
