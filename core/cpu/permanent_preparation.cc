#include "core/cpu/permanent_preparation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cpu/compensated_sum.h"
#include "core/cpu/montgomery.h"
#include "core/cpu/multimodular.h"
#include "core/cpu/permanent_head_walk.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cpu {
namespace {

// Largest magnitude (max(|re|, |im|)) of a row, or NaN when some entry is not finite.
double LargestMagnitude(const double* row, int n) {
  double largest = 0.0;
  for (int j = 0; j < n; ++j) {
    if (!std::isfinite(row[j])) return std::nan("");
    largest = std::max(largest, std::fabs(row[j]));
  }
  return largest;
}
double LargestMagnitude(const std::complex<double>* row, int n) {
  double largest = 0.0;
  for (int j = 0; j < n; ++j) {
    if (!std::isfinite(row[j].real()) || !std::isfinite(row[j].imag())) return std::nan("");
    largest = std::max({largest, std::fabs(row[j].real()), std::fabs(row[j].imag())});
  }
  return largest;
}

double ScaleByPowerOfTwo(double x, int e) { return std::ldexp(x, e); }
std::complex<double> ScaleByPowerOfTwo(std::complex<double> x, int e) {
  return {std::ldexp(x.real(), e), std::ldexp(x.imag(), e)};
}

template <typename T>
std::vector<T> Widen(const MatrixView& a) {
  std::vector<T> out(static_cast<size_t>(a.size()));
  switch (a.dtype) {
    case DType::kFloat32: {
      const auto v = a.As<float>();
      std::copy(v.begin(), v.end(), out.begin());
      break;
    }
    case DType::kFloat64: {
      const auto v = a.As<double>();
      std::copy(v.begin(), v.end(), out.begin());
      break;
    }
    case DType::kComplex64: {
      if constexpr (!std::is_same_v<T, double>) {
        const auto v = a.As<std::complex<float>>();
        std::transform(v.begin(), v.end(), out.begin(), [](std::complex<float> x) { return T(x); });
      }
      break;
    }
    case DType::kComplex128: {
      if constexpr (!std::is_same_v<T, double>) {
        const auto v = a.As<std::complex<double>>();
        std::copy(v.begin(), v.end(), out.begin());
      }
      break;
    }
    default:
      break;
  }
  return out;
}

// The steps of either walk: column b (Ryser) or -2 * column b + 1 (Glynn, whose delta_0 stays +1),
// one column per step so that the per-step update is a unit-stride loop.
template <typename T>
void FillSteps(std::span<const T> a, int n, PermanentMethod method, size_t stride,
               std::span<T> steps) {
  const int bits = PermanentWalkBits(n, method);
  const bool glynn = method == PermanentMethod::kGlynn;
  const int first_column = glynn ? 1 : 0;
  for (int b = 0; b < bits; ++b) {
    for (int i = 0; i < n; ++i) {
      const T entry = a[static_cast<size_t>(i) * n + b + first_column];
      steps[static_cast<size_t>(b) * stride + i] = glynn ? -2.0 * entry : entry;
    }
  }
}

// log2 of prod_i sum_j |a_ij|, which bounds |per A|; -infinity when some row is zero.
long double Log2PermanentBound(std::span<const int64_t> a, int n) {
  long double bits = 0.0L;
  for (int i = 0; i < n; ++i) {
    long double row = 0.0L;
    for (int j = 0; j < n; ++j) row += std::fabs(static_cast<long double>(a[i * n + j]));
    bits += std::log2(row);
  }
  return bits;
}

// FP64 operations of a walk's pieces: the table in permanent_preparation.h.
struct Costs {
  double update, multiply, block, suffix;
};
Costs CostsOf(walk::RealArithmetic arithmetic) {
  return arithmetic == walk::RealArithmetic::kDoubleDoubleRows ? Costs{7, 4, 12, 4}
         : arithmetic == walk::RealArithmetic::kExactRows      ? Costs{1, 3, 8, 4}
                                                               : Costs{1, 1, 3, 1};
}
// Adding a term (or a group's sum) to a double-double sum.
constexpr double kTermSumCost = 10.0;

}  // namespace

int PermanentWalkBits(int n, PermanentMethod method) {
  return method == PermanentMethod::kRyser ? n : n - 1;
}

absl::Status CheckPermanentInput(const MatrixView& a, int max_order, absl::string_view name) {
  if (a.rows != a.cols || a.rows < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", a.rows, "x", a.cols, ", want a non-empty square matrix"));
  }
  if (a.rows > max_order) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix is ", a.rows, "x", a.cols, ", ", name, " supports n <= ", max_order));
  }
  if (a.dtype == DType::kUInt32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.dtype is ", std::string(DTypeName(a.dtype)), ", want floating point or int64"));
  }
  return absl::OkStatus();
}

PermanentResult NewPermanentResult(const MatrixView& a, const PermanentOptions& options) {
  const int n = static_cast<int>(a.rows);
  PermanentResult result;
  result.method_used =
      options.method == PermanentMethod::kRyser ? PermanentMethod::kRyser : PermanentMethod::kGlynn;
  if (a.dtype == DType::kInt64) {
    result.precision_used = PermanentPrecision::kExact;
  } else if (IsComplex(a.dtype)) {
    result.precision_used = PermanentPrecision::kFast;
  } else {
    result.precision_used = RealPermanentPrecision(options.precision, result.method_used);
  }
  result.walk_used = PermanentWalk::kDense;
  const int bits = PermanentWalkBits(n, result.method_used);
  result.stats.bytes_moved = a.byte_size();
  result.stats.flops = std::ldexp(1.0, bits) * 2.0 * n * (IsComplex(a.dtype) ? 4.0 : 1.0);
  return result;
}

void SetExactPermanent(std::string decimal, ExactCertificate certificate, PermanentResult* result) {
  result->exact = std::move(decimal);
  result->value = std::strtod(result->exact.c_str(), nullptr);
  result->stats.flops *= std::max(static_cast<int>(certificate.primes.size()), 1);
  result->certificate = std::move(certificate);
}

template <typename T>
absl::StatusOr<ScaledRows<T>> ScalePermanentRows(const MatrixView& a) {
  const int n = static_cast<int>(a.rows);
  ScaledRows<T> rows;
  rows.entries = Widen<T>(a);
  for (int i = 0; i < n; ++i) {
    T* row = rows.entries.data() + static_cast<size_t>(i) * n;
    const double largest = LargestMagnitude(row, n);
    if (std::isnan(largest)) {
      return absl::InvalidArgumentError(
          absl::StrCat("matrix row ", i, " has a NaN or infinite entry"));
    }
    if (largest == 0.0) {
      rows.zero_row = true;
      return rows;
    }
    const int e = std::ilogb(largest);
    // Entry by entry: 2^-e itself overflows for a row of subnormals (e < -1023).
    for (int j = 0; j < n; ++j) row[j] = ScaleByPowerOfTwo(row[j], -e);
    rows.exponent += e;
  }
  // A zero column makes every term of Ryser's walk cancel only in exact arithmetic: answer 0.
  for (int j = 0; j < n; ++j) {
    bool zero = true;
    for (int i = 0; i < n && zero; ++i) zero = rows.entries[static_cast<size_t>(i) * n + j] == T{};
    if (zero) {
      rows.zero_row = true;
      return rows;
    }
  }
  return rows;
}

template absl::StatusOr<ScaledRows<double>> ScalePermanentRows<double>(const MatrixView& a);
template absl::StatusOr<ScaledRows<std::complex<double>>> ScalePermanentRows<std::complex<double>>(
    const MatrixView& a);

void FillPermanentWalk(std::span<const double> a, int n, PermanentMethod method, size_t stride,
                       std::span<double> steps, std::span<double> base, std::span<double> base_lo) {
  FillSteps(a, n, method, stride, steps);
  // Glynn's base row sums in double-double: Ryser's terms cancel by up to 10 orders of magnitude,
  // and the walks carry their row sums in double-double from here on.
  const bool glynn = method == PermanentMethod::kGlynn;
  for (int i = 0; i < n; ++i) {
    CompensatedSum sum;
    if (glynn) {
      for (int j = 0; j < n; ++j) sum.Add(a[static_cast<size_t>(i) * n + j]);
    }
    base[i] = sum.hi();
    base_lo[i] = sum.lo();
  }
}

void FillPermanentWalk(std::span<const std::complex<double>> a, int n, PermanentMethod method,
                       size_t stride, std::span<std::complex<double>> steps,
                       std::span<std::complex<double>> base) {
  FillSteps(a, n, method, stride, steps);
  const bool glynn = method == PermanentMethod::kGlynn;
  for (int i = 0; i < n; ++i) {
    std::complex<double> sum{};
    if (glynn) {
      for (int j = 0; j < n; ++j) sum += a[static_cast<size_t>(i) * n + j];
    }
    base[i] = sum;
  }
}

bool PermanentRowSumsAreExact(std::span<const double> a, int n) {
  for (int i = 0; i < n; ++i) {
    const double* row = a.data() + static_cast<size_t>(i) * n;
    // q_i = 2^min_exponent: the lowest set bit of any entry's significand.
    int min_exponent = std::numeric_limits<int>::max();
    for (int j = 0; j < n; ++j) {
      if (row[j] == 0.0) continue;
      int e = 0;
      const double m = std::frexp(std::fabs(row[j]), &e);  // |x| = m 2^e, m in [0.5, 1)
      const auto significand = static_cast<uint64_t>(std::ldexp(m, 53));  // exact: 53 bits
      min_exponent = std::min(min_exponent, e - 53 + std::countr_zero(significand));
    }
    if (min_exponent == std::numeric_limits<int>::max()) continue;  // a zero row
    uint64_t units = 0;  // sum_j |a_ij| / q_i, each term an integer < 2^53, n < 64 of them
    for (int j = 0; j < n; ++j) {
      units += static_cast<uint64_t>(std::ldexp(std::fabs(row[j]), -min_exponent));
    }
    if (units > (uint64_t{1} << 53)) return false;
  }
  return true;
}

void OrderForSparseWalk(std::vector<double>& a, int n, PermanentMethod method) {
  const auto nonzero = [&](int i, int j) { return a[static_cast<size_t>(i) * n + j] != 0.0; };
  std::vector<int> column_nonzeros(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) column_nonzeros[j] += nonzero(i, j) ? 1 : 0;
  }
  std::vector<int> columns;  // the new column order
  std::vector<bool> placed(n, false);
  if (method == PermanentMethod::kGlynn && n > 1) {
    int densest = 0;  // the last of the densest
    for (int j = 1; j < n; ++j)
      densest = column_nonzeros[j] >= column_nonzeros[densest] ? j : densest;
    columns.push_back(densest);
    placed[densest] = true;
  }
  const size_t fixed = columns.size();
  // first_bit[i]: the first walk bit whose column touches row i (bits: the number of flipping
  // columns, for rows touched by none).
  const int bits = n - static_cast<int>(fixed);
  std::vector<int> first_bit(n, bits);
  while (static_cast<int>(columns.size()) < n) {
    int best = -1;
    int best_new = 0;
    for (int j = 0; j < n; ++j) {
      if (placed[j]) continue;
      int added = 0;
      for (int i = 0; i < n; ++i) added += nonzero(i, j) && first_bit[i] == bits ? 1 : 0;
      if (best < 0 || added < best_new ||
          (added == best_new && column_nonzeros[j] < column_nonzeros[best])) {
        best = j;
        best_new = added;
      }
    }
    const int bit = static_cast<int>(columns.size() - fixed);
    for (int i = 0; i < n; ++i) {
      if (nonzero(i, best) && first_bit[i] == bits) first_bit[i] = bit;
    }
    columns.push_back(best);
    placed[best] = true;
  }
  std::vector<int> rows(n);
  std::iota(rows.begin(), rows.end(), 0);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](int x, int y) { return first_bit[x] < first_bit[y]; });
  const std::vector<double> original = a;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      a[static_cast<size_t>(i) * n + j] = original[static_cast<size_t>(rows[i]) * n + columns[j]];
    }
  }
}

std::vector<uint64_t> PermanentBlockMasks(std::span<const double> a, int n,
                                          PermanentMethod method) {
  const int bits = PermanentWalkBits(n, method);
  const int first_column = method == PermanentMethod::kGlynn ? 1 : 0;
  std::vector<uint64_t> masks(bits, 0);
  for (int b = 0; b < bits; ++b) {
    for (int i = 0; i < n; ++i) {
      // A Glynn step is -2 times the column: non-zero where the column is.
      if (a[static_cast<size_t>(i) * n + b + first_column] != 0.0) {
        masks[b] |= uint64_t{1} << (i / kPermanentBlockRows);
      }
    }
  }
  return masks;
}

PermanentWalkCost EstimatePermanentWalkCost(std::span<const double> a, int n,
                                            PermanentMethod method,
                                            walk::RealArithmetic arithmetic) {
  const Costs costs = CostsOf(arithmetic);
  constexpr double kBlockTest = 0.5;
  const int blocks = (n + kPermanentBlockRows - 1) / kPermanentBlockRows;
  const int first_column = method == PermanentMethod::kGlynn ? 1 : 0;
  const std::vector<uint64_t> masks = PermanentBlockMasks(a, n, method);
  PermanentWalkCost cost;
  cost.dense = n * (costs.update + costs.multiply) + kTermSumCost;
  cost.sparse = kTermSumCost + kBlockTest * blocks;
  for (size_t b = 0; b < masks.size(); ++b) {
    int column_nonzeros = 0;
    for (int i = 0; i < n; ++i) {
      column_nonzeros += a[static_cast<size_t>(i) * n + b + first_column] != 0.0 ? 1 : 0;
    }
    const double step = column_nonzeros * costs.update + std::popcount(masks[b]) * costs.block +
                        std::max(static_cast<int>(std::bit_width(masks[b])) - 1, 0) * costs.suffix;
    cost.sparse += std::ldexp(step, -static_cast<int>(b) - 1);
  }
  return cost;
}

HeadWalkPlan PlanHeadWalk(std::span<const double> a, int n, PermanentMethod method,
                          walk::RealArithmetic arithmetic, int head_rows) {
  const Costs costs = CostsOf(arithmetic);
  const int padded = (n + 3) / 4 * 4;
  const int bits = PermanentWalkBits(n, method);
  const int first_column = method == PermanentMethod::kGlynn ? 1 : 0;
  HeadWalkPlan plan;
  if (head_rows <= 0 || head_rows >= padded) return plan;
  while (plan.head_bits < std::min(bits, walk::kMaxHeadWalkBits)) {
    bool inside = true;
    for (int i = head_rows; i < n && inside; ++i) {
      inside = a[static_cast<size_t>(i) * n + plan.head_bits + first_column] == 0.0;
    }
    if (!inside) break;
    ++plan.head_bits;
  }
  if (plan.head_bits == 0) return plan;
  plan.head_rows = head_rows;
  const double group =
      padded * costs.update + (padded - head_rows) * costs.multiply + 4.0 + kTermSumCost;
  plan.cost = head_rows * (costs.update + costs.multiply) + kTermSumCost +
              std::ldexp(group, -plan.head_bits);
  return plan;
}

HeadWalkPlan ChooseHeadWalk(std::span<const double> a, int n, PermanentMethod method,
                            walk::RealArithmetic arithmetic) {
  HeadWalkPlan best;
  for (const int head_rows : walk::kHeadWalkRows) {
    const HeadWalkPlan plan = PlanHeadWalk(a, n, method, arithmetic, head_rows);
    if (plan.head_rows != 0 && (best.head_rows == 0 || plan.cost < best.cost)) best = plan;
  }
  return best;
}

namespace {

// SparseWalkCost with the block walk's count already estimated.
double SparseWalkCostOf(std::span<const double> ordered, int n, PermanentMethod method,
                        walk::RealArithmetic arithmetic, double block_walk,
                        SparseWalkCostModel model) {
  if (model == SparseWalkCostModel::kCpu) return block_walk;
  const HeadWalkPlan head = ChooseHeadWalk(ordered, n, method, arithmetic);
  return head.head_rows > 0 ? head.cost : kGpuBlockWalkCountFactor * block_walk;
}

}  // namespace

double SparseWalkCost(std::span<const double> ordered, int n, PermanentMethod method,
                      walk::RealArithmetic arithmetic, SparseWalkCostModel model) {
  return SparseWalkCostOf(ordered, n, method, arithmetic,
                          EstimatePermanentWalkCost(ordered, n, method, arithmetic).sparse, model);
}

PermanentWalk PrepareRealPermanentWalk(std::vector<double>& a, int n, PermanentMethod method,
                                       walk::RealArithmetic arithmetic, PermanentWalk asked,
                                       double max_sparse_cost_ratio, SparseWalkCostModel model) {
  if (asked == PermanentWalk::kDense) return PermanentWalk::kDense;
  std::vector<double> ordered = a;
  OrderForSparseWalk(ordered, n, method);
  if (asked == PermanentWalk::kAuto) {
    const PermanentWalkCost cost = EstimatePermanentWalkCost(ordered, n, method, arithmetic);
    if (SparseWalkCostOf(ordered, n, method, arithmetic, cost.sparse, model) >
        max_sparse_cost_ratio * cost.dense) {
      return PermanentWalk::kDense;
    }
  }
  a = std::move(ordered);
  return PermanentWalk::kSparse;
}

PermanentPrecision RealPermanentPrecision(PermanentPrecision asked, PermanentMethod method) {
  return asked == PermanentPrecision::kFast && method == PermanentMethod::kGlynn
             ? PermanentPrecision::kFast
             : PermanentPrecision::kExtended;
}

RealWalkArithmetic ChooseRealWalkArithmetic(std::span<const double> a, int n,
                                            PermanentPrecision precision, PermanentMethod method) {
  RealWalkArithmetic arithmetic;
  arithmetic.precision = RealPermanentPrecision(precision, method);
  arithmetic.exact_row_sums = PermanentRowSumsAreExact(a, n);
  return arithmetic;
}

std::complex<double> FloatPermanentValue(double walk_sum, int n, PermanentMethod method,
                                         int exponent) {
  double sign = 1.0;
  if (method == PermanentMethod::kGlynn) {
    exponent -= n - 1;
  } else if (n % 2 != 0) {
    sign = -1.0;
  }
  return sign * std::ldexp(walk_sum, exponent);
}

std::complex<double> FloatPermanentValue(std::complex<double> walk_sum, int n,
                                         PermanentMethod method, int exponent) {
  double sign = 1.0;
  if (method == PermanentMethod::kGlynn) {
    exponent -= n - 1;
  } else if (n % 2 != 0) {
    sign = -1.0;
  }
  return {sign * std::ldexp(walk_sum.real(), exponent),
          sign * std::ldexp(walk_sum.imag(), exponent)};
}

std::vector<uint64_t> PermanentPrimes(std::span<const int64_t> a, int n) {
  const long double bound_bits = Log2PermanentBound(a, n);
  if (std::isinf(bound_bits)) return {};
  return LargePrimes(PrimesForBound(static_cast<double>(std::max(bound_bits, 0.0L))));
}

ExactCertificate PermanentCertificate(std::span<const int64_t> a, int n, PermanentMethod method,
                                      std::vector<uint64_t> primes, std::vector<uint64_t> residues,
                                      const char* where) {
  return MultimodularCertificate(
      absl::StrCat("multimodular: ", method == PermanentMethod::kRyser ? "Ryser" : "Glynn",
                   " walk mod each prime", where, ", CRT"),
      std::move(primes), std::move(residues), static_cast<double>(Log2PermanentBound(a, n)));
}

void FillModularPermanentWalk(std::span<const int64_t> a, int n, PermanentMethod method, uint64_t p,
                              size_t stride, std::span<uint64_t> steps, std::span<uint64_t> base) {
  const int bits = PermanentWalkBits(n, method);
  const bool glynn = method == PermanentMethod::kGlynn;
  const int first_column = glynn ? 1 : 0;
  for (int b = 0; b < bits; ++b) {
    for (int i = 0; i < n; ++i) {
      const uint64_t entry = ReduceSigned(a[static_cast<size_t>(i) * n + b + first_column], p);
      steps[static_cast<size_t>(b) * stride + i] =
          glynn ? SubMod(0, AddMod(entry, entry, p), p) : entry;
    }
  }
  for (int i = 0; i < n; ++i) {
    uint64_t sum = 0;
    if (glynn) {
      for (int j = 0; j < n; ++j) {
        sum = AddMod(sum, ReduceSigned(a[static_cast<size_t>(i) * n + j], p), p);
      }
    }
    base[i] = sum;
  }
}

uint64_t ModularPermanentValue(uint64_t walk_sum, int n, PermanentMethod method, uint64_t p) {
  uint64_t value = MulMod(walk_sum, PowMod(MontgomeryModulus(p).r_mod_p(), n - 1, p), p);
  if (method == PermanentMethod::kGlynn) {
    value = MulMod(value, InvMod(PowMod(2, n - 1, p), p), p);
  } else if (n % 2 != 0) {
    value = SubMod(0, value, p);
  }
  return value;
}

}  // namespace matrixd::cpu
