// The distributed backend against the CPU backend on the same inputs, under mpirun: rank 0 runs the
// tests, the other ranks serve the grid (see main below). With MATRIXD_TEST_DEVICE_ENGINE=1 every
// rank's grid gets the gathering stand-in for the GPU engine (gathering_device_engine.h), blocks
// of 3 for its jobs, so that the GPU engine's path through the grid runs without a GPU. Blocks of
// MATRIXD_TEST_BLOCK (default 4) so that small matrices already span several blocks per rank, and
// sizes that the grid and the block do not divide, or that are smaller than the grid.
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/distributed/distributed_backend.h"
#include "core/distributed/grid_engine_choice.h"
#include "core/distributed/mpi_session.h"
#include "core/distributed/scalapack_grid.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/distributed/gathering_device_engine.h"

namespace matrixd::distributed {
namespace {

Backend* g_distributed = nullptr;
bool g_device_engine = false;

// The engine a grid job of this kind names in its stats.
const char* Engine(const char* on_device) { return g_device_engine ? on_device : "ScaLAPACK"; }

std::unique_ptr<Backend>& Reference() {
  static auto* backend = new std::unique_ptr<Backend>(MakeCpuBackend({.threads = 1}));
  return *backend;
}

double MaxAbsDifference(const Matrix& x, const Matrix& y) {
  EXPECT_EQ(x.rows(), y.rows());
  EXPECT_EQ(x.cols(), y.cols());
  double worst = 0.0;
  for (size_t i = 0; i < x.As<double>().size(); ++i) {
    worst = std::max(worst, std::abs(x.As<double>()[i] - y.As<double>()[i]));
  }
  return worst;
}

// The floating-point dtypes the single-process backend multiplies, and its determinant takes
// (besides int64, whose exact determinant stays on the local backend).
constexpr DType kFloatingDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kComplex64,
                                     DType::kComplex128};

Matrix RandomOf(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  switch (dtype) {
    case DType::kFloat32:
      return testing::RandomMatrix<float>(rows, cols, seed);
    case DType::kComplex64:
      return testing::RandomMatrix<std::complex<float>>(rows, cols, seed);
    case DType::kComplex128:
      return testing::RandomMatrix<std::complex<double>>(rows, cols, seed);
    default:
      return testing::RandomMatrix<double>(rows, cols, seed);
  }
}

template <typename T>
double MaxAbsDifferenceOf(const Matrix& x, const Matrix& y) {
  double worst = 0.0;
  for (size_t i = 0; i < x.As<T>().size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(x.As<T>()[i] - y.As<T>()[i])));
  }
  return worst;
}

// max |x - y| over two matrices of one floating dtype.
double MaxAbsDifferenceAny(const Matrix& x, const Matrix& y) {
  EXPECT_EQ(x.dtype(), y.dtype());
  EXPECT_EQ(x.rows(), y.rows());
  EXPECT_EQ(x.cols(), y.cols());
  switch (x.dtype()) {
    case DType::kFloat32:
      return MaxAbsDifferenceOf<float>(x, y);
    case DType::kComplex64:
      return MaxAbsDifferenceOf<std::complex<float>>(x, y);
    case DType::kComplex128:
      return MaxAbsDifferenceOf<std::complex<double>>(x, y);
    default:
      return MaxAbsDifferenceOf<double>(x, y);
  }
}

// A product's error bound per unit of k for entries in [-1, 1]: a few roundings of the dtype.
double ProductTolerance(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kComplex64 ? 1e-5 : 1e-13;
}

std::string DTypeParamName(DType dtype) { return DTypeName(dtype); }

// Every floating dtype on ScaLAPACK's p?gemm (float64 on the GPU engine where the grid has one),
// for shapes smaller than the grid (1 x 1, 3 x 2 over 2 or 4 ranks) and shapes that neither the
// grid nor the block divides.
class GridMultiplyDTypes
    : public ::testing::TestWithParam<std::tuple<DType, std::tuple<int64_t, int64_t, int64_t>>> {};

TEST_P(GridMultiplyDTypes, EqualsSingleProcess) {
  const DType dtype = std::get<0>(GetParam());
  const auto [m, k, n] = std::get<1>(GetParam());
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true}) {
      const Matrix a = transpose_a ? RandomOf(dtype, k, m, 1) : RandomOf(dtype, m, k, 1);
      const Matrix b = transpose_b ? RandomOf(dtype, n, k, 2) : RandomOf(dtype, k, n, 2);
      const MultiplyOptions options{.transpose_a = transpose_a, .transpose_b = transpose_b};
      JobControl control;
      auto grid = g_distributed->Multiply(a.view(), b.view(), options, &control);
      auto single = Reference()->Multiply(a.view(), b.view(), options, &control);
      ASSERT_TRUE(grid.ok()) << grid.status();
      ASSERT_TRUE(single.ok()) << single.status();
      ASSERT_EQ(grid->c.dtype(), dtype);
      if (dtype == DType::kFloat64) {
        EXPECT_THAT(grid->stats.device, ::testing::HasSubstr(Engine("cuBLASMp")));
      } else {
        // Never handed to the GPU engine: cuBLASMp is wired for float64 alone.
        EXPECT_THAT(grid->stats.device, ::testing::HasSubstr("ScaLAPACK grid"));
        ASSERT_EQ(grid->stats.kernels.size(), 1u);
        EXPECT_EQ(grid->stats.kernels[0].kernel,
                  std::string("scalapack_p") + "sdcz"[static_cast<int>(dtype)] + "gemm");
      }
      EXPECT_LE(MaxAbsDifferenceAny(grid->c, single->c),
                ProductTolerance(dtype) * static_cast<double>(k))
          << "transpose_a " << transpose_a << " transpose_b " << transpose_b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    DTypes, GridMultiplyDTypes,
    ::testing::Combine(::testing::ValuesIn(kFloatingDTypes),
                       ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(3, 2, 1),
                                         std::make_tuple(7, 9, 5), std::make_tuple(37, 41, 29),
                                         std::make_tuple(64, 64, 64))),
    [](const auto& info) {
      const auto& shape = std::get<1>(info.param);
      return DTypeParamName(std::get<0>(info.param)) + "_" + std::to_string(std::get<0>(shape)) +
             "x" + std::to_string(std::get<1>(shape)) + "x" + std::to_string(std::get<2>(shape));
    });

TEST(GridMultiplyUInt32, RunsOnTheLocalBackend) {
  const Matrix a = Matrix::FromValues<uint32_t>(2, 2, std::vector<uint32_t>{1, 2, 3, 4});
  JobControl control;
  auto grid = g_distributed->Multiply(a.view(), a.view(), {}, &control);
  auto single = Reference()->Multiply(a.view(), a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_THAT(grid->stats.device, ::testing::Not(::testing::HasSubstr("grid")));
  EXPECT_EQ(grid->c.dtype(), single->c.dtype());
  EXPECT_EQ(grid->c.As<uint32_t>()[3], single->c.As<uint32_t>()[3]);
}

class GridDeterminant : public ::testing::TestWithParam<int64_t> {};

TEST_P(GridDeterminant, EqualsSingleProcess) {
  const int64_t n = GetParam();
  const Matrix a = testing::RandomMatrix<double>(n, n, 10 + static_cast<uint64_t>(n));
  JobControl control;
  auto grid = g_distributed->Determinant(a.view(), {}, &control);
  auto single = Reference()->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_THAT(grid->stats.device, ::testing::HasSubstr(Engine("cuSOLVERMp")));
  EXPECT_EQ(grid->value.phase(), single->value.phase());
  EXPECT_NEAR(grid->value.log_abs(), single->value.log_abs(), 1e-10 * static_cast<double>(n));
}

INSTANTIATE_TEST_SUITE_P(Sizes, GridDeterminant, ::testing::Values(1, 2, 3, 5, 13, 50, 101));

// Every floating dtype: float64 and complex128 by p?getrf (float64 on the GPU engine where the grid
// has one), float32 and complex64 widened first, as the single-process backend does; the complex
// determinant keeps its phase.
class GridDeterminantDTypes : public ::testing::TestWithParam<std::tuple<DType, int64_t>> {};

TEST_P(GridDeterminantDTypes, EqualsSingleProcess) {
  const auto [dtype, n] = GetParam();
  const Matrix a = RandomOf(dtype, n, n, 40 + static_cast<uint64_t>(n));
  JobControl control;
  auto grid = g_distributed->Determinant(a.view(), {}, &control);
  auto single = Reference()->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  if (dtype == DType::kFloat64) {
    EXPECT_THAT(grid->stats.device, ::testing::HasSubstr(Engine("cuSOLVERMp")));
  } else {
    EXPECT_THAT(grid->stats.device, ::testing::HasSubstr("ScaLAPACK grid"));
    EXPECT_EQ(grid->stats.kernels[0].kernel,
              IsComplex(dtype) ? "scalapack_pzgetrf" : "scalapack_pdgetrf");
  }
  EXPECT_LE(std::abs(grid->value.phase() - single->value.phase()), 1e-10 * static_cast<double>(n));
  EXPECT_NEAR(std::abs(grid->value.phase()), 1.0, 1e-12);
  EXPECT_NEAR(grid->value.log_abs(), single->value.log_abs(), 1e-10 * static_cast<double>(n));
}

INSTANTIATE_TEST_SUITE_P(DTypes, GridDeterminantDTypes,
                         ::testing::Combine(::testing::ValuesIn(kFloatingDTypes),
                                            ::testing::Values(1, 3, 13, 50)),
                         [](const auto& info) {
                           return DTypeParamName(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(GridDeterminantComplexSingular, IsZero) {
  // Row 2 = 2 * row 0, with powers of two as pivots so that elimination cancels exactly.
  using C = std::complex<double>;
  const Matrix a = Matrix::FromValues<C>(
      3, 3,
      std::vector<C>{{2, 0}, {1, 1}, {3, -1}, {1, 0}, {1, 1}, {0, 5}, {4, 0}, {2, 2}, {6, -2}});
  JobControl control;
  auto grid = g_distributed->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_TRUE(grid->value.is_zero());
}

TEST(GridLuSolveDTypes, OtherDTypesFactorOnTheLocalBackend) {
  const Matrix a = RandomOf(DType::kComplex128, 5, 5, 7);
  JobControl control;
  auto grid =
      g_distributed->Factorize(a.view(), {.kind = FactorizationKind::kLu}, nullptr, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_THAT(grid->stats.device, ::testing::Not(::testing::HasSubstr("grid")));
}

TEST(GridDeterminantRange, BeyondDoubleRangeDoesNotOverflow) {
  // 200 x 200 with entries up to 1e10: |det| ~ 10^(200*10) is far beyond a double.
  const Matrix a = testing::RandomMatrix<double>(200, 200, 5, 1e10);
  JobControl control;
  auto grid = g_distributed->Determinant(a.view(), {}, &control);
  auto single = Reference()->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_GT(grid->value.log_abs(), 3000.0);
  EXPECT_EQ(grid->value.phase(), single->value.phase());
  EXPECT_NEAR(grid->value.log_abs(), single->value.log_abs(), 1e-9);
}

TEST(GridDeterminantSingular, IsZero) {
  std::vector<double> values(9 * 9, 0.0);
  for (int i = 0; i < 9; ++i) {
    for (int j = 0; j < 9; ++j)
      values[static_cast<size_t>(i * 9 + j)] = (i == 6 ? 0.0 : i + j * j + 1.0 * (i == j));
  }
  const Matrix a = Matrix::FromValues<double>(9, 9, values);
  JobControl control;
  auto grid = g_distributed->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_TRUE(grid->value.is_zero());
}

class GridLuSolve : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(GridLuSolve, EqualsSingleProcess) {
  const auto [n, nrhs] = GetParam();
  const Matrix a = testing::RandomMatrix<double>(n, n, 20 + static_cast<uint64_t>(n));
  const Matrix b = testing::RandomMatrix<double>(n, nrhs, 30);
  const MatrixView rhs = b.view();
  JobControl control;
  const FactorizeOptions options{.kind = FactorizationKind::kLu};
  auto grid = g_distributed->Factorize(a.view(), options, &rhs, &control);
  auto single = Reference()->Factorize(a.view(), options, &rhs, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_THAT(grid->stats.device, ::testing::HasSubstr("ScaLAPACK"));
  EXPECT_EQ(grid->permutation, single->permutation);
  EXPECT_FALSE(grid->singular_column.has_value());
  EXPECT_LE(MaxAbsDifference(grid->lu, single->lu), 1e-10);
  ASSERT_TRUE(grid->solution.has_value());
  EXPECT_LE(MaxAbsDifference(*grid->solution, *single->solution), 1e-8);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GridLuSolve,
                         ::testing::Values(std::make_tuple(1, 1), std::make_tuple(3, 2),
                                           std::make_tuple(17, 3), std::make_tuple(50, 1)));

TEST(GridMultiplyCublasMp, RunsOnTheDeviceEngineOrSaysWhyNot) {
  const Matrix a = testing::RandomMatrix<double>(7, 9, 1);
  const Matrix b = testing::RandomMatrix<double>(5, 9, 2);
  const MultiplyOptions options{.transpose_b = true, .method = MultiplyMethod::kCublasMp};
  JobControl control;
  auto grid = g_distributed->Multiply(a.view(), b.view(), options, &control);
  if (!g_device_engine) {
    EXPECT_EQ(grid.status().code(), absl::StatusCode::kUnimplemented) << grid.status();
    EXPECT_THAT(std::string(grid.status().message()), ::testing::HasSubstr("CUBLASMP"));
    EXPECT_EQ(g_distributed
                  ->Supports({.operation = Operation::kMultiply,
                              .rows = 7,
                              .cols = 9,
                              .second_rows = 5,
                              .second_cols = 9,
                              .multiply = options})
                  .code(),
              absl::StatusCode::kUnimplemented);
    return;
  }
  auto single = Reference()->Multiply(a.view(), b.view(), {.transpose_b = true}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_THAT(grid->stats.device, ::testing::HasSubstr("cuBLASMp grid"));
  EXPECT_LE(MaxAbsDifference(grid->c, single->c), 1e-13 * 9);
}

TEST(GridMultiplyCublasMp, RefusesOtherDTypes) {
  const Matrix a = testing::RandomMatrix<float>(4, 4, 1);
  JobControl control;
  auto grid =
      g_distributed->Multiply(a.view(), a.view(), {.method = MultiplyMethod::kCublasMp}, &control);
  EXPECT_EQ(grid.status().code(), absl::StatusCode::kUnimplemented) << grid.status();
}

TEST(ScaledFromSignedLog, KeepsSignAndMagnitude) {
  EXPECT_NEAR(ScaledFromSignedLog({.sign = 1, .log_abs = std::log(6.0)}).ToComplex().real(), 6.0,
              1e-14);
  EXPECT_NEAR(ScaledFromSignedLog({.sign = -1, .log_abs = std::log(0.375)}).ToComplex().real(),
              -0.375, 1e-15);
  // |det| = 10^3000 and 10^-3000: far outside a double, kept as mantissa and exponent.
  const double huge = 3000 * std::log(10.0);
  const ScaledNumber big = ScaledFromSignedLog({.sign = -1, .log_abs = huge});
  EXPECT_NEAR(big.log_abs(), huge, 1e-12 * huge);
  EXPECT_EQ(big.phase().real(), -1.0);
  EXPECT_EQ(big.Decimal().exponent10, 3000);
  EXPECT_NEAR(ScaledFromSignedLog({.sign = 1, .log_abs = -huge}).log_abs(), -huge, 1e-12 * huge);
}

TEST(ScaledFromSignedLog, SingularIsZero) {
  EXPECT_TRUE(ScaledFromSignedLog({.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()})
                  .is_zero());
  EXPECT_TRUE(ScaledFromSignedLog({.sign = 1, .log_abs = -std::numeric_limits<double>::infinity()})
                  .is_zero());
}

TEST(ParseGridEngine, TakesTheThreeNames) {
  EXPECT_EQ(*ParseGridEngine("auto"), GridEngineKind::kAuto);
  EXPECT_EQ(*ParseGridEngine("scalapack"), GridEngineKind::kScalapack);
  EXPECT_EQ(*ParseGridEngine("nvidia_mp"), GridEngineKind::kNvidiaMp);
  const absl::Status bad = ParseGridEngine("cublasmp").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), ::testing::HasSubstr("--distributed_engine"));
}

TEST(GridLuSolveSingular, FailsWithFailedPrecondition) {
  const Matrix a = Matrix::FromValues<double>(3, 3, std::vector<double>{1, 2, 3, 2, 4, 6, 1, 0, 1});
  const Matrix b = testing::RandomMatrix<double>(3, 1, 3);
  const MatrixView rhs = b.view();
  JobControl control;
  auto grid = g_distributed->Factorize(a.view(), {.kind = FactorizationKind::kLu}, &rhs, &control);
  EXPECT_EQ(grid.status().code(), absl::StatusCode::kFailedPrecondition) << grid.status();
}

}  // namespace
}  // namespace matrixd::distributed

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto session = matrixd::distributed::MpiSession::Init(&argc, &argv);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", std::string(session.status().message()).c_str());
    return 1;
  }
  const char* block_env = std::getenv("MATRIXD_TEST_BLOCK");
  auto grid =
      matrixd::distributed::ScalapackGrid::Create(block_env != nullptr ? std::atoi(block_env) : 4);
  if (!grid.ok()) {
    std::fprintf(stderr, "%s\n", std::string(grid.status().message()).c_str());
    return 1;
  }
  const char* engine_env = std::getenv("MATRIXD_TEST_DEVICE_ENGINE");
  matrixd::distributed::g_device_engine = engine_env != nullptr && std::string(engine_env) == "1";
  if (matrixd::distributed::g_device_engine) {
    (*grid)->SetDeviceEngine(std::make_unique<matrixd::distributed::GatheringDeviceEngine>());
  }
  if ((*session)->rank() != 0) return (*grid)->ServeWorker().ok() ? 0 : 1;
  std::unique_ptr<matrixd::Backend> backend = matrixd::distributed::MakeDistributedBackend(
      matrixd::MakeCpuBackend({.threads = 1}), *std::move(grid),
      {.min_dimension = 1, .lost = (*session)->lost(), .device_block = 3});
  matrixd::distributed::g_distributed = backend.get();
  const int result = RUN_ALL_TESTS();
  backend.reset();  // sends kShutdown to the other ranks
  return result;
}
