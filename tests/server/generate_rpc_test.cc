// The Generate RPC: resident random, identity and Hilbert matrices made on the server.
#include <cstdint>
#include <string>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/server/test_server.h"

namespace matrixd::server::testing {
namespace {

class GenerateRpcTest : public ServerTest {
 protected:
  static absl::StatusOr<v1::ResidentMatrix> Generate(v1::Generator generator, int64_t n,
                                                     v1::DType dtype, uint64_t seed = 0) {
    v1::GenerateRequest request;
    request.set_rows(n);
    request.set_cols(n);
    request.set_dtype(dtype);
    request.set_generator(generator);
    request.set_seed(seed);
    return client().Generate(request);
  }
  static std::vector<double> DownloadDoubles(const std::string& handle) {
    absl::StatusOr<v1::Matrix> m = client().Download(handle);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return {};
    std::vector<double> values(m->data().size() / sizeof(double));
    std::memcpy(values.data(), m->data().data(), m->data().size());
    return values;
  }
};

TEST_F(GenerateRpcTest, HilbertHasItsEntries) {
  auto made = Generate(v1::GENERATOR_HILBERT, 5, v1::DTYPE_FLOAT64);
  ASSERT_TRUE(made.ok()) << made.status();
  const std::vector<double> h = DownloadDoubles(made->handle());
  ASSERT_EQ(h.size(), 25u);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) EXPECT_EQ(h[static_cast<size_t>(i * 5 + j)], 1.0 / (i + j + 1));
  }
}

TEST_F(GenerateRpcTest, IdentityDeterminantIsOneByHandle) {
  auto made = Generate(v1::GENERATOR_IDENTITY, 40, v1::DTYPE_FLOAT64);
  ASSERT_TRUE(made.ok()) << made.status();
  v1::DeterminantRequest request;
  request.mutable_matrix_ref()->set_handle(made->handle());
  absl::StatusOr<v1::DeterminantResponse> det = client().Determinant(request);
  ASSERT_TRUE(det.ok()) << det.status();
  EXPECT_EQ(det->value(), 1.0);
}

TEST_F(GenerateRpcTest, RandomIsReproducibleBySeedAndInRange) {
  auto first = Generate(v1::GENERATOR_RANDOM, 30, v1::DTYPE_FLOAT64, 42);
  auto again = Generate(v1::GENERATOR_RANDOM, 30, v1::DTYPE_FLOAT64, 42);
  auto other = Generate(v1::GENERATOR_RANDOM, 30, v1::DTYPE_FLOAT64, 43);
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  const std::vector<double> a = DownloadDoubles(first->handle());
  EXPECT_EQ(a, DownloadDoubles(again->handle()));
  EXPECT_NE(a, DownloadDoubles(other->handle()));
  double sum = 0.0;
  for (double x : a) {
    EXPECT_GE(x, -1.0);
    EXPECT_LT(x, 1.0);
    sum += x;
  }
  EXPECT_LT(std::abs(sum / static_cast<double>(a.size())), 0.1);  // mean near 0
}

TEST_F(GenerateRpcTest, IntegerHilbertAndMissingGeneratorAreRefused) {
  EXPECT_EQ(Generate(v1::GENERATOR_HILBERT, 4, v1::DTYPE_INT64).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Generate(v1::GENERATOR_UNSPECIFIED, 4, v1::DTYPE_FLOAT64).status().code(),
            absl::StatusCode::kInvalidArgument);
  ExpectStillServing();
}

}  // namespace
}  // namespace matrixd::server::testing
