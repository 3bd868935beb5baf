// A test suite parameterized over backends: every core test runs on the CPU backend and on the
// CUDA backend; CUDA cases skip with a message where there is no device (or no CUDA build).
#ifndef MATRIXD_TESTS_CORE_BACKEND_FIXTURE_H_
#define MATRIXD_TESTS_CORE_BACKEND_FIXTURE_H_

#include <memory>
#include <string>

#include "core/backend.h"
#include "core/make_backend.h"
#include "gtest/gtest.h"

namespace matrixd::testing {

class BackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda" && !CudaDeviceAvailable()) {
      GTEST_SKIP() << "no CUDA device here (or no CUDA build): CUDA case skipped";
    }
    // Every determinant on the device, so that the CUDA cases test the device code at every
    // order (the host path of small ones: cuda_host_determinant_test.cc).
    auto backend = MakeBackend(GetParam(), {.host_max_orders = {.determinant = 0, .factorize = 0}});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
  }
  Backend& backend() { return *backend_; }

 private:
  std::unique_ptr<Backend> backend_;
};

inline std::string BackendName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace matrixd::testing

// Runs the parameterized suite `suite` on both backends.
#define MATRIXD_INSTANTIATE_BACKEND_SUITE(suite)                              \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::Values("cpu", "cuda"), \
                           ::matrixd::testing::BackendName)

#endif  // MATRIXD_TESTS_CORE_BACKEND_FIXTURE_H_
