// DeviceSpan and the typed launchers' extent checks: host-side logic, so these run without a
// device (no memory is touched and nothing is launched).
#include <complex>
#include <cstdint>

#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_span.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

TEST(DeviceSpan, ViewsAPointerAndACountAndConvertsToConst) {
  double storage[10] = {};
  const DeviceSpan<double> span(storage, 10);
  EXPECT_EQ(span.size_bytes(), 80u);
  const DeviceSpan<const double> view = span;
  EXPECT_EQ(view.data(), storage);
  EXPECT_EQ(view.subspan(2, 3).data(), storage + 2);
  EXPECT_EQ(view.subspan(2, 3).size(), 3u);
  EXPECT_EQ(view.first(4).size(), 4u);
  EXPECT_TRUE(DeviceSpan<int>().empty());
}

TEST(DeviceSpan, OfABufferCountsWholeElements) {
  const DeviceBuffer empty;
  EXPECT_EQ(AsSpan<std::complex<double>>(empty).size(), 0u);
  EXPECT_EQ(AsSpan<std::complex<double>>(empty).data(), nullptr);
}

TEST(TypedLaunchers, SpansTooSmallForTheShapeAreInvalidWithoutALaunch) {
  // Never dereferenced: the check fails before any launch.
  double* fake = reinterpret_cast<double*>(uintptr_t{256});
  // 3 x 4 column-major with ld 5 reaches 5 * 3 + 3 = 18 elements; the transpose 4 x 3 with ld 4
  // reaches 4 * 2 + 4 = 12.
  EXPECT_EQ(LaunchTranspose(DeviceSpan<const double>(fake, 17), 3, 4, 5,
                            DeviceSpan<double>(fake, 12), 4, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(LaunchTranspose(DeviceSpan<const double>(fake, 18), 3, 4, 5,
                            DeviceSpan<double>(fake, 11), 4, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(LaunchZeroStrictTriangle(DeviceSpan<double>(fake, 11), 3, 4, Triangle::kUpper, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace matrixd::cuda
