#include "core/condition_estimate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/condition_estimate_start.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

// Replacements of one sign column that is parallel to another before it is kept as it is (a
// wasted column, not a wrong estimate): tiny orders can run out of non-parallel sign vectors.
constexpr int kMaxResamples = 4;

template <typename T>
inline constexpr bool kComplex = false;
template <>
inline constexpr bool kComplex<std::complex<double>> = true;

double Magnitude(double x) { return std::abs(x); }
double Magnitude(std::complex<double> z) { return std::abs(z); }

// The sign of each entry: +-1 (+1 for zero, as dlacn2's SIGN(ONE, x)), or z / |z| for complex
// entries (1 where |z| is below the smallest normal, as zlacn2 does).
double UnitOf(double x) { return x >= 0.0 ? 1.0 : -1.0; }
std::complex<double> UnitOf(std::complex<double> z) {
  const double magnitude = std::abs(z);
  return magnitude > std::numeric_limits<double>::min() ? z / magnitude : 1.0;
}

// The order of h's rows in SolveAdjoint's `largest`: larger value first, NaN below everything,
// ties to the lower row (the device kernels rank the same way).
double RankKey(double value) { return std::isnan(value) ? -1.0 : value; }
bool RanksBefore(const RankedRow& a, const RankedRow& b) {
  const double ka = RankKey(a.value);
  const double kb = RankKey(b.value);
  return ka != kb ? ka > kb : a.row < b.row;
}

}  // namespace

// Higham and Tisseur's Algorithm 2.4 with the starting block of StartingEntry. Every value taken
// is ||A^-1 x||_1 for some x of 1-norm 1 (to rounding), hence a lower bound of ||A^-1||_1; the
// largest is kept. The counts: iteration k solves with A^-1 once, and with A^-H once unless it
// stops first; k <= itmax + 1, so at most 2 itmax + 1 = 11 block solves.
absl::StatusOr<double> EstimateScaledInverseOneNorm(InverseNormBlock& block, double scale,
                                                    int* solves) {
  const int64_t n = block.rows();
  const int t = block.columns();
  const auto nd = static_cast<double>(n);
  int done = 0;
  struct Count {
    int& done;
    int* out;
    ~Count() {
      if (out != nullptr) *out = done;
    }
  } count{done, solves};

  std::array<double, kMaxEstimateColumns> norms{};
  std::array<double, 2 * kMaxEstimateColumns * kMaxEstimateColumns> products{};
  const std::span<double> norms_of(norms.data(), static_cast<size_t>(t));
  const std::span<double> products_of(products.data(), 2 * static_cast<size_t>(t) * t);
  // Real blocks: sign column i equals +-(a column of S_old), or +-(an earlier column of S).
  const auto parallel_to_old = [&](int i) {
    for (int j = 0; j < t; ++j) {
      if (std::abs(products[i * t + j]) == nd) return true;
    }
    return false;
  };
  const auto parallel_to_earlier = [&](int i) {
    for (int j = 0; j < i; ++j) {
      if (std::abs(products[t * t + i * t + j]) == nd) return true;
    }
    return false;
  };

  std::vector<int64_t> rows;     // the unit vectors of the current block (from iteration 2)
  std::vector<int64_t> history;  // every unit vector used
  double estimate = 0.0;
  MATRIXD_RETURN_IF_ERROR(block.Start(scale));
  for (int k = 1;; ++k) {
    MATRIXD_RETURN_IF_ERROR(block.Solve(norms_of, products_of));
    ++done;
    int best = 0;
    for (int j = 0; j < t; ++j) {
      if (!std::isfinite(norms[j])) return norms[j];
      if (norms[j] > norms[best]) best = j;
    }
    // n = 1: A^-1 e_1 is all of A^-1.
    if (n == 1) return norms[0];
    if (k >= 2 && norms[best] <= estimate) break;
    estimate = norms[best];
    if (k > kMaxEstimateIterations) break;

    if (block.real()) {
      // Every sign vector seen before: the gradient steps would repeat (converged). On the first
      // iteration S_old is zero and nothing is parallel to it.
      bool all_parallel = true;
      for (int i = 0; i < t; ++i) all_parallel = all_parallel && parallel_to_old(i);
      if (all_parallel) break;
      for (int i = 0; i < t; ++i) {
        for (int tries = 0; tries < kMaxResamples && (parallel_to_old(i) || parallel_to_earlier(i));
             ++tries) {
          MATRIXD_RETURN_IF_ERROR(block.ResampleSigns(
              i, kFirstResampleDraw + static_cast<uint64_t>((k * t + i) * kMaxResamples + tries),
              products_of));
        }
      }
    }

    // The gradient A^-H sign(Y): its largest rows are the unit vectors to try next.
    const auto wanted =
        static_cast<size_t>(std::min<int64_t>(n, t + static_cast<int64_t>(history.size())));
    std::array<RankedRow, kMaxRankedRows> largest{};
    std::array<double, kMaxEstimateColumns> at{};
    MATRIXD_RETURN_IF_ERROR(block.SolveAdjoint(scale, rows,
                                               std::span<double>(at.data(), rows.size()),
                                               std::span<RankedRow>(largest.data(), wanted)));
    ++done;
    // From iteration 2 the estimate just grew, so its best column's row is the best so far:
    // the gradient's largest entry there means a local maximum.
    if (k >= 2 && largest[0].value == at[best]) break;
    const auto used = [&](int64_t row) {
      return std::find(history.begin(), history.end(), row) != history.end();
    };
    bool all_used = true;
    for (size_t i = 0; i < std::min<size_t>(t, wanted); ++i) {
      all_used = all_used && used(largest[i].row);
    }
    if (all_used) break;
    rows.clear();
    for (size_t i = 0; i < wanted && rows.size() < static_cast<size_t>(t); ++i) {
      if (!used(largest[i].row)) rows.push_back(largest[i].row);
    }
    history.insert(history.end(), rows.begin(), rows.end());
    // Fewer unused rows than columns (tiny n): repeat the last one; its column is only wasted.
    while (rows.size() < static_cast<size_t>(t)) rows.push_back(rows.back());
    MATRIXD_RETURN_IF_ERROR(block.SetUnitColumns(rows, scale));
  }
  return estimate;
}

absl::StatusOr<double> EstimateReciprocalCondition(InverseNormBlock& block, double one_norm,
                                                   int* solves) {
  if (solves != nullptr) *solves = 0;
  if (!(one_norm > 0.0) || !std::isfinite(one_norm)) return 0.0;
  // Solving with s X instead of X, s = 2^floor(log2 ||A||_1) (exact), estimates s ||A^-1||_1,
  // which is about the condition number whatever A's scale: entries of 1e-300 do not overflow
  // A^-1 X.
  const double scale = std::ldexp(1.0, std::ilogb(one_norm));
  MATRIXD_ASSIGN_OR_RETURN(const double inverse_norm,
                           EstimateScaledInverseOneNorm(block, scale, solves));
  if (!std::isfinite(inverse_norm) || !(inverse_norm > 0.0)) return 0.0;
  return std::min(1.0, (scale / one_norm) / inverse_norm);
}

template <typename T>
HostInverseNormBlock<T>::HostInverseNormBlock(int64_t n, BlockInverseApply<T> apply, int columns)
    : n_(n),
      t_(static_cast<int>(std::min<int64_t>(std::clamp(columns, 1, kMaxEstimateColumns), n))),
      apply_(apply),
      x_(static_cast<size_t>(n_) * t_),
      s_(x_.size()),
      s_old_(x_.size()) {}

template <typename T>
bool HostInverseNormBlock<T>::real() const {
  return !kComplex<T>;
}

template <typename T>
absl::Status HostInverseNormBlock<T>::Start(double scale) {
  for (int64_t i = 0; i < n_; ++i) {
    for (int j = 0; j < t_; ++j) x_[i * t_ + j] = T(scale * StartingEntry(n_, i, j));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status HostInverseNormBlock<T>::SetUnitColumns(std::span<const int64_t> rows, double scale) {
  std::fill(x_.begin(), x_.end(), T(0.0));
  for (int j = 0; j < t_; ++j) x_[rows[j] * t_ + j] = T(scale);
  return absl::OkStatus();
}

template <typename T>
void HostInverseNormBlock<T>::SignProducts(std::span<double> products) const {
  if constexpr (!kComplex<T>) {
    std::fill(products.begin(), products.end(), 0.0);
    for (int64_t r = 0; r < n_; ++r) {
      const T* s = s_.data() + r * t_;
      const T* old = s_old_.data() + r * t_;
      for (int i = 0; i < t_; ++i) {
        for (int j = 0; j < t_; ++j) {
          products[i * t_ + j] += s[i] * old[j];
          products[t_ * t_ + i * t_ + j] += s[i] * s[j];
        }
      }
    }
  }
}

template <typename T>
absl::Status HostInverseNormBlock<T>::Solve(std::span<double> norms, std::span<double> products) {
  MATRIXD_RETURN_IF_ERROR(apply_(false, std::span<T>(x_), t_));
  std::fill(norms.begin(), norms.end(), 0.0);
  for (int64_t r = 0; r < n_; ++r) {
    for (int j = 0; j < t_; ++j) norms[j] += Magnitude(x_[r * t_ + j]);
  }
  std::swap(s_, s_old_);
  for (size_t i = 0; i < x_.size(); ++i) s_[i] = UnitOf(x_[i]);
  SignProducts(products);
  return absl::OkStatus();
}

template <typename T>
absl::Status HostInverseNormBlock<T>::ResampleSigns(int column, uint64_t draw,
                                                    std::span<double> products) {
  for (int64_t r = 0; r < n_; ++r) {
    s_[r * t_ + column] = T(RandomSign(draw, static_cast<uint64_t>(r)));
  }
  SignProducts(products);
  return absl::OkStatus();
}

template <typename T>
absl::Status HostInverseNormBlock<T>::SolveAdjoint(double scale, std::span<const int64_t> at_rows,
                                                   std::span<double> at,
                                                   std::span<RankedRow> largest) {
  for (size_t i = 0; i < x_.size(); ++i) x_[i] = scale * s_[i];
  MATRIXD_RETURN_IF_ERROR(apply_(true, std::span<T>(x_), t_));
  std::vector<RankedRow> h(static_cast<size_t>(n_));
  for (int64_t r = 0; r < n_; ++r) {
    double value = 0.0;
    for (int j = 0; j < t_; ++j) {
      const double magnitude = Magnitude(x_[r * t_ + j]);
      // NaN propagates (std::max would drop it).
      value = std::isnan(magnitude) || std::isnan(value) ? NAN : std::max(value, magnitude);
    }
    h[r] = RankedRow{.value = value, .row = r};
  }
  for (size_t j = 0; j < at_rows.size(); ++j) at[j] = h[at_rows[j]].value;
  std::partial_sort(h.begin(), h.begin() + static_cast<ptrdiff_t>(largest.size()), h.end(),
                    RanksBefore);
  std::copy_n(h.begin(), largest.size(), largest.begin());
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<double> EstimateInverseOneNorm(int64_t n, BlockInverseApply<T> apply, int columns) {
  HostInverseNormBlock<T> block(n, apply, columns);
  return EstimateScaledInverseOneNorm(block, 1.0);
}

template <typename T>
absl::StatusOr<double> EstimateReciprocalCondition(int64_t n, double one_norm,
                                                   BlockInverseApply<T> apply, int columns) {
  HostInverseNormBlock<T> block(n, apply, columns);
  return EstimateReciprocalCondition(block, one_norm);
}

template class HostInverseNormBlock<double>;
template class HostInverseNormBlock<std::complex<double>>;
template absl::StatusOr<double> EstimateInverseOneNorm<double>(int64_t, BlockInverseApply<double>,
                                                               int);
template absl::StatusOr<double> EstimateInverseOneNorm<std::complex<double>>(
    int64_t, BlockInverseApply<std::complex<double>>, int);
template absl::StatusOr<double> EstimateReciprocalCondition<double>(int64_t, double,
                                                                    BlockInverseApply<double>, int);
template absl::StatusOr<double> EstimateReciprocalCondition<std::complex<double>>(
    int64_t, double, BlockInverseApply<std::complex<double>>, int);

}  // namespace matrixd
