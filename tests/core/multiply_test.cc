// Products on every backend: floating products against a naive triple loop in long double (within
// the c * k * eps * (|A||B|)_ij bound of a floating-point dot product), UINT32 products exactly
// against a uint64 loop reduced mod 2^32, and block-sparse products against both, with their block
// counts checked against bitmaps built here independently.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/backend.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

namespace matrixd {
namespace {

// The constant c of the c * k * eps bound.
constexpr long double kSlack = 4;

using ::matrixd::testing::Eps;
using ::matrixd::testing::ForEachFloatingType;
using ::matrixd::testing::kComplex;
using ::matrixd::testing::Mul;
using ::matrixd::testing::Real;
using ::matrixd::testing::Wide;

// Runs fn for each floating dtype and for UINT32.
template <typename Fn>
void ForEachDType(Fn&& fn) {
  ForEachFloatingType(fn);
  SCOPED_TRACE("uint32");
  fn(std::type_identity<uint32_t>{});
}

struct Shape {
  int64_t m;
  int64_t k;
  int64_t n;
};

std::string Describe(const Shape& s, bool transpose_a, bool transpose_b) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + " * " + std::to_string(s.k) + "x" +
         std::to_string(s.n) + (transpose_a ? " (A^T)" : "") + (transpose_b ? " (B^T)" : "");
}

// ---- Operands ----

// A row-major rows x cols matrix of T as the test sees it: op(A) or op(B), before storing.
template <typename T>
struct Operand {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<T> v;

  T operator()(int64_t i, int64_t j) const { return v[i * cols + j]; }
};

// Floating entries uniform in [-1, 1]; UINT32 entries half within 1000 of 2^32 (so that every
// product wraps) and half uniform over [0, 2^32).
template <typename T>
T RandomEntry(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  if constexpr (std::is_same_v<T, uint32_t>) {
    const uint64_t r = rng();
    return (r & 1) ? static_cast<uint32_t>(0xFFFFFFFFu - (r >> 1) % 1000)
                   : static_cast<uint32_t>(r >> 32);
  } else if constexpr (kComplex<T>) {
    const double re = uniform(rng);
    return T(static_cast<Real<T>>(re), static_cast<Real<T>>(uniform(rng)));
  } else {
    return static_cast<T>(uniform(rng));
  }
}

template <typename T>
Operand<T> RandomOperand(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Operand<T> x{rows, cols, std::vector<T>(static_cast<size_t>(rows * cols))};
  for (T& e : x.v) e = RandomEntry<T>(rng);
  return x;
}

// Each block x block block (smaller at the edges) random with probability `density`, else zero.
template <typename T>
Operand<T> BlockSparseOperand(int64_t rows, int64_t cols, int64_t block, double density,
                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(density);
  Operand<T> x{rows, cols, std::vector<T>(static_cast<size_t>(rows * cols), T(0))};
  for (int64_t bi = 0; bi * block < rows; ++bi) {
    for (int64_t bj = 0; bj * block < cols; ++bj) {
      if (!keep(rng)) continue;
      for (int64_t i = bi * block; i < std::min(rows, (bi + 1) * block); ++i) {
        for (int64_t j = bj * block; j < std::min(cols, (bj + 1) * block); ++j) {
          x.v[i * cols + j] = RandomEntry<T>(rng);
        }
      }
    }
  }
  return x;
}

// The matrix to send so that op(stored) = x.
template <typename T>
Matrix Store(const Operand<T>& x, bool transpose) {
  if (!transpose) return Matrix::FromValues<T>(x.rows, x.cols, x.v);
  std::vector<T> t(x.v.size());
  for (int64_t i = 0; i < x.rows; ++i) {
    for (int64_t j = 0; j < x.cols; ++j) t[j * x.rows + i] = x(i, j);
  }
  return Matrix::FromValues<T>(x.cols, x.rows, t);
}

// ---- References ----

// op(A) op(B) in long double (uint64 for UINT32, where only the low 32 bits matter).
template <typename T>
std::vector<Wide<T>> ReferenceProduct(const Operand<T>& a, const Operand<T>& b) {
  std::vector<Wide<T>> c(static_cast<size_t>(a.rows * b.cols), Wide<T>(0));
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t p = 0; p < a.cols; ++p) {
      const Wide<T> x = Wide<T>(a(i, p));
      for (int64_t j = 0; j < b.cols; ++j) c[i * b.cols + j] += Mul(x, Wide<T>(b(p, j)));
    }
  }
  return c;
}

// (|op(A)| |op(B)|)_ij, which bounds the rounding error of entry ij.
template <typename T>
std::vector<long double> AbsoluteProduct(const Operand<T>& a, const Operand<T>& b) {
  std::vector<long double> c(static_cast<size_t>(a.rows * b.cols), 0);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t p = 0; p < a.cols; ++p) {
      const long double x = std::abs(Wide<T>(a(i, p)));
      for (int64_t j = 0; j < b.cols; ++j) c[i * b.cols + j] += x * std::abs(Wide<T>(b(p, j)));
    }
  }
  return c;
}

// c = op(A) op(B): exactly mod 2^32 for UINT32, within kSlack * k * eps * (|A||B|)_ij otherwise.
template <typename T>
void ExpectProduct(const Matrix& c, const Operand<T>& a, const Operand<T>& b) {
  ASSERT_EQ(c.rows(), a.rows);
  ASSERT_EQ(c.cols(), b.cols);
  ASSERT_EQ(c.dtype(), DTypeOf<T>());
  const auto want = ReferenceProduct(a, b);
  const auto got = c.As<T>();
  if constexpr (std::is_same_v<T, uint32_t>) {
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], static_cast<uint32_t>(want[i])) << "entry " << i;
    }
  } else {
    const auto bound = AbsoluteProduct(a, b);
    const long double eps = Eps<T>();
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_LE(std::abs(Wide<T>(got[i]) - want[i]), kSlack * a.cols * eps * bound[i])
          << "entry " << i;
    }
  }
}

// Block products that a block-sparse product must run, counted from the entries here.
template <typename T>
int64_t NonZeroBlockPairs(const Operand<T>& a, const Operand<T>& b, int64_t block, double* flops) {
  const auto blocks = [block](int64_t size) { return (size + block - 1) / block; };
  const auto non_zero = [&](const Operand<T>& x) {
    std::vector<std::vector<bool>> flags(blocks(x.rows), std::vector<bool>(blocks(x.cols)));
    for (int64_t i = 0; i < x.rows; ++i) {
      for (int64_t j = 0; j < x.cols; ++j) {
        if (x(i, j) != T(0)) flags[i / block][j / block] = true;
      }
    }
    return flags;
  };
  const auto extent = [block](int64_t index, int64_t size) {
    return std::min(block, size - index * block);
  };
  const auto a_flags = non_zero(a);
  const auto b_flags = non_zero(b);
  int64_t pairs = 0;
  *flops = 0;
  for (int64_t i = 0; i < blocks(a.rows); ++i) {
    for (int64_t p = 0; p < blocks(a.cols); ++p) {
      for (int64_t j = 0; j < blocks(b.cols); ++j) {
        if (!a_flags[i][p] || !b_flags[p][j]) continue;
        ++pairs;
        *flops +=
            (kComplex<T> ? 8.0 : 2.0) * extent(i, a.rows) * extent(p, a.cols) * extent(j, b.cols);
      }
    }
  }
  return pairs;
}

// ---- Tests ----

class MultiplyTest : public testing::BackendTest {
 protected:
  template <typename T>
  absl::StatusOr<MultiplyResult> Run(const Operand<T>& a, const Operand<T>& b,
                                     MultiplyOptions options) {
    const Matrix stored_a = Store(a, options.transpose_a);
    const Matrix stored_b = Store(b, options.transpose_b);
    return backend().Multiply(stored_a.view(), stored_b.view(), options, nullptr);
  }
};

TEST_P(MultiplyTest, MultiplyMatchesReferenceForEveryShapeAndTranspose) {
  const Shape shapes[] = {{1, 1, 1},  {1, 13, 1},   {1, 13, 9},
                          {9, 13, 1}, {33, 17, 25}, {70, 129, 45}};
  ForEachDType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const Shape& s : shapes) {
      const auto a = RandomOperand<T>(s.m, s.k, 1000 + s.m * 7 + s.k);
      const auto b = RandomOperand<T>(s.k, s.n, 2000 + s.k * 7 + s.n);
      for (const bool transpose_a : {false, true}) {
        for (const bool transpose_b : {false, true}) {
          SCOPED_TRACE(Describe(s, transpose_a, transpose_b));
          MultiplyOptions options;
          options.transpose_a = transpose_a;
          options.transpose_b = transpose_b;
          const auto result = Run(a, b, options);
          ASSERT_TRUE(result.ok()) << result.status();
          ExpectProduct(result->c, a, b);
        }
      }
    }
  });
}

TEST_P(MultiplyTest, MultiplyTransposesComplexWithoutConjugating) {
  ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (kComplex<T>) {
      // op(A) = [1+2i, 3-i], op(B) = [2-i; i]: the product is 5+6i; conjugating A would give -1-2i.
      const Matrix a = Matrix::FromValues<T>(2, 1, std::vector<T>{{1, 2}, {3, -1}});
      const Matrix b = Matrix::FromValues<T>(1, 2, std::vector<T>{{2, -1}, {0, 1}});
      MultiplyOptions options;
      options.transpose_a = true;
      options.transpose_b = true;
      const auto result = backend().Multiply(a.view(), b.view(), options, nullptr);
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_EQ(result->c.size(), 1);
      EXPECT_EQ(result->c.As<T>()[0], T(5, 6));
    }
  });
}

TEST_P(MultiplyTest, UInt32WrapsAroundOnLargeProducts) {
  // Larger than the CPU kernel's panels and row tasks, so blocking and threads are exercised.
  const Shape s{200, 300, 600};
  const auto a = RandomOperand<uint32_t>(s.m, s.k, 3001);
  const auto b = RandomOperand<uint32_t>(s.k, s.n, 3002);
  for (const bool transpose : {false, true}) {
    SCOPED_TRACE(Describe(s, transpose, transpose));
    MultiplyOptions options;
    options.transpose_a = transpose;
    options.transpose_b = transpose;
    const auto result = Run(a, b, options);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectProduct(result->c, a, b);
  }
}

TEST_P(MultiplyTest, BlockSparseEqualsDenseProductAndCountsNonZeroBlockPairs) {
  const Shape shapes[] = {{70, 53, 45}, {16, 32, 48}, {5, 7, 3}};
  ForEachDType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const Shape& s : shapes) {
      for (const int64_t block : {1, 8, 16, 100}) {
        const auto a = BlockSparseOperand<T>(s.m, s.k, block, 0.1, 4000 + block + s.m);
        const auto b = BlockSparseOperand<T>(s.k, s.n, block, 0.1, 5000 + block + s.n);
        for (const bool transpose : {false, true}) {
          SCOPED_TRACE(Describe(s, transpose, !transpose) + ", block " + std::to_string(block));
          MultiplyOptions options;
          options.block_size = block;
          options.transpose_a = transpose;
          options.transpose_b = !transpose;
          const auto result = Run(a, b, options);
          ASSERT_TRUE(result.ok()) << result.status();
          ExpectProduct(result->c, a, b);
          double flops = 0;
          EXPECT_EQ(result->block_products, NonZeroBlockPairs(a, b, block, &flops));
          EXPECT_EQ(result->block_products_total, ((s.m + block - 1) / block) *
                                                      ((s.k + block - 1) / block) *
                                                      ((s.n + block - 1) / block));
          EXPECT_DOUBLE_EQ(result->stats.flops, flops);
        }
      }
    }
  });
}

TEST_P(MultiplyTest, BlockSparseOfDenseOperandsRunsEveryBlockProduct) {
  ForEachDType([&](auto type) {
    using T = typename decltype(type)::type;
    const auto a = RandomOperand<T>(20, 30, 6001);
    const auto b = RandomOperand<T>(30, 10, 6002);
    MultiplyOptions options;
    options.block_size = 7;
    const auto result = Run(a, b, options);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectProduct(result->c, a, b);
    EXPECT_EQ(result->block_products_total, 3 * 5 * 2);
    EXPECT_EQ(result->block_products, result->block_products_total);
  });
}

TEST_P(MultiplyTest, BlockSparseOfZeroOperandRunsNoProducts) {
  ForEachDType([&](auto type) {
    using T = typename decltype(type)::type;
    const Operand<T> zero{12, 9, std::vector<T>(12 * 9, T(0))};
    const auto b = RandomOperand<T>(9, 5, 7001);
    MultiplyOptions options;
    options.block_size = 4;
    for (const bool zero_on_left : {true, false}) {
      const auto result =
          zero_on_left ? Run(zero, b, options) : Run(RandomOperand<T>(5, 12, 7002), zero, options);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(result->block_products, 0);
      EXPECT_EQ(result->block_products_total, zero_on_left ? 3 * 3 * 2 : 2 * 3 * 3);
      EXPECT_EQ(result->stats.flops, 0.0);
      for (const T& x : result->c.template As<T>()) ASSERT_EQ(x, T(0));
    }
  });
}

TEST_P(MultiplyTest, MultiplyCountsFlopsAndBytes) {
  const auto real = RandomOperand<double>(3, 4, 8001);
  const auto real_b = RandomOperand<double>(4, 5, 8002);
  const auto result = Run(real, real_b, {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_DOUBLE_EQ(result->stats.flops, 2.0 * 3 * 4 * 5);
  EXPECT_EQ(result->stats.bytes_moved, (12 + 20 + 15) * sizeof(double));

  const auto complex_a = RandomOperand<std::complex<float>>(3, 4, 8003);
  const auto complex_b = RandomOperand<std::complex<float>>(4, 5, 8004);
  const auto complex_result = Run(complex_a, complex_b, {});
  ASSERT_TRUE(complex_result.ok()) << complex_result.status();
  EXPECT_DOUBLE_EQ(complex_result->stats.flops, 8.0 * 3 * 4 * 5);
  EXPECT_EQ(complex_result->stats.bytes_moved, (12 + 20 + 15) * sizeof(std::complex<float>));
}

TEST_P(MultiplyTest, MultiplyRejectsInt64AndMixedDTypes) {
  const Matrix i64 = Matrix::FromValues<int64_t>(2, 2, std::vector<int64_t>{1, 2, 3, 4});
  EXPECT_EQ(backend().Multiply(i64.view(), i64.view(), {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Matrix f32 = Matrix::FromValues<float>(2, 2, std::vector<float>{1, 2, 3, 4});
  const Matrix f64 = Matrix::FromValues<double>(2, 2, std::vector<double>{1, 2, 3, 4});
  EXPECT_EQ(backend().Multiply(f32.view(), f64.view(), {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(MultiplyTest, MultiplyReturnsCancelledWhenCancelled) {
  const Matrix a = Matrix::FromValues<uint32_t>(2, 2, std::vector<uint32_t>{1, 2, 3, 4});
  JobControl control;
  control.Cancel();
  for (const int64_t block : {0, 1}) {
    MultiplyOptions options;
    options.block_size = block;
    EXPECT_EQ(backend().Multiply(a.view(), a.view(), options, &control).status().code(),
              absl::StatusCode::kCancelled);
  }
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(MultiplyTest);

}  // namespace
}  // namespace matrixd
