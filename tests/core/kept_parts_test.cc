// WithKeptParts (core/factorization.h): a factorization kept whole on one device is seen as its
// parts' device views there (then any Solve takes it, transposes included); one kept in parts over
// several GPUs, and a factorization not kept on a device, stay as they are. No GPU needed: the
// kept factorizations here are stand-ins in host memory.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/device_factorization.h"
#include "core/factorization.h"
#include "core/operations.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace matrixd {
namespace {

using ::testing::HasSubstr;

// An n x n LU "kept" on device 3 (whole) or over 2 devices (in parts): host bytes viewed as device
// memory. Only the views matter here.
class StandInKept final : public DeviceFactorization {
 public:
  StandInKept(int64_t n, bool whole)
      : DeviceFactorization(n, DType::kFloat64, FactorizationKind::kLu),
        whole_(whole),
        factor_(static_cast<size_t>(n * n)),
        permutation_(static_cast<size_t>(n)) {}

  int device_index() const override { return 3; }
  std::string device() const override { return "stand-in"; }
  absl::Status Read(uint64_t /*offset*/, std::span<std::byte> /*out*/) const override {
    return absl::OkStatus();
  }
  std::vector<DevicePart> Parts() const override {
    if (whole_) return {{.device_index = 3, .bytes = byte_size()}};
    return {{.device_index = 0, .bytes = byte_size() / 2},
            {.device_index = 1, .bytes = byte_size() / 2}};
  }
  absl::StatusOr<Matrix> Solve(const MatrixView& /*rhs*/) override {
    return absl::UnimplementedError("stand-in");
  }
  bool whole_on_one_device() const override { return whole_; }
  MatrixView view() const override {
    if (!whole_) return DeviceFactorization::view();
    return Device(factor_.data(), rows(), cols(), DType::kFloat64);
  }
  MatrixView permutation() const override {
    if (!whole_) return {};
    return Device(permutation_.data(), 1, rows(), DType::kInt64);
  }

 private:
  static MatrixView Device(const void* data, int64_t rows, int64_t cols, DType dtype) {
    return {.rows = rows,
            .cols = cols,
            .dtype = dtype,
            .data = static_cast<const std::byte*>(data),
            .space = MemorySpace::kDevice,
            .device = 3};
  }

  const bool whole_;
  const std::vector<double> factor_;
  const std::vector<int64_t> permutation_;
};

FactorizationView KeptView(DeviceFactorization& kept) {
  FactorizationView f;
  f.kind = kept.kind();
  f.factor = kept.view();
  f.kept = &kept;
  return f;
}

TEST(WithKeptParts, OneKeptWholeOnOneDeviceIsItsPartsViews) {
  StandInKept kept(5, /*whole=*/true);
  const FactorizationView f = WithKeptParts(KeptView(kept));
  EXPECT_EQ(f.kept, nullptr);
  EXPECT_EQ(f.factor.data, kept.view().data);
  EXPECT_TRUE(f.factor.on_device());
  EXPECT_EQ(f.factor.device, 3);
  EXPECT_EQ(f.permutation.data, kept.permutation().data);
  EXPECT_EQ(f.permutation.dtype, DType::kInt64);
  EXPECT_EQ(f.permutation.cols, 5);
  // As parts of one device, a transposed solve passes the checks.
  const std::vector<double> b(5);
  const MatrixView rhs = {.rows = 5,
                          .cols = 1,
                          .dtype = DType::kFloat64,
                          .data = reinterpret_cast<const std::byte*>(b.data())};
  EXPECT_TRUE(CheckSolve(f, rhs, {.transpose = SolveTranspose::kTranspose}).ok());
}

TEST(WithKeptParts, OneKeptInPartsOverSeveralGpusStaysAsItIs) {
  StandInKept kept(5, /*whole=*/false);
  const FactorizationView f = WithKeptParts(KeptView(kept));
  EXPECT_EQ(f.kept, &kept);
  EXPECT_EQ(f.factor.data, nullptr);
  EXPECT_EQ(f.permutation.data, nullptr);
  const std::vector<double> b(5);
  const MatrixView rhs = {.rows = 5,
                          .cols = 1,
                          .dtype = DType::kFloat64,
                          .data = reinterpret_cast<const std::byte*>(b.data())};
  const absl::Status transposed = CheckSolve(f, rhs, {.transpose = SolveTranspose::kTranspose});
  EXPECT_EQ(transposed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(transposed.message(), HasSubstr("transpose"));
}

TEST(WithKeptParts, AFactorizationNotKeptOnADeviceStaysAsItIs) {
  const std::vector<double> lu(4, 1.0);
  const std::vector<int64_t> permutation = {0, 1};
  FactorizationView plain;
  plain.factor = {.rows = 2,
                  .cols = 2,
                  .dtype = DType::kFloat64,
                  .data = reinterpret_cast<const std::byte*>(lu.data())};
  plain.permutation = {.rows = 1,
                       .cols = 2,
                       .dtype = DType::kInt64,
                       .data = reinterpret_cast<const std::byte*>(permutation.data())};
  const FactorizationView f = WithKeptParts(plain);
  EXPECT_EQ(f.factor.data, plain.factor.data);
  EXPECT_EQ(f.permutation.data, plain.permutation.data);
  EXPECT_EQ(f.kept, nullptr);
}

TEST(DeviceFactorization, IsNotWritten) {
  StandInKept kept(2, /*whole=*/true);
  const std::vector<std::byte> bytes(8);
  const absl::Status written = kept.Write(0, bytes);
  EXPECT_EQ(written.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(written.message(), HasSubstr("made by Factorize"));
}

}  // namespace
}  // namespace matrixd
