// Generated resident matrices on every backend equal, byte for byte, the host's evaluation of
// core/generator_entry.h: on the CUDA backend that checks the device kernel against the host
// generator (the CUDA cases skip without a device), for every dtype and kind and for shapes that
// are multiples of nothing, and a single element.
#include "core/matrix_generator.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/backend.h"
#include "core/job_control.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd {
namespace {

using ::matrixd::testing::BackendTest;

constexpr DType kDTypes[] = {DType::kFloat32,    DType::kFloat64, DType::kComplex64,
                             DType::kComplex128, DType::kInt64,   DType::kUInt32};
constexpr GeneratorKind kKinds[] = {GeneratorKind::kRandom, GeneratorKind::kIdentity,
                                    GeneratorKind::kHilbert};

std::string Describe(DType dtype, GeneratorKind kind, int64_t rows, int64_t cols) {
  return absl::StrCat(DTypeName(dtype), " kind ", static_cast<int>(kind), " ", rows, "x", cols);
}

TEST(GeneratorEntry, RandomValuesAreStableAcrossReleases) {
  // Values of the generator as first released (SplitMix64 of seed and element index): a change
  // of the entry function would silently change every seeded benchmark's matrix.
  const GeneratorOptions options{.kind = GeneratorKind::kRandom, .seed = 7};
  double real[2] = {};
  generator::Entry<double, 2>(options, 2, 3, 5, real);
  EXPECT_EQ(real[0], -0.2824740293696921);
  EXPECT_EQ(real[1], -0.1814822413719437);
  int64_t integer = 0;
  generator::Entry<int64_t, 1>(options, 2, 3, 5, &integer);
  EXPECT_EQ(integer, -3);
}

TEST(GeneratorEntry, RowMapDealsBlocksRoundRobin) {
  const GeneratedRows rows{.block = 3, .stride = 2, .offset = 1};
  // Part 1 of blocks of 3 over 2 parts holds global blocks 1, 3, ...: rows 3, 4, 5, 9, 10, ...
  const int64_t want[] = {3, 4, 5, 9, 10, 11, 15};
  for (int64_t r = 0; r < 7; ++r) EXPECT_EQ(rows.Global(r), want[r]) << r;
  EXPECT_EQ(GeneratedRows{}.Global(41), 41);
}

using MatrixGeneratorTest = BackendTest;

TEST_P(MatrixGeneratorTest, GeneratedResidentMatrixEqualsHostGeneratorBitForBit) {
  const int64_t shapes[][2] = {{1, 1}, {37, 29}, {3, 1001}, {1000, 3}};
  for (const DType dtype : kDTypes) {
    for (const GeneratorKind kind : kKinds) {
      if (kind == GeneratorKind::kHilbert && !IsFloating(dtype)) continue;
      for (const auto& [rows, cols] : shapes) {
        const GeneratorOptions options{.kind = kind,
                                       .seed = 0x5eedULL + static_cast<uint64_t>(rows)};
        SCOPED_TRACE(Describe(dtype, kind, rows, cols));
        absl::StatusOr<std::unique_ptr<ResidentMatrix>> resident =
            backend().AllocateResident(rows, cols, dtype, JobControl::kAnyDevice);
        ASSERT_TRUE(resident.ok()) << resident.status();
        ASSERT_TRUE(GenerateInto(**resident, options).ok());
        std::vector<std::byte> got((*resident)->byte_size());
        ASSERT_TRUE((*resident)->Read(0, got).ok());
        std::vector<std::byte> want(got.size());
        ASSERT_TRUE(GenerateOnHost(options, GeneratedRows{}, rows, cols, dtype, want).ok());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);
      }
    }
  }
}

TEST_P(MatrixGeneratorTest, HilbertOfAnIntegerDTypeIsRefused) {
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> resident =
      backend().AllocateResident(2, 2, DType::kInt64, JobControl::kAnyDevice);
  ASSERT_TRUE(resident.ok()) << resident.status();
  const absl::Status status = GenerateInto(**resident, {.kind = GeneratorKind::kHilbert});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(MatrixGeneratorTest);

}  // namespace
}  // namespace matrixd
