// Freivalds' check of products (core/freivalds.h): correct products pass and a product with one
// wrong entry fails, for every floating dtype, random and ill-scaled inputs, with and without
// transposes, called directly on the CPU and on a device, and through Multiply(verify) on both
// backends (block-sparse included).
#include "core/cpu/freivalds.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/backend.h"
#include "core/cpu/multiply.h"
#include "core/freivalds.h"
#include "core/validation.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"
#include "tests/core/dense_test_support.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/freivalds.h"
#include "core/cuda/multiply.h"
#include "tests/core/device_copy_support.h"
#endif

namespace matrixd {
namespace {

using testing::RandomMatrix;
using testing::Real;

// C = op(A) op(B) by the CPU backend's gemm: the product the check must accept.
Matrix Product(const Matrix& a, const Matrix& b, bool transpose_a = false,
               bool transpose_b = false) {
  auto result = cpu::Multiply(a.view(), b.view(),
                              {.transpose_a = transpose_a, .transpose_b = transpose_b}, 1, nullptr);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? std::move(result->c) : Matrix();
}

// The smallest change of one entry the check is sure to catch (core/freivalds.h):
// tolerance * ||A||_F ||B||_F sqrt(n).
template <typename T>
double DetectionThreshold(const Matrix& a, const Matrix& b, int64_t k, int64_t n) {
  const auto norm = [](const Matrix& x) {
    return static_cast<double>(testing::Norm(testing::Widen<T>(x)));
  };
  return FreivaldsTolerance(a.dtype(), k, n) * norm(a) * norm(b) *
         std::sqrt(static_cast<double>(n));
}

// A copy of c with entry (i, j) moved by `delta`.
template <typename T>
Matrix Corrupted(const Matrix& c, int64_t i, int64_t j, double delta) {
  Matrix copy = Matrix::CopyOf(c.view());
  copy.As<T>()[static_cast<size_t>(i * c.cols() + j)] += static_cast<Real<T>>(delta);
  return copy;
}

// A with row i scaled by 2^(e_i) and B with column j by 2^(f_j), exponents spread over
// [-spread, spread]: entries of very different sizes, norms dominated by a few of them.
template <typename T>
Matrix GradedRows(Matrix x, int spread, bool columns) {
  T* data = x.As<T>().data();
  const int64_t lines = columns ? x.cols() : x.rows();
  for (int64_t i = 0; i < x.rows(); ++i) {
    for (int64_t j = 0; j < x.cols(); ++j) {
      const int64_t line = columns ? j : i;
      const int e = lines > 1 ? static_cast<int>(-spread + 2 * spread * line / (lines - 1)) : 0;
      data[i * x.cols() + j] *= static_cast<Real<T>>(std::ldexp(1.0, e));
    }
  }
  return x;
}

TEST(Freivalds, CorrectProductsPassAndOneWrongEntryFailsForEveryDType) {
  testing::ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    const int64_t m = 37, k = 53, n = 29;
    const Matrix a = RandomMatrix<T>(m, k, 1);
    const Matrix b = RandomMatrix<T>(k, n, 2);
    const Matrix c = Product(a, b);
    auto check = cpu::CheckProduct(a.view(), b.view(), c.view(), false, false, {.seed = 7});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << check->discrepancy << " > " << check->tolerance;
    EXPECT_LT(check->discrepancy, check->tolerance / 4) << "the tolerance should not be tight";
    EXPECT_EQ(check->vectors, kFreivaldsVectors);
    EXPECT_EQ(check->seed, 7u);

    const double delta = 2 * DetectionThreshold<T>(a, b, k, n);
    const Matrix bad = Corrupted<T>(c, 11, 17, delta);
    auto caught = cpu::CheckProduct(a.view(), b.view(), bad.view(), false, false, {.seed = 7});
    ASSERT_TRUE(caught.ok()) << caught.status();
    EXPECT_FALSE(caught->passed) << caught->discrepancy << " <= " << caught->tolerance;
  });
}

TEST(Freivalds, Float64CatchesAnEntryOffByOneMillionthOfItsSize) {
  const int64_t n = 256;
  const Matrix a = RandomMatrix<double>(n, n, 3);
  const Matrix b = RandomMatrix<double>(n, n, 4);
  const Matrix c = Product(a, b);
  const double entry = c.As<double>()[5 * n + 9];
  const Matrix bad = Corrupted<double>(c, 5, 9, 1e-6 * std::abs(entry));
  for (uint64_t seed = 0; seed < 8; ++seed) {
    auto check = cpu::CheckProduct(a.view(), b.view(), bad.view(), false, false, {.seed = seed});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_FALSE(check->passed) << "seed " << seed << ": " << check->discrepancy;
  }
}

TEST(Freivalds, IllScaledProductsPassAndAWrongLargestEntryFails) {
  testing::ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    // 2^(2 spread) between the largest and smallest rows: 2^60 in float32, 2^400 in float64.
    const int spread = std::is_same_v<Real<T>, float> ? 30 : 200;
    const int64_t m = 40, k = 24, n = 33;
    const Matrix a = GradedRows<T>(RandomMatrix<T>(m, k, 5), spread, false);
    const Matrix b = GradedRows<T>(RandomMatrix<T>(k, n, 6), spread, true);
    const Matrix c = Product(a, b);
    auto check = cpu::CheckProduct(a.view(), b.view(), c.view(), false, false, {.seed = 1});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << check->discrepancy << " > " << check->tolerance;
    // The last row of A and column of B are the largest: so is C's corner entry.
    const Matrix bad = Corrupted<T>(c, m - 1, n - 1, 2 * DetectionThreshold<T>(a, b, k, n));
    auto caught = cpu::CheckProduct(a.view(), b.view(), bad.view(), false, false, {.seed = 1});
    ASSERT_TRUE(caught.ok()) << caught.status();
    EXPECT_FALSE(caught->passed) << caught->discrepancy;
  });
}

TEST(Freivalds, DiscrepancyIsScaleInvariant) {
  const Matrix a = RandomMatrix<double>(20, 30, 8);
  const Matrix b = RandomMatrix<double>(30, 10, 9);
  const Matrix c = Corrupted<double>(Product(a, b), 3, 4, 0.5);
  // Powers of two scale exactly, so the discrepancy must not move at all.
  const Matrix big_a = RandomMatrix<double>(20, 30, 8, std::ldexp(1.0, 100));
  const Matrix big_c = Corrupted<double>(Product(big_a, b), 3, 4, std::ldexp(0.5, 100));
  auto small = cpu::CheckProduct(a.view(), b.view(), c.view(), false, false, {.seed = 3});
  auto large = cpu::CheckProduct(big_a.view(), b.view(), big_c.view(), false, false, {.seed = 3});
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_DOUBLE_EQ(small->discrepancy, large->discrepancy);
  EXPECT_FALSE(small->passed);
}

TEST(Freivalds, TransposedOperandsAreCheckedAsTheProductSawThem) {
  testing::ForEachFloatingType([](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = RandomMatrix<T>(21, 14, 10);  // op(A) = A^T: 14 x 21
    const Matrix b = RandomMatrix<T>(9, 21, 11);   // op(B) = B^T: 21 x 9
    const Matrix c = Product(a, b, true, true);
    auto check = cpu::CheckProduct(a.view(), b.view(), c.view(), true, true, {.seed = 2});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << check->discrepancy;
    // Read without the transposes the shapes no longer make a product.
    EXPECT_EQ(cpu::CheckProduct(a.view(), b.view(), c.view(), false, false, {}).status().code(),
              absl::StatusCode::kInvalidArgument);
  });
}

TEST(Freivalds, HugeAndTinyEntriesNeitherOverflowNorUnderflowTheCheck) {
  // C near 2^1000: rounding differences near 2^950, whose squares would overflow; and the mirror
  // image near 2^-1000, whose squares would underflow to zero.
  for (const int e : {600, -600}) {
    const Matrix a = RandomMatrix<double>(20, 16, 15, std::ldexp(1.0, e));
    const Matrix b = RandomMatrix<double>(16, 12, 16, std::ldexp(1.0, e > 0 ? 400 : -400));
    const Matrix c = Product(a, b);
    auto check = cpu::CheckProduct(a.view(), b.view(), c.view(), false, false, {.seed = 4});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << e << ": " << check->discrepancy;
    const double threshold = DetectionThreshold<double>(a, b, 16, 12);
    auto caught =
        cpu::CheckProduct(a.view(), b.view(), Corrupted<double>(c, 3, 5, 2 * threshold).view(),
                          false, false, {.seed = 4});
    ASSERT_TRUE(caught.ok()) << caught.status();
    EXPECT_FALSE(caught->passed) << e;
  }
}

TEST(Freivalds, ZeroOperandsPassOnlyWithAZeroProduct) {
  const Matrix a(8, 8, DType::kFloat64);
  const Matrix b = RandomMatrix<double>(8, 8, 12);
  const Matrix c(8, 8, DType::kFloat64);
  auto check = cpu::CheckProduct(a.view(), b.view(), c.view(), false, false, {});
  ASSERT_TRUE(check.ok());
  EXPECT_TRUE(check->passed);
  EXPECT_EQ(check->discrepancy, 0.0);
  const Matrix bad = Corrupted<double>(c, 0, 0, 1e-300);  // its square underflows
  auto caught = cpu::CheckProduct(a.view(), b.view(), bad.view(), false, false, {});
  ASSERT_TRUE(caught.ok());
  EXPECT_FALSE(caught->passed);
  EXPECT_EQ(caught->discrepancy, std::numeric_limits<double>::infinity());
}

TEST(Freivalds, NonFiniteProductFails) {
  const Matrix a = RandomMatrix<float>(4, 4, 13);
  const Matrix b = RandomMatrix<float>(4, 4, 14);
  const Matrix bad = Corrupted<float>(Product(a, b), 1, 2, std::numeric_limits<double>::infinity());
  auto check = cpu::CheckProduct(a.view(), b.view(), bad.view(), false, false, {});
  ASSERT_TRUE(check.ok());
  EXPECT_FALSE(check->passed);
}

TEST(Freivalds, SameSeedSameVectorsAndSignsOnly) {
  const Matrix x = FreivaldsVectors(100, 8, 42, DType::kComplex64);
  const Matrix y = FreivaldsVectors(100, 8, 42, DType::kComplex64);
  ASSERT_EQ(x.byte_size(), y.byte_size());
  EXPECT_EQ(std::memcmp(x.bytes(), y.bytes(), x.byte_size()), 0);
  int plus = 0;
  for (const std::complex<float> v : x.As<std::complex<float>>()) {
    EXPECT_TRUE(v == std::complex<float>(1) || v == std::complex<float>(-1));
    plus += v.real() > 0 ? 1 : 0;
  }
  EXPECT_GT(plus, 300);  // 800 fair signs
  EXPECT_LT(plus, 500);
}

TEST(Freivalds, VectorsByVectorAreTheSameSignsTransposed) {
  const Matrix x = FreivaldsVectors(37, 11, 9, DType::kFloat64);
  const Matrix t = FreivaldsVectorsByVector(37, 11, 9, DType::kFloat64);
  ASSERT_EQ(t.rows(), 11);
  ASSERT_EQ(t.cols(), 37);
  for (int64_t i = 0; i < 37; ++i) {
    for (int64_t j = 0; j < 11; ++j)
      EXPECT_EQ(t.As<double>()[j * 37 + i], x.As<double>()[i * 11 + j]);
  }
}

TEST(Freivalds, VerdictFromNormsMatchesTheVerdictFromTheVectors) {
  const Matrix a = RandomMatrix<double>(30, 20, 17);
  const Matrix b = RandomMatrix<double>(20, 10, 18);
  const Matrix x = FreivaldsVectors(10, 8, 3, DType::kFloat64);
  const Matrix z = Product(a, Product(b, x));
  const Matrix w = Corrupted<double>(Product(Product(a, b), x), 4, 2, 1e-9);
  const FreivaldsOptions options{.seed = 3};
  const ProductCheck from_vectors = FreivaldsVerdict(z.view(), w.view(), 2.0, 3.0, 20, 10, options);
  std::vector<double> norms(8);
  for (int j = 0; j < 8; ++j) {
    long double sum = 0;
    for (int64_t i = 0; i < 30; ++i) {
      const long double d = z.As<double>()[i * 8 + j] - w.As<double>()[i * 8 + j];
      sum += d * d;
    }
    norms[static_cast<size_t>(j)] = static_cast<double>(std::sqrt(sum));
  }
  const ProductCheck from_norms =
      FreivaldsVerdictFromNorms(norms, 2.0, 3.0, DType::kFloat64, 20, 10, options);
  EXPECT_EQ(from_norms.passed, from_vectors.passed);
  EXPECT_DOUBLE_EQ(from_norms.discrepancy, from_vectors.discrepancy);
  EXPECT_EQ(from_norms.tolerance, from_vectors.tolerance);
  norms[5] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(FreivaldsVerdictFromNorms(norms, 2.0, 3.0, DType::kFloat64, 20, 10, options).passed);
}

TEST(Freivalds, RejectsIntegerDTypesAndBadVectorCounts) {
  const Matrix u(4, 4, DType::kUInt32);
  EXPECT_EQ(cpu::CheckProduct(u.view(), u.view(), u.view(), false, false, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Matrix f(4, 4, DType::kFloat64);
  EXPECT_EQ(
      cpu::CheckProduct(f.view(), f.view(), f.view(), false, false, {.vectors = 0}).status().code(),
      absl::StatusCode::kInvalidArgument);
  const Limits limits;
  const absl::Status s = ValidateMultiply(u.view(), u.view(), {.verify = true}, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("verify"), std::string::npos) << s.message();
}

#ifdef MATRIXD_HAVE_CUDA
// Every tuning of the device check (core/cuda/freivalds.h): our kernels beside the upload (the
// default; A in pieces of 64 MiB, so one piece here), the same with A cut into many small pieces
// (one row; a few rows and the last piece halved down to 1250 bytes), B's part alone beside (A's
// after the product), our kernels all on the stream, cuBLAS gemm and nrm2; the default with each
// warp loading M's rows instead of the staged kernel.
const cuda::FreivaldsTuning kDeviceTunings[] = {
    {.own_kernels = true, .beside_upload = true},
    {.own_kernels = true, .beside_upload = true, .staged_rows = false},
    {.own_kernels = true, .beside_upload = true, .a_piece_bytes = 1000},
    {.own_kernels = true, .beside_upload = true, .a_piece_bytes = 20000, .last_piece_bytes = 1250},
    {.own_kernels = true, .beside_upload = true, .a_piece_bytes = 0},
    {.own_kernels = true, .beside_upload = false},
    {.own_kernels = false, .beside_upload = false}};

// Sets a tuning for the scope, the defaults again after it.
class ScopedFreivaldsTuning {
 public:
  explicit ScopedFreivaldsTuning(const cuda::FreivaldsTuning& tuning) {
    cuda::SetFreivaldsTuning(tuning);
  }
  ~ScopedFreivaldsTuning() { cuda::SetFreivaldsTuning({}); }
};

class FreivaldsOnDevice : public ::testing::TestWithParam<cuda::FreivaldsTuning> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    auto context = cuda::DeviceContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
    ASSERT_TRUE(context_->Activate().ok());
  }

  // The device check of c = op(a) op(b) on device copies of the three, under the test's tuning,
  // the way a product runs it: begun before A's upload, A's pieces landing one by one (the
  // copies are there already), the join, then the rest.
  absl::StatusOr<ProductCheck> Check(const Matrix& a, const Matrix& b, const Matrix& c,
                                     bool transpose_a, bool transpose_b,
                                     const FreivaldsOptions& options) {
    const ScopedFreivaldsTuning tuning(GetParam());
    const cuda::DeviceBuffer da = testing::UploadToDevice(*context_, a);
    const cuda::DeviceBuffer db = testing::UploadToDevice(*context_, b);
    const cuda::DeviceBuffer dc = testing::UploadToDevice(*context_, c);
    MATRIXD_ASSIGN_OR_RETURN(
        std::unique_ptr<cuda::ProductCheckInFlight> check,
        cuda::ProductCheckInFlight::Begin(testing::DeviceView(a, da), testing::DeviceView(b, db),
                                          testing::DeviceView(c, dc), transpose_a, transpose_b,
                                          *context_, options, /*a_upload_follows=*/true));
    for (size_t piece = 0; piece < check->a_pieces().size(); ++piece) {
      MATRIXD_RETURN_IF_ERROR(check->APieceLanded(piece));
    }
    MATRIXD_RETURN_IF_ERROR(check->JoinBeforeProduct());
    return check->Finish();
  }

  std::unique_ptr<cuda::DeviceContext> context_;
};

TEST_P(FreivaldsOnDevice, CorrectProductsPassAndOneWrongEntryFails) {
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const int64_t m = 70, k = 45, n = 33;
    const Matrix a = RandomMatrix<T>(k, m, 21);  // checked as op(A) = A^T
    const Matrix b = RandomMatrix<T>(k, n, 22);
    const Matrix c = Product(a, b, true, false);
    const Matrix bad = Corrupted<T>(c, 50, 20, 2 * DetectionThreshold<T>(a, b, k, n));
    auto check = Check(a, b, c, true, false, {.seed = 5});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << check->discrepancy << " > " << check->tolerance;
    auto caught = Check(a, b, bad, true, false, {.seed = 5});
    ASSERT_TRUE(caught.ok()) << caught.status();
    EXPECT_FALSE(caught->passed) << caught->discrepancy;
  });
}

TEST_P(FreivaldsOnDevice, BothTransposedAndMoreVectorsThanOnePass) {
  // 11 vectors: the thin products go in two passes (core/cuda/thin_product.h).
  const int64_t m = 300, k = 129, n = 257;
  const Matrix a = RandomMatrix<double>(k, m, 23);
  const Matrix b = RandomMatrix<double>(n, k, 24);
  const Matrix c = Product(a, b, true, true);
  const Matrix bad = Corrupted<double>(c, 299, 0, 2 * DetectionThreshold<double>(a, b, k, n));
  const FreivaldsOptions options{.vectors = 11, .seed = 6};
  auto check = Check(a, b, c, true, true, options);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << check->discrepancy << " > " << check->tolerance;
  EXPECT_EQ(check->vectors, 11);
  auto caught = Check(a, b, bad, true, true, options);
  ASSERT_TRUE(caught.ok()) << caught.status();
  EXPECT_FALSE(caught->passed) << caught->discrepancy;
}

TEST_P(FreivaldsOnDevice, HugeAndTinyEntriesNeitherOverflowNorUnderflowTheNorms) {
  // Squares of entries near 2^±600 leave double's range: the norms then come from nrm2.
  for (const int e : {600, -600}) {
    SCOPED_TRACE(e);
    const Matrix a = RandomMatrix<double>(20, 16, 15, std::ldexp(1.0, e));
    const Matrix b = RandomMatrix<double>(16, 12, 16, std::ldexp(1.0, e > 0 ? 400 : -400));
    const Matrix c = Product(a, b);
    auto check = Check(a, b, c, false, false, {.seed = 4});
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << check->discrepancy;
    const double threshold = DetectionThreshold<double>(a, b, 16, 12);
    auto caught = Check(a, b, Corrupted<double>(c, 3, 5, 2 * threshold), false, false, {.seed = 4});
    ASSERT_TRUE(caught.ok()) << caught.status();
    EXPECT_FALSE(caught->passed);
  }
}

TEST_P(FreivaldsOnDevice, TheSameSeedGivesTheSameDiscrepancyBitForBit) {
  // What deterministic requests promise (docs/accuracy.md): no atomics in the check's sums.
  const Matrix a = RandomMatrix<double>(200, 150, 25);
  const Matrix b = RandomMatrix<double>(150, 100, 26);
  const Matrix c = Product(a, b);
  auto first = Check(a, b, c, false, false, {.seed = kDeterministicFreivaldsSeed});
  auto second = Check(a, b, c, false, false, {.seed = kDeterministicFreivaldsSeed});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(first->passed);
  EXPECT_GT(first->discrepancy, 0.0);  // rounding noise, not an exact zero
  EXPECT_EQ(first->discrepancy, second->discrepancy);
}

TEST_P(FreivaldsOnDevice, MultiplyUploadsAInPiecesAndChecksTheProduct) {
  // Through the product itself (core/cuda/multiply.cc): A's upload cut as the tuning says, the
  // product's wait for the side lane recorded as "freivalds_wait"; a block-sparse product checks
  // after the product, its pieces landing at once.
  const ScopedFreivaldsTuning tuning(GetParam());
  const cuda::FreivaldsTuning& t = GetParam();
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = RandomMatrix<T>(103, 70, 36);
    const Matrix b = RandomMatrix<T>(70, 29, 37);
    const Matrix want = Product(a, b);
    for (const int64_t block_size : {int64_t{0}, int64_t{16}}) {
      SCOPED_TRACE(block_size);
      auto result = cuda::Multiply(a.view(), b.view(), {.block_size = block_size, .verify = true},
                                   *context_, nullptr);
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_TRUE(result->check.has_value());
      EXPECT_TRUE(result->check->passed) << result->check->discrepancy;
      EXPECT_LE(testing::DistanceNorm(testing::Widen<T>(result->c), testing::Widen<T>(want)),
                1e-3L * testing::Norm(testing::Widen<T>(want)));
      int records = 0;
      int waits = 0;
      for (const KernelRecord& kernel : result->stats.kernels) {
        if (kernel.kernel == "freivalds") {
          ++records;
          EXPECT_GT(kernel.seconds, 0.0);
        }
        if (kernel.kernel == "freivalds_wait") ++waits;
      }
      EXPECT_EQ(records, 1);
      // The dense product waits for the side lane once A came in pieces.
      const bool pieces = t.own_kernels && t.beside_upload && t.a_piece_bytes > 0;
      EXPECT_EQ(waits, pieces && block_size == 0 ? 1 : 0);
    }
  });
}

TEST_P(FreivaldsOnDevice, MultiplyReadsOperandsOnTheDeviceInPlace) {
  // Resident operands (device views): the product and its check read them where they lie — no
  // copies (only C and the check's vectors are allocated), nothing beside the product (no
  // upload to hide behind) and so no wait.
  const ScopedFreivaldsTuning tuning(GetParam());
  const Matrix a = RandomMatrix<double>(300, 200, 38);
  const Matrix b = RandomMatrix<double>(250, 200, 39);  // used as op(B) = B^T
  const cuda::DeviceBuffer da = testing::UploadToDevice(*context_, a);
  const cuda::DeviceBuffer db = testing::UploadToDevice(*context_, b);
  const uint64_t before = context_->memory_statistics().total_bytes;
  auto result = cuda::Multiply(testing::DeviceView(a, da), testing::DeviceView(b, db),
                               {.transpose_b = true, .verify = true}, *context_, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  const uint64_t allocated = context_->memory_statistics().total_bytes - before;
  ASSERT_TRUE(result->check.has_value());
  EXPECT_TRUE(result->check->passed) << result->check->discrepancy;
  const Matrix want = Product(a, b, false, true);
  EXPECT_LE(testing::DistanceNorm(testing::Widen<double>(result->c), testing::Widen<double>(want)),
            1e-12L * testing::Norm(testing::Widen<double>(want)));
  EXPECT_LT(allocated, a.byte_size() + result->c.byte_size());
  for (const KernelRecord& kernel : result->stats.kernels) {
    EXPECT_NE(kernel.kernel, "freivalds_wait");
    EXPECT_NE(kernel.kernel, "freivalds_b");
  }
}

INSTANTIATE_TEST_SUITE_P(Tunings, FreivaldsOnDevice, ::testing::ValuesIn(kDeviceTunings),
                         [](const ::testing::TestParamInfo<cuda::FreivaldsTuning>& info) {
                           const cuda::FreivaldsTuning& t = info.param;
                           std::string pieces;
                           if (t.beside_upload) {
                             pieces = t.a_piece_bytes == 0
                                          ? "WholeA"
                                          : absl::StrCat("APieces", t.a_piece_bytes, "Last",
                                                         t.last_piece_bytes);
                           }
                           return std::string(t.own_kernels ? "Own" : "Cublas") +
                                  (t.beside_upload ? "Beside" : "After") + pieces +
                                  (t.staged_rows ? "" : "Unstaged");
                         });
#endif

// ---- Through Multiply(verify) on both backends ----

class VerifiedMultiplyTest : public testing::BackendTest {};

TEST_P(VerifiedMultiplyTest, VerifiedProductsPassAndRecordTheCheck) {
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = RandomMatrix<T>(64, 48, 31);
    const Matrix b = RandomMatrix<T>(40, 48, 32);
    for (const int64_t block_size : {int64_t{0}, int64_t{16}}) {
      SCOPED_TRACE(block_size);
      auto result = backend().Multiply(
          a.view(), b.view(), {.transpose_b = true, .block_size = block_size, .verify = true},
          nullptr);
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_TRUE(result->check.has_value());
      EXPECT_TRUE(result->check->passed) << result->check->discrepancy;
      EXPECT_EQ(result->check->vectors, kFreivaldsVectors);
      bool recorded = false;
      for (const KernelRecord& kernel : result->stats.kernels) {
        recorded = recorded || kernel.kernel == "freivalds";
      }
      EXPECT_TRUE(recorded);
    }
  });
}

TEST_P(VerifiedMultiplyTest, TransposedAAndRaggedShapesPass) {
  // op(A) = A^T and A itself, 103 rows (no block of the CUDA kernels divides it), 70 columns.
  const Matrix b = RandomMatrix<double>(70, 29, 35);
  for (const bool transpose_a : {true, false}) {
    SCOPED_TRACE(transpose_a);
    const Matrix a =
        transpose_a ? RandomMatrix<double>(70, 103, 34) : RandomMatrix<double>(103, 70, 34);
    auto result = backend().Multiply(a.view(), b.view(),
                                     {.transpose_a = transpose_a, .verify = true}, nullptr);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->check.has_value());
    EXPECT_TRUE(result->check->passed) << result->check->discrepancy;
    EXPECT_EQ(result->c.rows(), 103);
  }
}

TEST_P(VerifiedMultiplyTest, UnverifiedProductsCarryNoCheck) {
  const Matrix a = RandomMatrix<double>(8, 8, 33);
  auto result = backend().Multiply(a.view(), a.view(), {}, nullptr);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->check.has_value());
}

TEST_P(VerifiedMultiplyTest, SupportsRejectsVerifyOfUInt32) {
  const Matrix u(4, 4, DType::kUInt32);
  const MultiplyOptions options{.verify = true};
  EXPECT_EQ(backend().Supports(MultiplyQuery(u.view(), u.view(), options)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend().Multiply(u.view(), u.view(), options, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(VerifiedMultiplyTest);

}  // namespace
}  // namespace matrixd
