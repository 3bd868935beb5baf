// A distributed resident matrix on the host (the CPU backend's resident matrices stand in for the
// GPUs' parts): the block-cyclic row mapping, bytes written in odd pieces read back bit for bit,
// a generated distributed matrix equal to the whole one, and the runs of rows (and their
// addresses) that a job over several GPUs copies rectangles by. The GPU version of these checks is
// tests/multi_gpu/distributed_resident_test.cc.
#include "core/distributed_resident_matrix.h"

#include <array>
#include <cstring>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/matrix_generator.h"
#include "core/multi_gpu/row_major_parts.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

TEST(RowCyclicLayout, EveryRowHasOneOwnerAndTheCountsAddUp) {
  for (const int64_t rows : {1, 2, 3, 7, 12, 13, 100}) {
    for (const int64_t block : {1, 3, 5, 512}) {
      for (const int parts : {2, 3, 4}) {
        const RowCyclicLayout layout{.rows = rows, .cols = 1, .block = block, .parts = parts};
        std::vector<int64_t> seen(static_cast<size_t>(parts), 0);
        for (int64_t row = 0; row < rows; ++row) {
          const int owner = layout.Owner(row);
          ASSERT_GE(owner, 0);
          ASSERT_LT(owner, parts);
          // Rows come in the order of their local index on each part, without gaps.
          EXPECT_EQ(layout.LocalRow(row), seen[static_cast<size_t>(owner)]);
          EXPECT_EQ(layout.RowsOf(owner).Global(layout.LocalRow(row)), row);
          ++seen[static_cast<size_t>(owner)];
        }
        for (int g = 0; g < parts; ++g) {
          EXPECT_EQ(layout.LocalRows(g), seen[static_cast<size_t>(g)])
              << rows << " rows, blocks of " << block << ", part " << g << " of " << parts;
        }
      }
    }
  }
}

TEST(RowCyclicLayout, BlocksGoRoundRobinAndTheLastOneMayBeShort) {
  const RowCyclicLayout layout{.rows = 1100, .cols = 4, .block = 512, .parts = 2};
  EXPECT_EQ(layout.LocalRows(0), 512 + 76);  // blocks 0 and 2 (76 rows)
  EXPECT_EQ(layout.LocalRows(1), 512);       // block 1
  EXPECT_EQ(layout.Owner(1099), 0);
  EXPECT_EQ(layout.LocalRow(1099), 587);
  const RowCyclicLayout small{.rows = 1, .cols = 1, .block = 512, .parts = 2};
  EXPECT_EQ(small.LocalRows(0), 1);
  EXPECT_EQ(small.LocalRows(1), 0);
}

TEST(RowCyclicLayout, RunsCutARangeWhereBlocksEndAndNameEachRowsPart) {
  for (const int64_t block : {1, 3, 512}) {
    for (const int parts : {1, 2, 3}) {
      const RowCyclicLayout layout{.rows = 1100, .cols = 1, .block = block, .parts = parts};
      for (const auto& [row0, count] : {std::pair<int64_t, int64_t>{0, 1100},
                                        {0, 0},
                                        {511, 2},
                                        {7, 600},
                                        {1024, 76},
                                        {1099, 1}}) {
        SCOPED_TRACE(testing::Message() << "rows [" << row0 << ", " << row0 + count
                                        << "), blocks of " << block << ", " << parts << " parts");
        int64_t next = 0;  // the runs follow on, in order, and cover the range
        for (const RowRun& run : layout.Runs(row0, count)) {
          ASSERT_EQ(run.first, next);
          ASSERT_GE(run.rows, 1);
          const int64_t first_row = row0 + run.first;
          const int64_t last_row = first_row + run.rows - 1;
          EXPECT_EQ(first_row / block, last_row / block) << "a run lies in one block";
          EXPECT_TRUE(last_row + 1 == row0 + count || (last_row + 1) % block == 0)
              << "a run ends where its block or the range does";
          for (int64_t row = first_row; row <= last_row; ++row) {
            EXPECT_EQ(layout.Owner(row), run.part);
            EXPECT_EQ(layout.LocalRow(row), run.local_row + (row - first_row));
          }
          next += run.rows;
        }
        EXPECT_EQ(next, count);
      }
    }
  }
}

class DistributedOnHostTest : public ::testing::Test {
 protected:
  // Parts from the CPU backend (host memory) for `layout`.
  absl::StatusOr<std::unique_ptr<DistributedResidentMatrix>> Make(const RowCyclicLayout& layout,
                                                                  DType dtype) {
    std::vector<std::unique_ptr<ResidentMatrix>> parts(static_cast<size_t>(layout.parts));
    for (int g = 0; g < layout.parts; ++g) {
      if (layout.LocalRows(g) == 0) continue;
      auto part = backend_->AllocateResident(layout.LocalRows(g), layout.cols, dtype, g);
      if (!part.ok()) return part.status();
      parts[static_cast<size_t>(g)] = *std::move(part);
    }
    return DistributedResidentMatrix::Make(layout, dtype, std::move(parts));
  }

  std::unique_ptr<Backend> backend_ = MakeCpuBackend({.threads = 1});
};

TEST_F(DistributedOnHostTest, WrittenInOddPiecesReadsBackBitForBit) {
  const RowCyclicLayout layout{.rows = 23, .cols = 7, .block = 3, .parts = 3};
  std::vector<double> values(23 * 7);
  std::iota(values.begin(), values.end(), 0.5);
  const auto bytes = std::as_bytes(std::span<const double>(values));
  for (const size_t piece : {size_t{1}, size_t{13}, size_t{168}, bytes.size()}) {
    auto matrix = Make(layout, DType::kFloat64);
    ASSERT_TRUE(matrix.ok()) << matrix.status();
    for (size_t at = 0; at < bytes.size(); at += piece) {
      const size_t size = std::min(piece, bytes.size() - at);
      ASSERT_TRUE((*matrix)->Write(at, bytes.subspan(at, size)).ok());
    }
    ASSERT_TRUE((*matrix)->Flush().ok());
    std::vector<double> back(values.size());
    ASSERT_TRUE((*matrix)->Read(0, std::as_writable_bytes(std::span<double>(back))).ok());
    EXPECT_EQ(back, values) << "pieces of " << piece;
    // Part 1 holds rows 3..5 and 12..14: its second block starts with row 12.
    double first = 0;
    ASSERT_TRUE(
        (*matrix)->part(1)->Read(3 * 7 * 8, std::as_writable_bytes(std::span(&first, 1))).ok());
    EXPECT_EQ(first, values[12 * 7]);
    // A range across blocks and parts.
    std::vector<double> middle(30);
    ASSERT_TRUE((*matrix)->Read(8 * 17, std::as_writable_bytes(std::span<double>(middle))).ok());
    EXPECT_TRUE(std::equal(middle.begin(), middle.end(), values.begin() + 17));
  }
}

// The addresses a job over several GPUs copies a rectangle's rows to or from
// (core/multi_gpu/row_major_parts.h; host parts stand in for the GPUs'): each run's rows are
// those of the whole matrix, for rectangles across blocks and parts, and for a matrix in one piece.
TEST_F(DistributedOnHostTest, RectangleRowsAreFoundInThePartsThatHoldThem) {
  const RowCyclicLayout layout{.rows = 23, .cols = 7, .block = 3, .parts = 3};
  auto matrix = Make(layout, DType::kFloat64);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  std::vector<double> values(23 * 7);
  std::iota(values.begin(), values.end(), 0.5);
  ASSERT_TRUE((*matrix)->Write(0, std::as_bytes(std::span<const double>(values))).ok());
  std::vector<std::byte*> bases;
  for (int g = 0; g < layout.parts; ++g) {
    // Read only: the parts give addresses.
    bases.push_back(const_cast<std::byte*>((*matrix)->part(g)->view().data));
  }
  const multi_gpu::RowMajorParts dealt(layout, sizeof(double), bases);
  const multi_gpu::RowMajorParts whole(23, 7, sizeof(double),
                                       reinterpret_cast<std::byte*>(values.data()));
  for (const multi_gpu::RowMajorParts* parts : {&dealt, &whole}) {
    EXPECT_EQ(parts->pitch(), 7 * sizeof(double));
    for (const auto [row0, rows, col0, cols] :
         {std::array<int64_t, 4>{0, 23, 0, 7}, {2, 5, 3, 2}, {8, 1, 6, 1}, {13, 10, 1, 5}}) {
      int64_t covered = 0;
      for (const RowRun& run : parts->Runs(row0, rows)) {
        for (int64_t r = 0; r < run.rows; ++r) {
          const std::byte* got = parts->Address(run, col0) + r * parts->pitch();
          const double* want = &values[static_cast<size_t>((row0 + run.first + r) * 7 + col0)];
          EXPECT_EQ(std::memcmp(got, want, static_cast<size_t>(cols) * sizeof(double)), 0)
              << "row " << row0 + run.first + r << ", columns from " << col0;
        }
        covered += run.rows;
      }
      EXPECT_EQ(covered, rows);
    }
  }
  EXPECT_EQ(whole.Runs(0, 23).size(), 1u);  // one piece: one run
}

TEST_F(DistributedOnHostTest, OutOfRangeWritesAndReadsAreInvalidArgument) {
  auto matrix = Make({.rows = 5, .cols = 2, .block = 2, .parts = 2}, DType::kFloat32);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  std::vector<std::byte> bytes(8);
  EXPECT_EQ((*matrix)->Write(36, bytes).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*matrix)->Read(40, bytes).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DistributedOnHostTest, PartsOfTheWrongShapeOrCountAreRefused) {
  const RowCyclicLayout layout{.rows = 5, .cols = 2, .block = 2, .parts = 2};
  std::vector<std::unique_ptr<ResidentMatrix>> parts;
  parts.push_back(*backend_->AllocateResident(3, 2, DType::kFloat64, 0));
  parts.push_back(*backend_->AllocateResident(3, 2, DType::kFloat64, 1));  // wants 2 rows
  EXPECT_EQ(
      DistributedResidentMatrix::Make(layout, DType::kFloat64, std::move(parts)).status().code(),
      absl::StatusCode::kInvalidArgument);
  std::vector<std::unique_ptr<ResidentMatrix>> one;
  one.push_back(*backend_->AllocateResident(5, 2, DType::kFloat64, 0));
  EXPECT_EQ(DistributedResidentMatrix::Make({.rows = 5, .cols = 2, .block = 2, .parts = 1},
                                            DType::kFloat64, std::move(one))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DistributedOnHostTest, GeneratedEqualsTheWholeGeneratedMatrix) {
  for (const DType dtype : {DType::kFloat64, DType::kComplex64, DType::kInt64}) {
    for (const int64_t rows : {1, 8, 29}) {
      const RowCyclicLayout layout{.rows = rows, .cols = 5, .block = 4, .parts = 3};
      auto matrix = Make(layout, dtype);
      ASSERT_TRUE(matrix.ok()) << matrix.status();
      const GeneratorOptions options{.kind = GeneratorKind::kRandom, .seed = 99};
      ASSERT_TRUE(GenerateInto(**matrix, options).ok());
      std::vector<std::byte> got((*matrix)->byte_size());
      ASSERT_TRUE((*matrix)->Read(0, got).ok());
      std::vector<std::byte> want(got.size());
      ASSERT_TRUE(GenerateOnHost(options, GeneratedRows{}, rows, 5, dtype, want).ok());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0)
          << DTypeName(dtype) << " " << rows << " rows";
    }
  }
}

TEST_F(DistributedOnHostTest, ReportsItsLayoutAndEveryDevice) {
  auto matrix = Make({.rows = 9, .cols = 2, .block = 4, .parts = 2}, DType::kFloat64);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  EXPECT_EQ((*matrix)->layout(), ResidentLayout::kDistributed);
  EXPECT_EQ((*matrix)->distributed(), matrix->get());
  EXPECT_EQ((*matrix)->device(), "distributed over 2 devices in blocks of 4 rows: cpu; cpu");
  EXPECT_EQ((*matrix)->view().data, nullptr);
  EXPECT_EQ((*matrix)->part(0)->layout(), ResidentLayout::kSingleDevice);
}

}  // namespace
}  // namespace matrixd
