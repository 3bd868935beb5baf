// The thin products of Freivalds' check on a device (core/cuda/thin_product.h): op(M) X and the
// sum of |m|^2 against a product in long double, for every floating dtype, both orientations,
// shapes no block divides and X wider than one pass; the same bits on every run; bad arguments
// refused. Skipped without a device.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/thin_product.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/core/device_copy_support.h"

namespace matrixd {
namespace {

using testing::DeviceView;
using testing::DownloadMatrix;
using testing::RandomMatrix;
using testing::UploadToDevice;
using testing::WideMatrix;

class ThinProductTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    absl::StatusOr<std::unique_ptr<cuda::DeviceContext>> context = cuda::DeviceContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
    ASSERT_TRUE(context_->Activate().ok());
  }

  struct Output {
    Matrix out;
    std::vector<double> partials;
  };

  // op(m) X and the partial sums of squares, computed on the device; `vectors` holds X's columns
  // as its rows (s x inner, the kernels' vector-major layout), and so does the output (s x outer).
  Output Run(const Matrix& m, const Matrix& vectors, bool transpose, bool staged = true) {
    const int64_t outer = transpose ? m.cols() : m.rows();
    const int s = static_cast<int>(vectors.rows());
    const Matrix& x = vectors;
    const cuda::DeviceBuffer dm = UploadToDevice(*context_, m);
    const cuda::DeviceBuffer dx = UploadToDevice(*context_, x);
    const Matrix zeros(s, outer, m.dtype());
    const cuda::DeviceBuffer dout = UploadToDevice(*context_, zeros);
    const int64_t partials = cuda::ThinProductPartials(m.dtype(), m.rows(), m.cols(), transpose);
    absl::StatusOr<cuda::DeviceBuffer> squares =
        context_->Allocate(static_cast<size_t>(partials) * sizeof(double));
    absl::StatusOr<cuda::DeviceBuffer> scratch =
        context_->Allocate(cuda::ThinProductScratchBytes(m.dtype(), m.rows(), m.cols(), transpose));
    EXPECT_TRUE(squares.ok() && scratch.ok());
    if (!squares.ok() || !scratch.ok()) return {};
    const absl::Status launched =
        cuda::LaunchThinProduct({.dtype = m.dtype(),
                                 .m = dm.data(),
                                 .rows = m.rows(),
                                 .cols = m.cols(),
                                 .transpose = transpose,
                                 .x = dx.data(),
                                 .s = s,
                                 .out = dout.data(),
                                 .square_partials = static_cast<double*>(squares->data()),
                                 .scratch = scratch->data(),
                                 .staged = staged},
                                context_->stream());
    EXPECT_TRUE(launched.ok()) << launched;
    Output output{.out = DownloadMatrix(*context_, dout, s, outer, m.dtype()),
                  .partials = std::vector<double>(static_cast<size_t>(partials))};
    EXPECT_TRUE(context_->Download(*squares, output.partials.data(), squares->bytes()).ok());
    return output;
  }

  std::unique_ptr<cuda::DeviceContext> context_;
};

TEST_F(ThinProductTest, MatchesAWideProductForEveryDTypeShapeAndOrientation) {
  struct Shape {
    int64_t rows, cols;
  };
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const double u = sizeof(testing::Real<T>) == 4 ? 0x1p-24 : 0x1p-53;
    // 130 x 96: float32's 16-byte loads (96 columns, a multiple of 4), rows no block divides.
    // 40 x 4099 and 70 x 2048: few rows of many columns, M X cut into column segments (a ragged
    // last one; 16-byte loads for float32).
    for (const Shape shape : {Shape{1, 1}, Shape{37, 1001}, Shape{300, 70}, Shape{513, 257},
                              Shape{130, 96}, Shape{40, 4099}, Shape{70, 2048}}) {
      for (const bool transpose : {false, true}) {
        for (const int s : {1, 3, 8, 11}) {
          SCOPED_TRACE(::testing::Message()
                       << DTypeName(DTypeOf<T>()) << " " << shape.rows << "x" << shape.cols
                       << " transpose " << transpose << " s " << s);
          const Matrix m = RandomMatrix<T>(shape.rows, shape.cols, 40 + s);
          const int64_t inner = transpose ? shape.rows : shape.cols;
          const Matrix vectors = RandomMatrix<T>(s, inner, 50 + s);
          const Output got = Run(m, vectors, transpose);
          const auto wide_m = testing::Widen<T>(m);
          const auto op_m = transpose ? testing::Transpose(wide_m) : wide_m;
          const auto wide_x = testing::Transpose(testing::Widen<T>(vectors));
          const auto want = testing::Product(op_m, wide_x);
          // Any order of the inner sums: |error| <= gamma_inner |op(M)| |X| (complex: twice).
          const long double bound = 2.0L * static_cast<long double>(inner + 2) * u *
                                    testing::Norm(wide_m) * testing::Norm(wide_x);
          EXPECT_LE(testing::DistanceNorm(testing::Transpose(testing::Widen<T>(got.out)), want),
                    bound);
          long double squares = 0;
          for (const double p : got.partials) squares += p;
          const long double norm = testing::Norm(wide_m);
          EXPECT_NEAR(static_cast<double>(squares / (norm * norm)), 1.0, 1e-12);
        }
      }
    }
  });
}

TEST_F(ThinProductTest, SameBitsOnEveryRun) {
  const Matrix m = RandomMatrix<double>(1000, 777, 61);
  for (const bool transpose : {false, true}) {
    const Matrix x = RandomMatrix<double>(8, transpose ? 1000 : 777, 62);
    const Output first = Run(m, x, transpose);
    const Output second = Run(m, x, transpose);
    ASSERT_EQ(first.out.byte_size(), second.out.byte_size());
    EXPECT_EQ(std::memcmp(first.out.bytes(), second.out.bytes(), first.out.byte_size()), 0);
    EXPECT_EQ(first.partials, second.partials);
  }
}

// M X with M's rows staged in shared memory by bulk copies (rows whole 16-byte units) gives the
// bits of each warp loading its rows: every dtype; rows no block divides; chunks of 1 KiB a row
// with a ragged last one and more of them than stages; column segments for few rows; X of one,
// three, eight and eleven (two passes) vectors. Shapes whose rows are not whole 16-byte units
// take the warps' kernel either way.
TEST_F(ThinProductTest, StagedRowsGiveTheBitsOfWarpLoads) {
  struct Shape {
    int64_t rows, cols;
  };
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const Shape shape : {Shape{1, 4}, Shape{300, 1028}, Shape{33, 4096}, Shape{70, 2048},
                              Shape{130, 96}, Shape{17, 36}, Shape{513, 257}}) {
      for (const int s : {1, 3, 8, 11}) {
        SCOPED_TRACE(::testing::Message() << DTypeName(DTypeOf<T>()) << " " << shape.rows << "x"
                                          << shape.cols << " s " << s);
        const Matrix m = RandomMatrix<T>(shape.rows, shape.cols, 80 + s);
        const Matrix x = RandomMatrix<T>(s, shape.cols, 90 + s);
        const Output staged = Run(m, x, /*transpose=*/false, /*staged=*/true);
        const Output warps = Run(m, x, /*transpose=*/false, /*staged=*/false);
        ASSERT_EQ(staged.out.byte_size(), warps.out.byte_size());
        EXPECT_EQ(std::memcmp(staged.out.bytes(), warps.out.bytes(), staged.out.byte_size()), 0);
        EXPECT_EQ(staged.partials, warps.partials);
        // And not two runs of nothing: entry 0 of vector 0 against a long double dot product.
        const auto wide_m = testing::Widen<T>(m);
        const auto wide_x = testing::Widen<T>(x);
        testing::Wide<T> want{};
        long double scale = 0;
        for (int64_t j = 0; j < shape.cols; ++j) {
          want += testing::Mul(wide_m.v[j], wide_x.v[j]);
          scale += std::sqrt(testing::Abs2(wide_m.v[j]) * testing::Abs2(wide_x.v[j]));
        }
        const auto got = testing::Widen<T>(staged.out).v[0];
        EXPECT_LE(std::sqrt(testing::Abs2(got - want)), 1e-5L * scale);
        EXPECT_GT(scale, 0);
      }
    }
  });
}

TEST_F(ThinProductTest, DifferenceNormsMatchAWideComputationAndKeepNaN) {
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    for (const int64_t length : {int64_t{1}, int64_t{300}, int64_t{5000}}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(DTypeOf<T>()) << " length " << length);
      const int s = 3;
      const Matrix z = RandomMatrix<T>(s, length, 71);
      Matrix w = RandomMatrix<T>(s, length, 72);
      // Vector 1: huge differences (their squares overflow unless scaled); vector 2: a NaN.
      using R = testing::Real<T>;
      // Squares far beyond R's range (and double's for float64), the norm itself within it.
      const R huge = std::numeric_limits<R>::max() / static_cast<R>(8 * length);
      for (int64_t i = 0; i < length; ++i) w.As<T>()[length + i] = T(huge);
      w.As<T>()[2 * length + length / 2] = T(std::numeric_limits<R>::quiet_NaN());
      const cuda::DeviceBuffer dz = UploadToDevice(*context_, z);
      const cuda::DeviceBuffer dw = UploadToDevice(*context_, w);
      absl::StatusOr<cuda::DeviceBuffer> norms = context_->Allocate(s * sizeof(double));
      ASSERT_TRUE(norms.ok());
      ASSERT_TRUE(cuda::LaunchDifferenceNorms(DTypeOf<T>(), dz.data(), dw.data(), length, s,
                                              static_cast<double*>(norms->data()),
                                              context_->stream())
                      .ok());
      std::vector<double> got(s);
      ASSERT_TRUE(context_->Download(*norms, got.data(), s * sizeof(double)).ok());
      const auto wide_z = testing::Widen<T>(z);
      const auto wide_w = testing::Widen<T>(w);
      for (int v = 0; v < 2; ++v) {
        long double sum = 0;
        for (int64_t i = 0; i < length; ++i) {
          sum += testing::Abs2(wide_z.v[v * length + i] - wide_w.v[v * length + i]);
        }
        EXPECT_NEAR(got[v] / static_cast<double>(std::sqrt(sum)), 1.0, 1e-13) << "vector " << v;
      }
      EXPECT_TRUE(std::isnan(got[2]));
    }
  });
}

// A row piece of a taller M writes its rows of M X in place (out_stride = M's rows), as
// Freivalds' check does for each piece of A as it lands; the pieces together give the whole
// product's bits, and nothing outside a piece's rows is written.
TEST_F(ThinProductTest, RowPiecesWriteTheirRowsOfTheWholeProduct) {
  const int64_t rows = 300;
  const int64_t cols = 3000;
  const int s = 11;  // two passes
  const Matrix m = RandomMatrix<double>(rows, cols, 71);
  const Matrix x = RandomMatrix<double>(s, cols, 72);
  const Output whole = Run(m, x, /*transpose=*/false);
  const cuda::DeviceBuffer dm = UploadToDevice(*context_, m);
  const cuda::DeviceBuffer dx = UploadToDevice(*context_, x);
  Matrix sentinel(s, rows, DType::kFloat64);
  for (double& value : sentinel.As<double>()) value = -7.0;
  const cuda::DeviceBuffer dout = UploadToDevice(*context_, sentinel);
  const int64_t piece_rows[] = {1, 64, 100, 35};  // rows 0 .. 199; 200 .. 299 untouched
  int64_t first = 0;
  for (const int64_t piece : piece_rows) {
    absl::StatusOr<cuda::DeviceBuffer> scratch = context_->Allocate(
        cuda::ThinProductScratchBytes(DType::kFloat64, piece, cols, /*transpose=*/false));
    ASSERT_TRUE(scratch.ok());
    const absl::Status launched =
        cuda::LaunchThinProduct({.dtype = DType::kFloat64,
                                 .m = static_cast<const double*>(dm.data()) + first * cols,
                                 .rows = piece,
                                 .cols = cols,
                                 .x = dx.data(),
                                 .s = s,
                                 .out = static_cast<double*>(dout.data()) + first,
                                 .out_stride = rows,
                                 .scratch = scratch->data()},
                                context_->stream());
    ASSERT_TRUE(launched.ok()) << launched;
    ASSERT_TRUE(context_->Synchronize().ok());
    first += piece;
  }
  const Matrix got = DownloadMatrix(*context_, dout, s, rows, DType::kFloat64);
  for (int v = 0; v < s; ++v) {
    for (int64_t i = 0; i < rows; ++i) {
      const double value = got.As<double>()[v * rows + i];
      if (i < first) {
        // The same bits as one launch over all rows when the segmenting is the same; else within
        // a few rounding errors of it.
        EXPECT_NEAR(value, whole.out.As<double>()[v * rows + i], 1e-10) << v << " " << i;
      } else {
        EXPECT_EQ(value, -7.0) << v << " " << i;
      }
    }
  }
}

TEST_F(ThinProductTest, RefusesIntegerDTypesEmptyMatricesAndNoColumns) {
  const cuda::ThinProductArgs good{.rows = 4, .cols = 4, .s = 8};
  cuda::ThinProductArgs integer = good;
  integer.dtype = DType::kInt64;
  cuda::ThinProductArgs empty = good;
  empty.rows = 0;
  cuda::ThinProductArgs no_columns = good;
  no_columns.s = 0;
  cuda::ThinProductArgs short_stride = good;
  short_stride.out_stride = 3;  // below rows
  cuda::ThinProductArgs transposed_stride = good;
  transposed_stride.transpose = true;
  transposed_stride.out_stride = 8;
  for (const cuda::ThinProductArgs& args :
       {integer, empty, no_columns, short_stride, transposed_stride}) {
    EXPECT_EQ(cuda::LaunchThinProduct(args, context_->stream()).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(cuda::LaunchDifferenceNorms(DType::kInt64, nullptr, nullptr, 4, 8, nullptr,
                                        context_->stream())
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace matrixd
