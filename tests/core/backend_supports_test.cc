// Backend::Supports: each backend says which permanents it can walk, and accepts the rest.
#include <string>

#include "core/backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/backend_fixture.h"

namespace matrixd::testing {
namespace {

using ::testing::HasSubstr;

// The largest permanent order of each backend, as its kernels are built.
int LargestPermanent(const std::string& backend) { return backend == "cuda" ? 40 : 62; }

class SupportsTest : public BackendTest {};

TEST_P(SupportsTest, PermanentsUpToTheBackendsLargestOrderAreSupported) {
  const int n = LargestPermanent(GetParam());
  EXPECT_TRUE(backend().Supports({.operation = Operation::kPermanent, .rows = n, .cols = n}).ok());
}

TEST_P(SupportsTest, PermanentOneOrderLargerIsUnimplementedNamingTheLimit) {
  const int n = LargestPermanent(GetParam()) + 1;
  const absl::Status status =
      backend().Supports({.operation = Operation::kPermanent, .rows = n, .cols = n});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status.message(),
              HasSubstr("up to n = " + std::to_string(LargestPermanent(GetParam()))));
  EXPECT_THAT(status.message(), HasSubstr(GetParam()));
}

TEST_P(SupportsTest, LargeDenseOperationsAreSupported) {
  for (const Operation operation :
       {Operation::kDeterminant, Operation::kFactorize, Operation::kMultiply}) {
    EXPECT_TRUE(backend().Supports({.operation = operation, .rows = 100, .cols = 100}).ok());
  }
}

MATRIXD_INSTANTIATE_BACKEND_SUITE(SupportsTest);

}  // namespace
}  // namespace matrixd::testing
