// Distributed resident matrices on the GPUs of this process (core/distributed_resident_matrix.h):
// each part in device memory of its own GPU (the CUDA backend's resident matrices), generated in
// place by the device kernel bit for bit as on the host, uploaded in odd pieces and gathered
// back, and the determinant over every GPU read from the parts in place equal to the one-GPU
// determinant of the same matrix. Skips with fewer than 2 CUDA devices.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "core/distributed_resident_matrix.h"
#include "core/job_control.h"
#include "core/make_backend.h"
#include "core/matrix_generator.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

class DistributedResidentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = DeviceCount();
    if (gpus_ < 2) GTEST_SKIP() << "fewer than 2 CUDA devices: distributed case skipped";
    auto cuda = MakeBackend("cuda", {});
    ASSERT_TRUE(cuda.ok()) << cuda.status();
    backend_ = *std::move(cuda);
  }

  // Parts on every GPU (backend device g = part g), as the server's registry makes them.
  std::unique_ptr<DistributedResidentMatrix> Make(int64_t rows, int64_t cols, DType dtype) {
    const RowCyclicLayout layout{.rows = rows, .cols = cols, .parts = gpus_};
    std::vector<std::unique_ptr<ResidentMatrix>> parts(static_cast<size_t>(gpus_));
    for (int g = 0; g < gpus_; ++g) {
      if (layout.LocalRows(g) == 0) continue;
      auto part = backend_->AllocateResident(layout.LocalRows(g), cols, dtype, g);
      EXPECT_TRUE(part.ok()) << part.status();
      if (!part.ok()) return nullptr;
      EXPECT_EQ((*part)->device_index(), g);
      EXPECT_TRUE((*part)->GeneratesInPlace());
      parts[static_cast<size_t>(g)] = *std::move(part);
    }
    auto matrix = DistributedResidentMatrix::Make(layout, dtype, std::move(parts));
    EXPECT_TRUE(matrix.ok()) << matrix.status();
    return matrix.ok() ? *std::move(matrix) : nullptr;
  }

  int gpus_ = 0;
  std::unique_ptr<Backend> backend_;
};

TEST_F(DistributedResidentTest, GeneratedOnEveryGpuEqualsTheHostGeneratorBitForBit) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128,
                            DType::kInt64, DType::kUInt32}) {
    for (const GeneratorKind kind :
         {GeneratorKind::kRandom, GeneratorKind::kIdentity, GeneratorKind::kHilbert}) {
      if (kind == GeneratorKind::kHilbert && !IsFloating(dtype)) continue;
      for (const int64_t n : {1, 513, 1537}) {
        SCOPED_TRACE(testing::Message()
                     << DTypeName(dtype) << " kind " << static_cast<int>(kind) << " n " << n);
        auto matrix = Make(n, n + 3, dtype);
        ASSERT_NE(matrix, nullptr);
        const GeneratorOptions options{.kind = kind, .seed = 12345};
        ASSERT_TRUE(GenerateInto(*matrix, options).ok());
        std::vector<std::byte> got(matrix->byte_size());
        ASSERT_TRUE(matrix->Read(0, got).ok());
        std::vector<std::byte> want(got.size());
        ASSERT_TRUE(GenerateOnHost(options, GeneratedRows{}, n, n + 3, dtype, want).ok());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0);
      }
    }
  }
}

TEST_F(DistributedResidentTest, UploadedInOddPiecesDownloadsBitForBit) {
  const int64_t n = 1501;
  auto matrix = Make(n, n, DType::kFloat64);
  ASSERT_NE(matrix, nullptr);
  std::vector<double> values(static_cast<size_t>(n * n));
  std::iota(values.begin(), values.end(), -7.25);
  const auto bytes = std::as_bytes(std::span<const double>(values));
  const size_t piece = 1'000'003;  // crosses block and part boundaries at odd places
  for (size_t at = 0; at < bytes.size(); at += piece) {
    ASSERT_TRUE(matrix->Write(at, bytes.subspan(at, std::min(piece, bytes.size() - at))).ok());
  }
  ASSERT_TRUE(matrix->Flush().ok());
  std::vector<double> back(values.size());
  ASSERT_TRUE(matrix->Read(0, std::as_writable_bytes(std::span<double>(back))).ok());
  EXPECT_EQ(back, values);
}

TEST_F(DistributedResidentTest, DeterminantReadInPlaceEqualsTheOneGpuDeterminant) {
  for (const int64_t n : {1, 600, 1537}) {
    auto matrix = Make(n, n, DType::kFloat64);
    ASSERT_NE(matrix, nullptr);
    ASSERT_TRUE(GenerateInto(*matrix, {.kind = GeneratorKind::kRandom, .seed = 5}).ok());
    Matrix host(n, n, DType::kFloat64);
    ASSERT_TRUE(matrix->Read(0, {host.mutable_bytes(), host.byte_size()}).ok());
    JobControl control;
    auto single = backend_->Determinant(host.view(), {}, &control);
    ASSERT_TRUE(single.ok()) << single.status();
    const DeterminantOptions options{.devices = gpus_, .distributed = matrix.get()};
    ASSERT_TRUE(backend_->DeterminantReadsOnDevice(matrix->view(), options));
    auto spread = backend_->Determinant(matrix->view(), options, &control);
    ASSERT_TRUE(spread.ok()) << spread.status();
    EXPECT_EQ(spread->value.phase(), single->value.phase()) << n;
    EXPECT_NEAR(spread->value.log_abs(), single->value.log_abs(),
                1e-9 * std::max(1.0, std::abs(single->value.log_abs())))
        << n;
    // Another GPU count than the matrix's parts is refused, not misread.
    if (gpus_ > 2) {
      const DeterminantOptions fewer{.devices = 2, .distributed = matrix.get()};
      EXPECT_EQ(backend_->Determinant(matrix->view(), fewer, &control).status().code(),
                absl::StatusCode::kFailedPrecondition);
    }
  }
}

}  // namespace
}  // namespace matrixd
