// The CUDA backend's foundation: status conversion, device memory and transfers, the backend's
// construction, and the small kernels of the cuSOLVER paths (layout changes, the LU determinant
// reduction). Device tests skip where there is no CUDA device; the status and backend-choice
// tests run everywhere.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/make_backend.h"
#include "gtest/gtest.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/device_context.h"
#include "core/cuda/pinned_staging.h"
#endif

namespace matrixd {
namespace {

#ifndef MATRIXD_HAVE_CUDA

TEST(BackendChoice, AutoPicksCpuInABuildWithoutCuda) {
  EXPECT_FALSE(CudaDeviceAvailable());
  auto backend = MakeBackend("auto", {});
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "cpu");
  EXPECT_EQ(MakeBackend("cuda", {}).status().code(), absl::StatusCode::kUnavailable);
}

#else  // MATRIXD_HAVE_CUDA

using cuda::DeviceBuffer;
using cuda::DeviceContext;

// ---- Everywhere, with or without a device ----

TEST(CudaStatus, SuccessIsOk) {
  EXPECT_TRUE(cuda::ToStatus(cudaSuccess, "cudaFree(p)").ok());
  EXPECT_TRUE(cuda::ToStatus(CUBLAS_STATUS_SUCCESS, "cublasDgemm(...)").ok());
  EXPECT_TRUE(cuda::ToStatus(CUSOLVER_STATUS_SUCCESS, "cusolverDnDgetrf(...)").ok());
  EXPECT_TRUE(cuda::ToStatus(CUSPARSE_STATUS_SUCCESS, "cusparseSpMM(...)").ok());
}

TEST(CudaStatus, OutOfMemoryIsResourceExhaustedAndNamesTheCall) {
  const absl::Status status =
      cuda::ToStatus(cudaErrorMemoryAllocation, "cudaMalloc(&pointer, bytes)");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message().substr(0, 49), "cudaMalloc(...) failed: cudaErrorMemoryAllocation");
  EXPECT_EQ(cuda::ToStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate(&h)").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cuda::ToStatus(CUSOLVER_STATUS_ALLOC_FAILED, "cusolverDnCreate(&h)").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cuda::ToStatus(CUSPARSE_STATUS_ALLOC_FAILED, "cusparseCreate(&h)").code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(CudaStatus, OtherFailuresAreInternalWithTheLibrarysName) {
  const absl::Status runtime = cuda::ToStatus(cudaErrorInvalidValue, "cudaMemcpyAsync(a, b)");
  EXPECT_EQ(runtime.code(), absl::StatusCode::kInternal);
  EXPECT_NE(runtime.message().find("cudaMemcpyAsync(...) failed: cudaErrorInvalidValue"),
            std::string::npos)
      << runtime;
  const absl::Status cublas = cuda::ToStatus(CUBLAS_STATUS_INVALID_VALUE, "cublasDgemm(h, x)");
  EXPECT_EQ(cublas.code(), absl::StatusCode::kInternal);
  EXPECT_NE(cublas.message().find("cublasDgemm(...) failed: CUBLAS_STATUS_INVALID_VALUE"),
            std::string::npos)
      << cublas;
  const absl::Status cusolver =
      cuda::ToStatus(CUSOLVER_STATUS_EXECUTION_FAILED, "cusolverDnDgetrf(h, n)");
  EXPECT_NE(cusolver.message().find("cusolverDnDgetrf(...) failed: "
                                    "CUSOLVER_STATUS_EXECUTION_FAILED"),
            std::string::npos)
      << cusolver;
  const absl::Status cusparse = cuda::ToStatus(CUSPARSE_STATUS_INVALID_VALUE, "cusparseSpMM(h, x)");
  EXPECT_NE(cusparse.message().find("cusparseSpMM(...) failed: CUSPARSE_STATUS_INVALID_VALUE"),
            std::string::npos)
      << cusparse;
}

TEST(CudaStatus, LaunchCheckNamesTheKernel) {
  // The call text that MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(LaunchTranspose) passes.
  const absl::Status status = cuda::ToStatus(
      cudaErrorInvalidConfiguration, "(static_cast<void>(LaunchTranspose), cudaGetLastError())");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("LaunchTranspose launch failed: cudaErrorInvalidConfiguration"),
            std::string::npos)
      << status;
}

TEST(BackendChoice, AutoPicksCudaExactlyWhenADeviceExists) {
  const int devices = CudaDeviceCount();
  EXPECT_GE(devices, 0);
  EXPECT_EQ(CudaDeviceAvailable(), devices > 0);
  auto backend = MakeBackend("auto", {});
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), devices > 0 ? "cuda" : "cpu");
  if (devices == 0) {
    EXPECT_EQ(MakeCudaBackend({}).status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(MakeBackend("cuda", {}).status().code(), absl::StatusCode::kUnavailable);
  }
}

// ---- On a device ----

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    auto context = DeviceContext::Create(0);
    ASSERT_TRUE(context.ok()) << context.status();
    context_ = *std::move(context);
  }
  DeviceContext& context() { return *context_; }

  // A device buffer of `bytes` filled with `poison`, so that a copy that does not happen shows.
  DeviceBuffer Poisoned(size_t bytes, int poison) {
    absl::StatusOr<DeviceBuffer> buffer = context().Allocate(bytes);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    if (!buffer.ok()) return DeviceBuffer();
    EXPECT_EQ(cudaMemsetAsync(buffer->data(), poison, bytes, context().stream()), cudaSuccess);
    return *std::move(buffer);
  }

  template <typename T>
  std::vector<T> Download(const DeviceBuffer& buffer, size_t count) {
    std::vector<T> host(count);
    std::memset(host.data(), 0x5A, count * sizeof(T));
    EXPECT_TRUE(context().Download(buffer, host.data(), count * sizeof(T)).ok());
    return host;
  }

 private:
  std::unique_ptr<DeviceContext> context_;
};

TEST_F(CudaDeviceTest, UploadDownloadRoundTripIsExact) {
  // An odd size, not a multiple of any vector width.
  const size_t bytes = (size_t{1} << 20) + 13;
  std::vector<unsigned char> source(bytes);
  std::mt19937 rng(1);
  for (unsigned char& b : source) b = static_cast<unsigned char>(rng());
  DeviceBuffer buffer = Poisoned(bytes, 0xAB);
  ASSERT_EQ(buffer.bytes(), bytes);
  ASSERT_TRUE(context().Upload(source.data(), buffer, bytes).ok());
  EXPECT_EQ(Download<unsigned char>(buffer, bytes), source);
}

// Through the pinned staging chunks: several chunks and a partial one. The host source is
// overwritten as soon as Upload returns, which its contract allows.
TEST_F(CudaDeviceTest, StagedRoundTripOfManyChunksIsExact) {
  const size_t bytes = 3 * cuda::PinnedStaging::kChunkBytes + (size_t{5} << 20) + 7;
  std::vector<uint32_t> words(bytes / 4 + 1);
  std::iota(words.begin(), words.end(), 0x1234567u);
  std::vector<unsigned char> source(bytes);
  std::memcpy(source.data(), words.data(), bytes);
  const std::vector<unsigned char> expected = source;
  DeviceBuffer buffer = Poisoned(bytes, 0xAB);
  ASSERT_TRUE(context().Upload(source.data(), buffer, bytes).ok());
  std::fill(source.begin(), source.end(), 0);
  const std::vector<unsigned char> back = Download<unsigned char>(buffer, bytes);
  ASSERT_EQ(back.size(), expected.size());
  EXPECT_TRUE(back == expected) << "first difference at byte "
                                << std::mismatch(back.begin(), back.end(), expected.begin()).first -
                                       back.begin();
}

// Page-locked host memory is copied directly; the result is the same.
TEST_F(CudaDeviceTest, PinnedHostRoundTripIsExact) {
  const size_t bytes = (size_t{40} << 20) + 3;
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, bytes), cudaSuccess);
  auto* host = static_cast<unsigned char*>(pinned);
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7 + 1);
  DeviceBuffer buffer = Poisoned(bytes, 0);
  ASSERT_TRUE(context().Upload(host, buffer, bytes).ok());
  std::vector<unsigned char> back(bytes);
  ASSERT_TRUE(context().Download(buffer, back.data(), bytes).ok());
  EXPECT_TRUE(std::equal(back.begin(), back.end(), host));
  cudaFreeHost(pinned);
}

TEST_F(CudaDeviceTest, TransferLargerThanTheBufferIsRejected) {
  DeviceBuffer buffer = Poisoned(64, 0);
  std::vector<char> host(65);
  EXPECT_EQ(context().Upload(host.data(), buffer, 65).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(context().Download(buffer, host.data(), 65).code(), absl::StatusCode::kInternal);
}

TEST_F(CudaDeviceTest, ZeroBytesAllocateNothing) {
  absl::StatusOr<DeviceBuffer> buffer = context().Allocate(0);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ(buffer->data(), nullptr);
  EXPECT_EQ(buffer->bytes(), 0u);
}

TEST_F(CudaDeviceTest, OnePebibyteIsResourceExhaustedAndTheContextStillWorks) {
  absl::StatusOr<DeviceBuffer> huge = context().Allocate(size_t{1} << 50);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  // Refused by the memory stack's limit before the driver is asked, naming the request.
  EXPECT_NE(huge.status().message().find("1125899906842624 bytes requested"), std::string::npos)
      << huge.status();
  EXPECT_NE(huge.status().message().find("-byte limit are free"), std::string::npos)
      << huge.status();
  // The failure must not linger as the thread's last error, nor break the stream.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<double> values = {1.5, -2.25, 1e300};
  DeviceBuffer buffer = Poisoned(values.size() * sizeof(double), 0xFF);
  ASSERT_TRUE(context().Upload(values.data(), buffer, values.size() * sizeof(double)).ok());
  EXPECT_EQ(Download<double>(buffer, values.size()), values);
  EXPECT_TRUE(context().Synchronize().ok());
}

TEST_F(CudaDeviceTest, MovedBufferOwnsTheMemoryOnce) {
  DeviceBuffer first = Poisoned(256, 0x11);
  void* const data = first.data();
  DeviceBuffer second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(second.data(), data);
  DeviceBuffer third = Poisoned(16, 0);
  third = std::move(second);
  EXPECT_EQ(third.data(), data);
  EXPECT_EQ(third.bytes(), 256u);
  EXPECT_EQ(Download<unsigned char>(third, 256), std::vector<unsigned char>(256, 0x11));
}

TEST_F(CudaDeviceTest, EventTimerMeasuresDeviceWork) {
  absl::StatusOr<cuda::EventTimer> timer = cuda::EventTimer::Create();
  ASSERT_TRUE(timer.ok()) << timer.status();
  DeviceBuffer buffer = Poisoned(size_t{256} << 20, 0);
  ASSERT_TRUE(timer->Start(context().stream()).ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(cudaMemsetAsync(buffer.data(), i, buffer.bytes(), context().stream()), cudaSuccess);
  }
  ASSERT_TRUE(timer->Stop(context().stream()).ok());
  absl::StatusOr<double> seconds = timer->Seconds();
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  // 1 GiB of writes: tens of microseconds at least, far less than a second.
  EXPECT_GT(*seconds, 1e-5);
  EXPECT_LT(*seconds, 1.0);
}

// Transposes a rows x cols column-major matrix with padded leading dimensions on the device and
// compares with the host's transpose, for one element type.
template <typename T>
void ExpectTransposeMatchesHost(DeviceContext& context) {
  const int64_t rows = 37, cols = 70, src_ld = 40, dst_ld = 75;
  std::vector<T> src(static_cast<size_t>(src_ld * cols));
  for (size_t i = 0; i < src.size(); ++i) {
    if constexpr (std::is_same_v<T, std::complex<double> >) {
      src[i] = {static_cast<double>(i), -static_cast<double>(i) - 0.5};
    } else {
      src[i] = static_cast<T>(i + 1);
    }
  }
  absl::StatusOr<DeviceBuffer> in = context.Allocate(src.size() * sizeof(T));
  absl::StatusOr<DeviceBuffer> out =
      context.Allocate(static_cast<size_t>(dst_ld * rows) * sizeof(T));
  ASSERT_TRUE(in.ok() && out.ok());
  ASSERT_EQ(cudaMemsetAsync(out->data(), 0xEE, out->bytes(), context.stream()), cudaSuccess);
  ASSERT_TRUE(context.Upload(src.data(), *in, in->bytes()).ok());
  ASSERT_EQ(cuda::LaunchTranspose(in->data(), rows, cols, src_ld, out->data(), dst_ld, sizeof(T),
                                  context.stream()),
            cudaSuccess);
  std::vector<T> dst(static_cast<size_t>(dst_ld * rows));
  ASSERT_TRUE(context.Download(*out, dst.data(), out->bytes()).ok());
  const std::vector<unsigned char> poison(sizeof(T), 0xEE);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < dst_ld; ++j) {
      const T got = dst[j + i * dst_ld];
      if (j < cols) {
        ASSERT_EQ(got, src[i + j * src_ld]) << "(" << i << ", " << j << ")";
      } else {
        // The padding past cols is not written.
        ASSERT_EQ(std::memcmp(&got, poison.data(), sizeof(T)), 0) << "(" << i << ", " << j << ")";
      }
    }
  }
}

TEST_F(CudaDeviceTest, TransposeMatchesHostForEveryElementSize) {
  ExpectTransposeMatchesHost<float>(context());
  ExpectTransposeMatchesHost<double>(context());
  ExpectTransposeMatchesHost<std::complex<double> >(context());
}

TEST_F(CudaDeviceTest, ZeroStrictTriangleLeavesTheOtherPartAlone) {
  const int64_t rows = 5, cols = 7;
  std::vector<double> values(rows * cols);
  std::iota(values.begin(), values.end(), 1.0);
  for (cuda::Triangle triangle : {cuda::Triangle::kUpper, cuda::Triangle::kLower}) {
    DeviceBuffer buffer = Poisoned(values.size() * sizeof(double), 0);
    ASSERT_TRUE(context().Upload(values.data(), buffer, buffer.bytes()).ok());
    ASSERT_EQ(cuda::LaunchZeroStrictTriangle(buffer.data(), rows, cols, sizeof(double), triangle,
                                             context().stream()),
              cudaSuccess);
    const std::vector<double> got = Download<double>(buffer, values.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const bool zeroed = triangle == cuda::Triangle::kUpper ? c > r : c < r;
        EXPECT_EQ(got[r * cols + c], zeroed ? 0.0 : values[r * cols + c]) << r << ", " << c;
      }
    }
  }
}

// ---- The backend ----

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device here: device test skipped";
    auto backend = MakeCudaBackend({});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
  }
  Backend& backend() { return *backend_; }

  DeterminantResult Lu(const Matrix& m) {
    DeterminantOptions options;
    options.method = DeterminantMethod::kLu;
    absl::StatusOr<DeterminantResult> result = backend().Determinant(m.view(), options, nullptr);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *std::move(result) : DeterminantResult{};
  }

 private:
  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaBackendTest, NonexistentDeviceIsInvalidArgument) {
  EXPECT_EQ(MakeCudaBackend({99}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeCudaBackend({-1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeCudaBackend({0, 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaBackendTest, NamesItselfAndTheDevice) {
  EXPECT_EQ(backend().name(), "cuda");
  EXPECT_NE(backend().device().find("(device 0)"), std::string::npos) << backend().device();
  // Above kHostDeterminantMaxOrder: small orders are answered on the host ("host CPU").
  constexpr int64_t kN = kHostDeterminantMaxOrder + 1;
  std::vector<double> values(kN * kN, 0.0);
  for (int64_t i = 0; i < kN; ++i) values[i * kN + i] = 2.0;
  const Matrix m = Matrix::FromValues<double>(kN, kN, values);
  const DeterminantResult result = Lu(m);
  EXPECT_EQ(result.stats.backend, "cuda");
  // The GPU the job ran on, one of the backend's (all of them on a machine with one GPU).
  EXPECT_NE(result.stats.device.find("(device "), std::string::npos) << result.stats.device;
  EXPECT_NE(backend().device().find(result.stats.device), std::string::npos)
      << result.stats.device << " not in " << backend().device();
  EXPECT_GT(result.stats.seconds, 0.0);
  EXPECT_LT(result.stats.seconds, 10.0);
}

TEST_F(CudaBackendTest, DiagonalOfHugeEntriesDoesNotOverflow) {
  // 1e300^200 = 1e60000: every partial product past the sixth leaves the double range.
  const int n = 200;
  std::vector<double> a(n * n, 0.0);
  for (int i = 0; i < n; ++i) a[i * n + i] = 1e300;
  const DecimalForm decimal = Lu(Matrix::FromValues<double>(n, n, a)).value.Decimal();
  EXPECT_EQ(decimal.exponent10, 60000);
  // 1e300 is inexact in binary: 200 roundings of ~1e-17 relative each.
  EXPECT_NEAR(decimal.mantissa.real(), 1.0, 1e-12);
  EXPECT_EQ(decimal.mantissa.imag(), 0.0);
}

TEST_F(CudaBackendTest, DiagonalOfTinyEntriesDoesNotUnderflow) {
  // n = 1000 > the reduction's 256 threads, not a multiple of them; signs alternate in blocks.
  const int n = 1000;
  std::vector<double> a(n * n, 0.0);
  int negatives = 0;
  for (int i = 0; i < n; ++i) {
    const bool negative = i % 7 == 3;
    negatives += negative;
    a[i * n + i] = negative ? -0.5e-300 : 2e-300;
  }
  // 143 entries of -0.5e-300 and 857 of 2e-300: about 10^-299785.
  const ScaledNumber det = Lu(Matrix::FromValues<double>(n, n, a)).value;
  EXPECT_EQ(det.phase(), std::complex<double>(negatives % 2 == 0 ? 1.0 : -1.0));
  const double expected_log10 =
      (n - negatives) * std::log10(2e-300) + negatives * std::log10(0.5e-300);
  EXPECT_NEAR(det.log_abs() / std::log(10.0), expected_log10, 1e-9 * std::abs(expected_log10));
}

TEST_F(CudaBackendTest, PermutationMatrixIsItsSign) {
  std::mt19937_64 rng(2);
  for (int n : {1, 2, 255, 256, 257, 600}) {
    std::vector<int> permutation(n);
    std::iota(permutation.begin(), permutation.end(), 0);
    std::shuffle(permutation.begin(), permutation.end(), rng);
    // The sign from the cycle structure: each cycle of length L contributes (-1)^(L-1).
    std::vector<bool> seen(n, false);
    int sign = 1;
    for (int i = 0; i < n; ++i) {
      if (seen[i]) continue;
      int length = 0;
      for (int j = i; !seen[j]; j = permutation[j]) {
        seen[j] = true;
        ++length;
      }
      if (length % 2 == 0) sign = -sign;
    }
    std::vector<double> a(static_cast<size_t>(n) * n, 0.0);
    for (int i = 0; i < n; ++i) a[static_cast<size_t>(i) * n + permutation[i]] = 1.0;
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    EXPECT_EQ(Lu(Matrix::FromValues<double>(n, n, a)).value.ToComplex(),
              std::complex<double>(sign));
  }
}

TEST_F(CudaBackendTest, ComplexDiagonalKeepsItsPhase) {
  const int n = 300;
  std::vector<std::complex<double> > a(n * n, 0.0);
  std::complex<long double> phase = 1.0L;
  long double log10_magnitude = 0.0L;
  for (int i = 0; i < n; ++i) {
    const double angle = 0.1 * i + 0.05;
    const double magnitude = i % 2 == 0 ? 1e250 : 3e-200;
    a[i * n + i] = std::polar(magnitude, angle);
    phase *= std::polar(1.0L, static_cast<long double>(angle));
    log10_magnitude += std::log10(static_cast<long double>(magnitude));
  }
  const ScaledNumber det = Lu(Matrix::FromValues<std::complex<double> >(n, n, a)).value;
  EXPECT_NEAR(std::abs(det.phase() - std::complex<double>(phase)), 0.0, 1e-11);
  EXPECT_NEAR(det.log_abs() / std::log(10.0), static_cast<double>(log10_magnitude), 1e-9);
}

TEST_F(CudaBackendTest, ExactlyZeroPivotGivesZero) {
  // Column 3 is zero: whatever the pivoting, U gets an exact zero.
  const int n = 9;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> a(n * n);
  for (double& x : a) x = uniform(rng);
  for (int i = 0; i < n; ++i) a[i * n + 3] = 0.0;
  const DeterminantResult result = Lu(Matrix::FromValues<double>(n, n, a));
  EXPECT_TRUE(result.value.is_zero()) << result.value.ToComplex();
}

#endif  // MATRIXD_HAVE_CUDA

}  // namespace
}  // namespace matrixd
