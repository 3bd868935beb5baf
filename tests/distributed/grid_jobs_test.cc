// The distributed backend against the CPU backend on the same inputs, under mpirun: rank 0 runs the
// tests, the other ranks serve the grid (see main below). Blocks of MATRIXD_TEST_BLOCK (default 4)
// so that small matrices already span several blocks per rank, and sizes that the grid and the
// block do not divide, or that are smaller than the grid.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/distributed/distributed_backend.h"
#include "core/distributed/mpi_session.h"
#include "core/distributed/scalapack_grid.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"

namespace matrixd::distributed {
namespace {

Backend* g_distributed = nullptr;

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

class GridMultiply : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, int64_t>> {};

TEST_P(GridMultiply, EqualsSingleProcess) {
  const auto [m, k, n] = GetParam();
  for (bool transpose_a : {false, true}) {
    for (bool transpose_b : {false, true}) {
      const Matrix a = transpose_a ? testing::RandomMatrix<double>(k, m, 1)
                                   : testing::RandomMatrix<double>(m, k, 1);
      const Matrix b = transpose_b ? testing::RandomMatrix<double>(n, k, 2)
                                   : testing::RandomMatrix<double>(k, n, 2);
      const MultiplyOptions options{.transpose_a = transpose_a, .transpose_b = transpose_b};
      JobControl control;
      auto grid = g_distributed->Multiply(a.view(), b.view(), options, &control);
      auto single = Reference()->Multiply(a.view(), b.view(), options, &control);
      ASSERT_TRUE(grid.ok()) << grid.status();
      ASSERT_TRUE(single.ok()) << single.status();
      EXPECT_THAT(grid->stats.device, ::testing::HasSubstr("ScaLAPACK"));
      EXPECT_LE(MaxAbsDifference(grid->c, single->c), 1e-13 * static_cast<double>(k))
          << "transpose_a " << transpose_a << " transpose_b " << transpose_b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GridMultiply,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(3, 2, 1),
                                           std::make_tuple(7, 9, 5), std::make_tuple(37, 41, 29),
                                           std::make_tuple(64, 64, 64)));

class GridDeterminant : public ::testing::TestWithParam<int64_t> {};

TEST_P(GridDeterminant, EqualsSingleProcess) {
  const int64_t n = GetParam();
  const Matrix a = testing::RandomMatrix<double>(n, n, 10 + static_cast<uint64_t>(n));
  JobControl control;
  auto grid = g_distributed->Determinant(a.view(), {}, &control);
  auto single = Reference()->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(grid.ok()) << grid.status();
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_THAT(grid->stats.device, ::testing::HasSubstr("ScaLAPACK"));
  EXPECT_EQ(grid->value.phase(), single->value.phase());
  EXPECT_NEAR(grid->value.log_abs(), single->value.log_abs(), 1e-10 * static_cast<double>(n));
}

INSTANTIATE_TEST_SUITE_P(Sizes, GridDeterminant, ::testing::Values(1, 2, 3, 5, 13, 50, 101));

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
  if ((*session)->rank() != 0) return (*grid)->ServeWorker().ok() ? 0 : 1;
  std::unique_ptr<matrixd::Backend> backend = matrixd::distributed::MakeDistributedBackend(
      matrixd::MakeCpuBackend({.threads = 1}), *std::move(grid),
      {.min_dimension = 1, .lost = (*session)->lost()});
  matrixd::distributed::g_distributed = backend.get();
  const int result = RUN_ALL_TESTS();
  backend.reset();  // sends kShutdown to the other ranks
  return result;
}
