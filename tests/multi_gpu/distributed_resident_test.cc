// Distributed resident matrices on the GPUs of this process (core/distributed_resident_matrix.h):
// each part in device memory of its own GPU (the CUDA backend's resident matrices), generated in
// place by the device kernel bit for bit as on the host, uploaded in odd pieces and gathered
// back, the determinant over every GPU read from the parts in place equal to the one-GPU
// determinant of the same matrix, and Cannon's product of distributed operands read from the parts
// in place (float64, and complex64 for the dtypes beyond it) equal to the product of their host
// copies, and Cannon's product written into a distributed (or one GPU's) resident matrix, as a
// kept product is, equal bit for bit to the product returned to the host, for every dtype it
// takes. Skips with fewer than 2 CUDA devices.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/distributed_resident_matrix.h"
#include "core/job_control.h"
#include "core/make_backend.h"
#include "core/matrix_generator.h"
#include "gtest/gtest.h"
#include "tests/multi_gpu/gpu_devices.h"

namespace matrixd {
namespace {

using testing::DeviceCount;

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

  // A random host matrix.
  static Matrix RandomHost(int64_t rows, int64_t cols, DType dtype, uint64_t seed) {
    Matrix m(rows, cols, dtype);
    EXPECT_TRUE(GenerateOnHost({.kind = GeneratorKind::kRandom, .seed = seed}, GeneratedRows{},
                               rows, cols, dtype, {m.mutable_bytes(), m.byte_size()})
                    .ok());
    return m;
  }

  // A random distributed matrix (float64 unless said) and its host copy.
  struct Generated {
    std::unique_ptr<DistributedResidentMatrix> parts;
    Matrix host;
  };
  Generated MakeRandom(int64_t rows, int64_t cols, uint64_t seed, DType dtype = DType::kFloat64) {
    Generated m{Make(rows, cols, dtype), Matrix(rows, cols, dtype)};
    if (m.parts == nullptr) return m;
    EXPECT_TRUE(GenerateInto(*m.parts, {.kind = GeneratorKind::kRandom, .seed = seed}).ok());
    EXPECT_TRUE(m.parts->Read(0, {m.host.mutable_bytes(), m.host.byte_size()}).ok());
    return m;
  }

  // Cannon's product on `devices` GPUs of `a` and `b` (each read from its parts in place, or from
  // its host copy) equals, bit for bit, Cannon's product of the host copies, and the CPU product
  // within rounding (`bound` x k in every element; T the element type).
  template <typename T = double>
  void ExpectProduct(const Generated& a, const Generated& b, bool a_in_place, bool b_in_place,
                     int devices, double bound = 1e-13) {
    SCOPED_TRACE(::testing::Message() << a.host.rows() << "x" << a.host.cols() << " times "
                                      << b.host.rows() << "x" << b.host.cols() << " on " << devices
                                      << " GPUs, in place: " << a_in_place << b_in_place);
    const MatrixView a_view = a_in_place ? a.parts->view() : a.host.view();
    const MatrixView b_view = b_in_place ? b.parts->view() : b.host.view();
    MultiplyOptions options{.devices = devices, .method = MultiplyMethod::kCannon};
    ASSERT_TRUE(backend_->MultiplyReadsOnDevice(a_view, b_view, options));
    options.distributed_a = a_in_place ? a.parts.get() : nullptr;
    options.distributed_b = b_in_place ? b.parts.get() : nullptr;
    JobControl control;
    auto spread = backend_->Multiply(a_view, b_view, options, &control);
    ASSERT_TRUE(spread.ok()) << spread.status();
    const MultiplyOptions from_host{.devices = devices, .method = MultiplyMethod::kCannon};
    auto host = backend_->Multiply(a.host.view(), b.host.view(), from_host, &control);
    ASSERT_TRUE(host.ok()) << host.status();
    ASSERT_EQ(spread->c.byte_size(), host->c.byte_size());
    EXPECT_EQ(std::memcmp(spread->c.bytes(), host->c.bytes(), host->c.byte_size()), 0);
    auto reference = cpu_->Multiply(a.host.view(), b.host.view(), {}, &control);
    ASSERT_TRUE(reference.ok()) << reference.status();
    double worst = 0.0;
    for (size_t i = 0; i < reference->c.As<T>().size(); ++i) {
      worst = std::max(
          worst, static_cast<double>(std::abs(spread->c.As<T>()[i] - reference->c.As<T>()[i])));
    }
    EXPECT_LE(worst, bound * static_cast<double>(a.host.cols()));
  }

  int gpus_ = 0;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 0});
};

TEST_F(DistributedResidentTest, GeneratedOnEveryGpuEqualsTheHostGeneratorBitForBit) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128,
                            DType::kInt64, DType::kUInt32}) {
    for (const GeneratorKind kind :
         {GeneratorKind::kRandom, GeneratorKind::kIdentity, GeneratorKind::kHilbert}) {
      if (kind == GeneratorKind::kHilbert && !IsFloating(dtype)) continue;
      for (const int64_t n : {1, 513, 1537}) {
        SCOPED_TRACE(::testing::Message()
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

TEST_F(DistributedResidentTest, ProductOfTwoDistributedOperandsEqualsTheHostProduct) {
  // n < 512 (one block, on part 0), odd and not a multiple of 512, and a rectangular product whose
  // operands have different row counts.
  for (const auto [m, k, n] :
       {std::array<int64_t, 3>{300, 300, 300}, std::array<int64_t, 3>{1001, 1001, 1001},
        std::array<int64_t, 3>{1537, 1100, 700}}) {
    const Generated a = MakeRandom(m, k, 21);
    const Generated b = MakeRandom(k, n, 22);
    ASSERT_NE(a.parts, nullptr);
    ASSERT_NE(b.parts, nullptr);
    ExpectProduct(a, b, true, true, gpus_);
  }
}

TEST_F(DistributedResidentTest, ProductOfTwoDistributedComplex64OperandsEqualsTheHostProduct) {
  // Complex64 moves as pairs of floats (NCCL has no complex type); its rows run over block edges.
  const Generated a = MakeRandom(1100, 700, 27, DType::kComplex64);
  const Generated b = MakeRandom(700, 900, 28, DType::kComplex64);
  ASSERT_NE(a.parts, nullptr);
  ASSERT_NE(b.parts, nullptr);
  for (int devices = 1; devices <= gpus_; ++devices) {
    ExpectProduct<std::complex<float>>(a, b, true, true, devices, 1e-5);
    ExpectProduct<std::complex<float>>(a, b, true, false, devices, 1e-5);
  }
}

TEST_F(DistributedResidentTest, ProductOfADistributedAndAHostOperandEqualsTheHostProduct) {
  const Generated a = MakeRandom(1029, 777, 23);
  const Generated b = MakeRandom(777, 1029, 24);
  ASSERT_NE(a.parts, nullptr);
  ASSERT_NE(b.parts, nullptr);
  ExpectProduct(a, b, true, false, gpus_);
  ExpectProduct(a, b, false, true, gpus_);
}

TEST_F(DistributedResidentTest, ProductOnFewerGpusThanPartsReadsEveryPart) {
  // The parts lie on every GPU; the product runs on 1 .. all of them.
  const Generated a = MakeRandom(1100, 1100, 25);
  ASSERT_NE(a.parts, nullptr);
  for (int devices = 1; devices <= gpus_; ++devices) ExpectProduct(a, a, true, true, devices);
}

// Cannon's product written into a resident matrix (MultiplyOptions::output: a kept product)
// equals, bit for bit, the same product returned to the host, for every dtype Cannon takes, on
// every GPU count: into a matrix distributed over every GPU, and into one on the last GPU.
// Shapes: C smaller than the grid, rectangular products whose rows cross the 512-row blocks, and
// a square one the grid does not divide.
TEST_F(DistributedResidentTest, AProductWrittenIntoResidentMatricesEqualsTheHostProductBitForBit) {
  for (const DType dtype :
       {DType::kFloat32, DType::kFloat64, DType::kComplex64, DType::kComplex128}) {
    for (const auto [m, k, n] :
         {std::array<int64_t, 3>{1, 1, 1}, std::array<int64_t, 3>{3, 5, 2},
          std::array<int64_t, 3>{1537, 300, 700}, std::array<int64_t, 3>{700, 1100, 1537},
          std::array<int64_t, 3>{1025, 1025, 1025}}) {
      const Matrix a = RandomHost(m, k, dtype, 41);
      const Matrix b = RandomHost(k, n, dtype, 42);
      for (int devices = 1; devices <= gpus_; ++devices) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " " << m << "x" << k << " times "
                                          << k << "x" << n << " on " << devices << " GPUs");
        MultiplyOptions options{.devices = devices, .method = MultiplyMethod::kCannon};
        JobControl control;
        auto host = backend_->Multiply(a.view(), b.view(), options, &control);
        ASSERT_TRUE(host.ok()) << host.status();
        std::vector<std::unique_ptr<ResidentMatrix>> outputs;
        outputs.push_back(Make(m, n, dtype));
        // On the last GPU: one that holds only some of C's blocks.
        auto single = backend_->AllocateResident(m, n, dtype, gpus_ - 1);
        ASSERT_TRUE(single.ok()) << single.status();
        outputs.push_back(*std::move(single));
        for (const auto& output : outputs) {
          ASSERT_NE(output, nullptr);
          SCOPED_TRACE(output->device());
          options.output = output.get();
          auto kept = backend_->Multiply(a.view(), b.view(), options, &control);
          ASSERT_TRUE(kept.ok()) << kept.status();
          EXPECT_TRUE(kept->c.empty()) << "C written into the output, not returned";
          std::vector<std::byte> back(output->byte_size());
          ASSERT_TRUE(output->Read(0, back).ok());
          ASSERT_EQ(back.size(), host->c.byte_size());
          EXPECT_EQ(std::memcmp(back.data(), host->c.bytes(), back.size()), 0);
        }
      }
    }
  }
}

TEST_F(DistributedResidentTest, AProductOfDistributedOperandsKeptDistributedStaysBitForBit) {
  const Generated a = MakeRandom(1100, 777, 43);
  const Generated b = MakeRandom(777, 1029, 44);
  ASSERT_NE(a.parts, nullptr);
  ASSERT_NE(b.parts, nullptr);
  const auto output = Make(1100, 1029, DType::kFloat64);
  ASSERT_NE(output, nullptr);
  MultiplyOptions options{.devices = gpus_,
                          .method = MultiplyMethod::kCannon,
                          .distributed_a = a.parts.get(),
                          .distributed_b = b.parts.get()};
  options.output = output.get();
  JobControl control;
  auto kept = backend_->Multiply(a.parts->view(), b.parts->view(), options, &control);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->c.empty());
  const MultiplyOptions from_host{.devices = gpus_, .method = MultiplyMethod::kCannon};
  auto host = backend_->Multiply(a.host.view(), b.host.view(), from_host, &control);
  ASSERT_TRUE(host.ok()) << host.status();
  std::vector<std::byte> back(output->byte_size());
  ASSERT_TRUE(output->Read(0, back).ok());
  ASSERT_EQ(back.size(), host->c.byte_size());
  EXPECT_EQ(std::memcmp(back.data(), host->c.bytes(), back.size()), 0);
}

TEST_F(DistributedResidentTest, AnOutputCannonCannotWriteGetsCOnTheHost) {
  const Matrix a = RandomHost(600, 600, DType::kFloat64, 45);
  JobControl control;
  auto on_host = cpu_->AllocateResident(600, 600, DType::kFloat64, -1);
  ASSERT_TRUE(on_host.ok()) << on_host.status();
  auto other_shape = Make(600, 599, DType::kFloat64);
  ASSERT_NE(other_shape, nullptr);
  for (ResidentMatrix* output : {on_host->get(), static_cast<ResidentMatrix*>(other_shape.get())}) {
    const MultiplyOptions options{
        .output = output, .devices = gpus_, .method = MultiplyMethod::kCannon};
    auto c = backend_->Multiply(a.view(), a.view(), options, &control);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->c.rows(), 600) << output->device();
  }
}

TEST_F(DistributedResidentTest, ADistributedOperandOfAnotherShapeThanItsViewIsRefused) {
  const Generated a = MakeRandom(600, 600, 26);
  ASSERT_NE(a.parts, nullptr);
  const Matrix b(500, 500, DType::kFloat64);
  MatrixView wrong = a.parts->view();
  wrong.rows = 500;
  wrong.cols = 500;
  JobControl control;
  const MultiplyOptions options{
      .devices = gpus_, .method = MultiplyMethod::kCannon, .distributed_a = a.parts.get()};
  auto c = backend_->Multiply(wrong, b.view(), options, &control);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("a: the distributed matrix is 600x600"), std::string::npos)
      << c.status();
}

}  // namespace
}  // namespace matrixd
