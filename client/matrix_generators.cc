#include "client/matrix_generators.h"

#include <complex>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/matrix_values.h"

namespace matrixd {
namespace {

// Fills a rows x cols matrix of `dtype` from element(i, j) -> complex<double>, which must return
// values that fit the dtype (the generators below ensure it).
template <typename ElementFn>
v1::Matrix Build(int64_t rows, int64_t cols, v1::DType dtype, ElementFn element) {
  auto fill = [&]<typename T>(T /*tag*/) {
    std::vector<T> values;
    values.reserve(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const std::complex<double> v = element(i, j);
        if constexpr (std::is_same_v<T, std::complex<float>>) {
          values.emplace_back(static_cast<float>(v.real()), static_cast<float>(v.imag()));
        } else if constexpr (std::is_same_v<T, std::complex<double>>) {
          values.push_back(v);
        } else {
          values.push_back(static_cast<T>(v.real()));
        }
      }
    }
    return MakeMatrix<T>(rows, cols, values);
  };
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return fill(float{});
    case v1::DTYPE_COMPLEX64:
      return fill(std::complex<float>{});
    case v1::DTYPE_COMPLEX128:
      return fill(std::complex<double>{});
    case v1::DTYPE_INT64:
      return fill(int64_t{});
    case v1::DTYPE_UINT32:
      return fill(uint32_t{});
    default:
      return fill(double{});
  }
}

// One random entry of `dtype` (see RandomMatrix's contract).
class EntrySource {
 public:
  EntrySource(v1::DType dtype, uint64_t seed) : dtype_(dtype), engine_(seed) {}

  std::complex<double> Next() {
    switch (dtype_) {
      case v1::DTYPE_INT64:
        return {static_cast<double>(small_int_(engine_)), 0.0};
      case v1::DTYPE_UINT32:
        return {static_cast<double>(engine_() & 0xffffffffu), 0.0};
      case v1::DTYPE_COMPLEX64:
      case v1::DTYPE_COMPLEX128: {
        const double re = unit_(engine_);
        return {re, unit_(engine_)};
      }
      default:
        return {unit_(engine_), 0.0};
    }
  }

 private:
  v1::DType dtype_;
  std::mt19937_64 engine_;
  std::uniform_real_distribution<double> unit_{-1.0, 1.0};
  std::uniform_int_distribution<int64_t> small_int_{-9, 9};
};

}  // namespace

v1::Matrix RandomMatrix(int64_t rows, int64_t cols, v1::DType dtype, uint64_t seed) {
  EntrySource source(dtype, seed);
  return Build(rows, cols, dtype, [&](int64_t, int64_t) { return source.Next(); });
}

v1::Matrix RandomBlockSparseMatrix(int64_t rows, int64_t cols, v1::DType dtype, uint64_t seed,
                                   int64_t block_size, double density) {
  // Which blocks are non-zero is drawn first, from its own stream, so the pattern does not
  // depend on the dtype.
  const int64_t block_rows = (rows + block_size - 1) / block_size;
  const int64_t block_cols = (cols + block_size - 1) / block_size;
  std::mt19937_64 pattern_engine(seed ^ 0x9e3779b97f4a7c15ull);
  std::bernoulli_distribution keep(density);
  std::vector<bool> nonzero(static_cast<size_t>(block_rows * block_cols));
  for (size_t k = 0; k < nonzero.size(); ++k) nonzero[k] = keep(pattern_engine);
  EntrySource source(dtype, seed);
  return Build(rows, cols, dtype, [&](int64_t i, int64_t j) -> std::complex<double> {
    if (!nonzero[(i / block_size) * block_cols + j / block_size]) return 0.0;
    // A kept block is all zero only by chance: never in practice for floating dtypes, rarely
    // for a tiny INT64 block (entries in [-9, 9]).
    return source.Next();
  });
}

absl::StatusOr<v1::Matrix> HilbertMatrix(int64_t n, v1::DType dtype) {
  if (dtype == v1::DTYPE_INT64 || dtype == v1::DTYPE_UINT32) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Hilbert matrix needs a floating dtype, not ", DTypeFlagName(dtype)));
  }
  return Build(n, n, dtype, [](int64_t i, int64_t j) -> std::complex<double> {
    return 1.0 / static_cast<double>(i + j + 1);
  });
}

v1::Matrix OnesMatrix(int64_t rows, int64_t cols, v1::DType dtype) {
  return Build(rows, cols, dtype, [](int64_t, int64_t) -> std::complex<double> { return 1.0; });
}

}  // namespace matrixd
