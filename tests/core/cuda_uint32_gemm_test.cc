// The CUDA UINT32 product (core/cuda/uint32_gemm.h): C = op(A) op(B) mod 2^32 against a
// schoolbook product in 64-bit integers on the host. Skips where there is no CUDA device.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/uint32_gemm.h"
#include "core/make_backend.h"
#include "core/matrix.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

class CudaUint32GemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaDeviceAvailable()) GTEST_SKIP() << "no CUDA device here: CUDA UINT32 GEMM skipped";
    absl::StatusOr<std::unique_ptr<DeviceContext>> context = DeviceContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
  }

  absl::StatusOr<MultiplyResult> Multiply(const Matrix& a, const Matrix& b,
                                          const MultiplyOptions& options = {}) {
    return Uint32Multiply(a.view(), b.view(), options, *context_, /*control=*/nullptr);
  }

 private:
  std::unique_ptr<DeviceContext> context_;
};

Matrix RandomUint32(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> values(static_cast<size_t>(rows * cols));
  for (uint32_t& v : values) v = static_cast<uint32_t>(rng());
  return Matrix::FromValues<uint32_t>(rows, cols, values);
}

// op(x)[i, j].
uint32_t At(const Matrix& x, bool transpose, int64_t i, int64_t j) {
  const auto values = x.view().As<uint32_t>();
  return transpose ? values[j * x.cols() + i] : values[i * x.cols() + j];
}

void ExpectSchoolbook(const Matrix& a, const Matrix& b, const MultiplyOptions& options,
                      const Matrix& c) {
  const int64_t m = options.transpose_a ? a.cols() : a.rows();
  const int64_t k = options.transpose_a ? a.rows() : a.cols();
  const int64_t n = options.transpose_b ? b.rows() : b.cols();
  ASSERT_EQ(c.rows(), m);
  ASSERT_EQ(c.cols(), n);
  ASSERT_EQ(c.dtype(), DType::kUInt32);
  const auto got = c.view().As<uint32_t>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      uint64_t want = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        want += uint64_t{At(a, options.transpose_a, i, kk)} * At(b, options.transpose_b, kk, j);
      }
      ASSERT_EQ(got[i * n + j], static_cast<uint32_t>(want)) << "C[" << i << ", " << j << "]";
    }
  }
}

TEST_F(CudaUint32GemmTest, MatchesSchoolbookForEveryTranspose) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const MultiplyOptions options{.transpose_a = ta, .transpose_b = tb};
      // op(A) 70 x 90, op(B) 90 x 50: edges that fill no tile.
      const Matrix a = ta ? RandomUint32(90, 70, 1) : RandomUint32(70, 90, 1);
      const Matrix b = tb ? RandomUint32(50, 90, 2) : RandomUint32(90, 50, 2);
      absl::StatusOr<MultiplyResult> result = Multiply(a, b, options);
      ASSERT_TRUE(result.ok()) << result.status();
      ExpectSchoolbook(a, b, options, result->c);
    }
  }
}

TEST_F(CudaUint32GemmTest, LargestEntriesWrapAround) {
  const Matrix a = Matrix::FromValues<uint32_t>(3, 257, std::vector<uint32_t>(3 * 257, ~0u));
  const Matrix b = Matrix::FromValues<uint32_t>(257, 2, std::vector<uint32_t>(257 * 2, ~0u));
  absl::StatusOr<MultiplyResult> result = Multiply(a, b);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectSchoolbook(a, b, {}, result->c);
}

TEST_F(CudaUint32GemmTest, OneByOne) {
  const Matrix a = Matrix::FromValues<uint32_t>(1, 1, std::vector<uint32_t>{0x10000u});
  const Matrix b = Matrix::FromValues<uint32_t>(1, 1, std::vector<uint32_t>{0x10001u});
  absl::StatusOr<MultiplyResult> result = Multiply(a, b);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->c.view().As<uint32_t>()[0], 0x10000u);  // 2^32 + 2^16 mod 2^32
}

TEST_F(CudaUint32GemmTest, RefusesOtherDTypes) {
  const Matrix a = Matrix::FromValues<double>(2, 2, std::vector<double>(4, 1.0));
  EXPECT_EQ(Multiply(a, a).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaUint32GemmTest, RefusesDisagreeingInnerDimensions) {
  EXPECT_EQ(Multiply(RandomUint32(2, 3, 1), RandomUint32(4, 2, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace matrixd::cuda
