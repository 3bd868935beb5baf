#include "core/multi_gpu/pivot_permutation.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace matrixd::multi_gpu {
namespace {

// LAPACK-style 1-based pivots of a 5-step LU: step 0 swaps with row 3, step 2 with row 4.
const std::vector<int64_t> kPivots1 = {3, 2, 4, 4, 5};
// A[p[i], :] = (L U)[i, :] for those swaps applied to 0..4 in order.
const std::vector<int64_t> kPermutation = {2, 1, 3, 0, 4};

TEST(PivotPermutation, GathersBlockCyclicPartsInStepOrder) {
  // Blocks of 2 over 2 processes: steps 0,1,4 on process 0 and 2,3 on process 1.
  const std::vector<std::vector<int64_t>> parts = {{3, 2, 5}, {4, 4}};
  EXPECT_EQ(GatherCyclicPivots(parts, 5, 2), kPivots1);
}

TEST(PivotPermutation, TheValidReadingGivesLapacksPermutationInEitherBase) {
  const std::vector<int64_t> whole_but_unwritten = {3, 2, 5, -1, -1};  // one process's part alone
  std::vector<int64_t> base0 = kPivots1;
  for (int64_t& p : base0) --p;
  const std::vector<int64_t> readings1[] = {kPivots1, whole_but_unwritten};
  absl::StatusOr<std::vector<int64_t>> p1 = PermutationFromPivots(readings1, 5);
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_EQ(*p1, kPermutation);
  const std::vector<int64_t> readings0[] = {whole_but_unwritten, base0};
  absl::StatusOr<std::vector<int64_t>> p0 = PermutationFromPivots(readings0, 5);
  ASSERT_TRUE(p0.ok()) << p0.status();
  EXPECT_EQ(*p0, kPermutation);
}

TEST(PivotPermutation, NoValidReadingIsInternal) {
  const std::vector<int64_t> readings[] = {{-1, -1, -1}, {1, 1, 1}};  // last pivot not the last row
  EXPECT_EQ(PermutationFromPivots(readings, 3).status().code(), absl::StatusCode::kInternal);
}

TEST(PivotPermutation, ValidReadingsThatDisagreeAreInternal) {
  const std::vector<int64_t> readings[] = {{2, 2}, {1, 2}};
  EXPECT_EQ(PermutationFromPivots(readings, 2).status().code(), absl::StatusCode::kInternal);
}

TEST(PivotPermutation, OneByOneIsTheIdentity) {
  const std::vector<int64_t> readings[] = {{1}};
  absl::StatusOr<std::vector<int64_t>> p = PermutationFromPivots(readings, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, std::vector<int64_t>{0});
}

}  // namespace
}  // namespace matrixd::multi_gpu
