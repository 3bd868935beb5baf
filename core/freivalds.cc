#include "core/freivalds.h"

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace matrixd {
namespace {

// ||Z_j - W_j||_2 for every column j, in double whatever the dtype (the check's own rounding must
// stay far below the tolerance it tests against), scaled by the column's largest difference so
// that neither tiny nor huge differences underflow or overflow when squared (LAPACK's dnrm2 way).
template <typename T>
std::vector<double> ColumnDifferenceNorms(const MatrixView& z, const MatrixView& w) {
  const T* zd = z.As<T>().data();
  const T* wd = w.As<T>().data();
  const auto difference = [&](int64_t i, int64_t j) {
    const int64_t at = i * z.cols + j;
    if constexpr (std::is_floating_point_v<T>) {
      return std::abs(static_cast<double>(zd[at]) - static_cast<double>(wd[at]));
    } else {
      return std::abs(std::complex<double>(zd[at]) - std::complex<double>(wd[at]));
    }
  };
  std::vector<double> largest(static_cast<size_t>(z.cols), 0.0);
  for (int64_t i = 0; i < z.rows; ++i) {
    for (int64_t j = 0; j < z.cols; ++j) {
      const double d = difference(i, j);
      // NaN stays NaN: it must not pass.
      if (!(d <= largest[j])) largest[j] = d;
    }
  }
  std::vector<double> sums(static_cast<size_t>(z.cols), 0.0);
  for (int64_t i = 0; i < z.rows; ++i) {
    for (int64_t j = 0; j < z.cols; ++j) {
      if (largest[j] > 0.0 && std::isfinite(largest[j])) {
        const double d = difference(i, j) / largest[j];
        sums[j] += d * d;
      }
    }
  }
  std::vector<double> norms(static_cast<size_t>(z.cols));
  for (size_t j = 0; j < norms.size(); ++j) {
    norms[j] = largest[j] > 0.0 && std::isfinite(largest[j]) ? largest[j] * std::sqrt(sums[j])
                                                             : largest[j];
  }
  return norms;
}

std::vector<double> DifferenceNorms(const MatrixView& z, const MatrixView& w) {
  switch (z.dtype) {
    case DType::kFloat32:
      return ColumnDifferenceNorms<float>(z, w);
    case DType::kComplex64:
      return ColumnDifferenceNorms<std::complex<float>>(z, w);
    case DType::kComplex128:
      return ColumnDifferenceNorms<std::complex<double>>(z, w);
    default:
      return ColumnDifferenceNorms<double>(z, w);
  }
}

// X's signs in row-major order (element (i, j) of the n x s matrix is the (i s + j)-th draw),
// stored row-major, or vector by vector (element (i, j) at j n + i) when `by_vector`.
template <typename T>
void FillSigns(Matrix& x, uint64_t seed, bool by_vector) {
  std::mt19937_64 engine(seed);
  T* data = x.As<T>().data();
  const int64_t n = by_vector ? x.cols() : x.rows();
  const int64_t s = by_vector ? x.rows() : x.cols();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < s; ++j) {
      data[by_vector ? j * n + i : i * s + j] = (engine() >> 63) != 0 ? T(1) : T(-1);
    }
  }
}

Matrix Signs(int64_t n, int vectors, uint64_t seed, DType dtype, bool by_vector) {
  Matrix x = by_vector ? Matrix(vectors, n, dtype) : Matrix(n, vectors, dtype);
  switch (dtype) {
    case DType::kFloat32:
      FillSigns<float>(x, seed, by_vector);
      break;
    case DType::kComplex64:
      FillSigns<std::complex<float>>(x, seed, by_vector);
      break;
    case DType::kComplex128:
      FillSigns<std::complex<double>>(x, seed, by_vector);
      break;
    default:
      FillSigns<double>(x, seed, by_vector);
      break;
  }
  return x;
}

}  // namespace

absl::StatusOr<ProductShape> FreivaldsShape(const MatrixView& a, const MatrixView& b,
                                            const MatrixView& c, bool transpose_a, bool transpose_b,
                                            const FreivaldsOptions& options) {
  if (options.vectors < 1 || options.vectors > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("verify: ", options.vectors, " vectors; want 1 to 64"));
  }
  if (!IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("verify: a.dtype is ", DTypeName(a.dtype),
                                                   "; Freivalds' check takes floating dtypes"));
  }
  for (const auto& [name, x] : {std::pair<const char*, const MatrixView*>{"b", &b}, {"c", &c}}) {
    if (x->dtype != a.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("verify: ", name, ".dtype is ",
                                                     DTypeName(x->dtype), "; want a.dtype ",
                                                     DTypeName(a.dtype)));
    }
  }
  const ProductShape shape{.m = transpose_a ? a.cols : a.rows,
                           .k = transpose_a ? a.rows : a.cols,
                           .n = transpose_b ? b.rows : b.cols};
  const int64_t inner_b = transpose_b ? b.cols : b.rows;
  if (shape.m < 1 || shape.k < 1 || shape.n < 1 || inner_b != shape.k || c.rows != shape.m ||
      c.cols != shape.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("verify: c is ", c.rows, "x", c.cols, ", op(a) ", shape.m, "x", shape.k,
                     ", op(b) ", inner_b, "x", shape.n, "; want c = op(a) op(b), all non-empty"));
  }
  return shape;
}

uint64_t RandomFreivaldsSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

Matrix FreivaldsVectors(int64_t n, int vectors, uint64_t seed, DType dtype) {
  return Signs(n, vectors, seed, dtype, false);
}

Matrix FreivaldsVectorsByVector(int64_t n, int vectors, uint64_t seed, DType dtype) {
  return Signs(n, vectors, seed, dtype, true);
}

double FreivaldsTolerance(DType dtype, int64_t k, int64_t n, bool tf32) {
  const bool single = dtype == DType::kFloat32 || dtype == DType::kComplex64;
  const double roundoff = single ? (tf32 && dtype == DType::kFloat32 ? 0x1p-11 : 0x1p-24) : 0x1p-53;
  const double c = IsComplex(dtype) ? 2.0 : 1.0;
  return c * 2.0 * static_cast<double>(k + n) * roundoff;
}

ProductCheck FreivaldsVerdict(const MatrixView& z, const MatrixView& w, double norm_a,
                              double norm_b, int64_t k, int64_t n,
                              const FreivaldsOptions& options) {
  return FreivaldsVerdictFromNorms(DifferenceNorms(z, w), norm_a, norm_b, z.dtype, k, n, options);
}

ProductCheck FreivaldsVerdictFromNorms(std::span<const double> difference_norms, double norm_a,
                                       double norm_b, DType dtype, int64_t k, int64_t n,
                                       const FreivaldsOptions& options) {
  ProductCheck check;
  check.vectors = options.vectors;
  check.seed = options.seed;
  check.tolerance = FreivaldsTolerance(dtype, k, n, options.tf32);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double root_n = std::sqrt(static_cast<double>(n));
  for (const double difference : difference_norms) {
    double ratio;
    if (!std::isfinite(difference) || !std::isfinite(norm_a) || !std::isfinite(norm_b)) {
      ratio = kInf;
    } else if (norm_a == 0.0 || norm_b == 0.0) {
      // A or B is zero, so C must be: any non-zero W is an error of unbounded relative size.
      ratio = difference == 0.0 ? 0.0 : kInf;
    } else {
      // Divided one factor at a time: ||A||_F ||B||_F alone may overflow while C is finite.
      ratio = difference / norm_a / norm_b / root_n;
    }
    if (!(ratio <= check.discrepancy)) check.discrepancy = ratio;
  }
  check.passed = check.discrepancy <= check.tolerance;
  return check;
}

}  // namespace matrixd
