// The CUDA backend with products and determinants over several GPUs
// (core/multi_gpu/multi_gpu_backend.h): the product by Cannon over 1..all GPUs (each floating
// dtype) and the determinant by MultiGpuLu over 2..all GPUs (each floating dtype, equal to one
// GPU's too) equal the CPU backend's, from host operands and from resident matrices, and what they
// cannot take is refused with a status naming the field. Which jobs read device operands in place
// is checked on a wrapped CPU backend, anywhere; the rest skips without a CUDA device.
#include "core/multi_gpu/multi_gpu_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu/cpu_backend.h"
#include "core/distributed_resident_matrix.h"
#include "core/make_backend.h"
#include "core/resident_matrix.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/dense_test_support.h"
#include "tests/multi_gpu/gpu_devices.h"

namespace matrixd::multi_gpu {
namespace {

using testing::DeviceCount;

using ::testing::HasSubstr;

TEST(CannonDeviceBytesPerGpu, FiveBlocksPerGridPosition) {
  // 1 GPU: one 1000 x 1000 block position; 4 GPUs: a 2 x 2 grid of 500 x 500 blocks, one each.
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 1), 5u * 1000 * 1000 * 8);
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 4), 5u * 500 * 500 * 8);
  // 2 GPUs: a 2 x 2 grid, two positions each.
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 2), 2u * 5 * 500 * 500 * 8);
  // Blocks of the product's dtype: float32 half of float64, complex128 twice.
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 4, 4), 5u * 500 * 500 * 4);
  EXPECT_EQ(CannonDeviceBytesPerGpu(1000, 1000, 1000, 4, 16), 5u * 500 * 500 * 16);
}

TEST(MultiGpuBackend, ProductDeviceBytesFollowTheDtype) {
  const std::unique_ptr<Backend> backend =
      WithMultiGpuProducts(MakeCpuBackend({.threads = 1}), {0, 1});
  const MultiplyOptions cannon{.devices = 2, .method = MultiplyMethod::kCannon};
  const Matrix f(1000, 1000, DType::kFloat32);
  const Matrix z(1000, 1000, DType::kComplex128);
  EXPECT_EQ(backend->MultiplyDeviceBytes(f.view(), f.view(), cannon),
            CannonDeviceBytesPerGpu(1000, 1000, 1000, 2, 4));
  EXPECT_EQ(backend->MultiplyDeviceBytes(z.view(), z.view(), cannon),
            CannonDeviceBytesPerGpu(1000, 1000, 1000, 2, 16));
}

// A view that says its bytes are on device 0 (only shapes and options are read here).
MatrixView DeviceView(const Matrix& m) {
  MatrixView view = m.view();
  view.space = MemorySpace::kDevice;
  view.device = 0;
  return view;
}

TEST(MultiGpuBackend, JobsOverSeveralGpusReadDeviceOperandsInPlace) {
  // The questions read no GPU: any wrapped backend answers them.
  const std::unique_ptr<Backend> backend =
      WithMultiGpuProducts(MakeCpuBackend({.threads = 1}), {0, 1});
  const Matrix a(8, 8, DType::kFloat64);
  const Matrix f(8, 8, DType::kFloat32);
  const Matrix u(8, 8, DType::kUInt32);
  EXPECT_TRUE(backend->DeterminantReadsOnDevice(DeviceView(a), {.devices = 2}));
  EXPECT_TRUE(backend->DeterminantReadsOnDevice(DeviceView(f), {.devices = 2}));
  EXPECT_FALSE(backend->DeterminantReadsOnDevice(DeviceView(u), {.devices = 2}));
  EXPECT_FALSE(backend->DeterminantReadsOnDevice(DeviceView(a), {.modulus = 7, .devices = 2}));
  EXPECT_FALSE(backend->DeterminantReadsOnDevice(DeviceView(a), {.devices = 3}));
  const MultiplyOptions cannon{.devices = 2, .method = MultiplyMethod::kCannon};
  EXPECT_TRUE(backend->MultiplyReadsOnDevice(DeviceView(a), DeviceView(a), cannon));
  EXPECT_TRUE(backend->MultiplyReadsOnDevice(DeviceView(a), DeviceView(a), {.devices = 2}));
  MultiplyOptions transposed = cannon;
  transposed.transpose_a = true;
  EXPECT_FALSE(backend->MultiplyReadsOnDevice(DeviceView(a), DeviceView(a), transposed));
  EXPECT_TRUE(backend->MultiplyReadsOnDevice(DeviceView(f), DeviceView(f), cannon));
  EXPECT_FALSE(backend->MultiplyReadsOnDevice(DeviceView(u), DeviceView(u), cannon));
  EXPECT_FALSE(backend->MultiplyReadsOnDevice(DeviceView(f), DeviceView(a), cannon));
  // One device: the wrapped backend's answer (the CPU backend reads host bytes).
  EXPECT_FALSE(backend->DeterminantReadsOnDevice(DeviceView(a), {}));
  EXPECT_FALSE(backend->MultiplyReadsOnDevice(DeviceView(a), DeviceView(a), {}));
}

TEST(MultiGpuBackend, ResidentOperandsGiveTheHostOperandsResults) {
  const int devices = DeviceCount();
  if (devices < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const auto resident = [&](const Matrix& m, int device_index) {
    absl::StatusOr<std::unique_ptr<ResidentMatrix>> r =
        (*cuda)->AllocateResident(m.rows(), m.cols(), m.dtype(), device_index);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE((*r)->Write(0, {m.bytes(), m.byte_size()}).ok());
    EXPECT_TRUE((*r)->Flush().ok());
    return *std::move(r);
  };
  JobControl control;
  // The operands on the last GPU and on the first: each GPU's share is pushed by its holder.
  const Matrix a = testing::RandomMatrix<double>(700, 700, 3);
  const Matrix b = testing::RandomMatrix<double>(700, 500, 4);
  const std::unique_ptr<ResidentMatrix> a_resident = resident(a, devices - 1);
  const std::unique_ptr<ResidentMatrix> b_resident = resident(b, 0);
  ASSERT_TRUE(a_resident->view().on_device());
  for (int gpus = 2; gpus <= devices; ++gpus) {
    const DeterminantOptions det_options{.devices = gpus};
    ASSERT_TRUE((*cuda)->DeterminantReadsOnDevice(a_resident->view(), det_options));
    auto from_host = (*cuda)->Determinant(a.view(), det_options, &control);
    auto from_device = (*cuda)->Determinant(a_resident->view(), det_options, &control);
    ASSERT_TRUE(from_host.ok()) << from_host.status();
    ASSERT_TRUE(from_device.ok()) << from_device.status();
    EXPECT_EQ(from_device->value.phase(), from_host->value.phase()) << gpus << " GPUs";
    // The same factors; the diagonal's logarithms are summed with atomics, in no fixed order.
    EXPECT_NEAR(from_device->value.log_abs(), from_host->value.log_abs(),
                1e-13 * std::abs(from_host->value.log_abs()))
        << gpus << " GPUs";

    const MultiplyOptions options{.devices = gpus, .method = MultiplyMethod::kCannon};
    ASSERT_TRUE((*cuda)->MultiplyReadsOnDevice(a_resident->view(), b_resident->view(), options));
    auto c_host = (*cuda)->Multiply(a.view(), b.view(), options, &control);
    auto c_device = (*cuda)->Multiply(a_resident->view(), b_resident->view(), options, &control);
    ASSERT_TRUE(c_host.ok()) << c_host.status();
    ASSERT_TRUE(c_device.ok()) << c_device.status();
    ASSERT_EQ(c_device->c.byte_size(), c_host->c.byte_size());
    EXPECT_TRUE(std::equal(c_device->c.bytes(), c_device->c.bytes() + c_device->c.byte_size(),
                           c_host->c.bytes()))
        << gpus << " GPUs";
  }
}

TEST(MultiGpuBackend, AOneGpuJobReadsOperandsHeldByOtherGpus) {
  const int devices = DeviceCount();
  if (devices < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = testing::RandomMatrix<double>(300, 200, 5);
  const Matrix b = testing::RandomMatrix<double>(200, 100, 6);
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> a_resident =
      (*cuda)->AllocateResident(a.rows(), a.cols(), a.dtype(), devices - 1);
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> b_resident =
      (*cuda)->AllocateResident(b.rows(), b.cols(), b.dtype(), 0);
  ASSERT_TRUE(a_resident.ok() && b_resident.ok());
  ASSERT_TRUE((*a_resident)->Write(0, {a.bytes(), a.byte_size()}).ok());
  ASSERT_TRUE((*b_resident)->Write(0, {b.bytes(), b.byte_size()}).ok());
  ASSERT_TRUE((*a_resident)->Flush().ok() && (*b_resident)->Flush().ok());
  // A (on the last GPU) times B (on the first), computed on each GPU in turn: the pools let every
  // GPU read the other's memory (core/cuda/cuda_memory_resource.h).
  for (int device = 0; device < devices; ++device) {
    JobControl control;
    control.set_device_index(device);
    auto from_device =
        (*cuda)->Multiply((*a_resident)->view(), (*b_resident)->view(), {}, &control);
    ASSERT_TRUE(from_device.ok()) << "on GPU " << device << ": " << from_device.status();
    JobControl host_control;
    host_control.set_device_index(device);
    auto from_host = (*cuda)->Multiply(a.view(), b.view(), {}, &host_control);
    ASSERT_TRUE(from_host.ok()) << from_host.status();
    EXPECT_TRUE(std::equal(from_device->c.bytes(),
                           from_device->c.bytes() + from_device->c.byte_size(),
                           from_host->c.bytes()))
        << "on GPU " << device;
  }
}

TEST(MultiGpuBackend, ProductOfEveryDtypeOverEveryDeviceCountEqualsTheCpuProduct) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  auto cpu = MakeCpuBackend({.threads = 0});
  testing::ForEachFloatingType([&](auto type) {
    using T = typename decltype(type)::type;
    const Matrix a = testing::RandomMatrix<T>(700, 300, 3);
    const Matrix b = testing::RandomMatrix<T>(300, 500, 4);
    JobControl control;
    auto reference = cpu->Multiply(a.view(), b.view(), {}, &control);
    ASSERT_TRUE(reference.ok()) << reference.status();
    // 1e-12 x k for float64 and complex128, 1e-5 x k for float32 and complex64 (entries in [-1,
    // 1]).
    const double bound = (std::is_same_v<testing::Real<T>, float> ? 1e-5 : 1e-12) * 300;
    for (int gpus = 1; gpus <= devices; ++gpus) {
      const MultiplyOptions options{.devices = gpus, .method = MultiplyMethod::kCannon};
      const absl::Status supported = (*cuda)->Supports(MultiplyQuery(a.view(), b.view(), options));
      ASSERT_TRUE(supported.ok()) << gpus << " GPUs: " << supported;
      auto c = (*cuda)->Multiply(a.view(), b.view(), options, &control);
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_EQ(c->c.rows(), 700);
      ASSERT_EQ(c->c.cols(), 500);
      ASSERT_EQ(c->c.dtype(), a.dtype());
      double worst = 0.0;
      for (size_t i = 0; i < c->c.As<T>().size(); ++i) {
        worst = std::max(worst,
                         static_cast<double>(std::abs(c->c.As<T>()[i] - reference->c.As<T>()[i])));
      }
      EXPECT_LE(worst, bound) << gpus << " GPUs";
      EXPECT_EQ(c->stats.kernels.size(), 3u);
      // A complex multiply-add is 8 real flops.
      EXPECT_EQ(c->stats.flops, (testing::kComplex<T> ? 8.0 : 2.0) * 700 * 300 * 500);
      // The stats name the backend and the GPUs, and time the job (the response's stats).
      EXPECT_EQ(c->stats.backend, "cuda");
      EXPECT_THAT(c->stats.device, HasSubstr(absl::StrCat("the first ", gpus, " of: ")));
      EXPECT_GT(c->stats.seconds, 0.0);
    }
  });
}

TEST(MultiGpuBackend, RefusesWhatCannonDoesNotTakeNamingTheField) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = testing::RandomMatrix<double>(8, 8, 1);
  const Matrix f = testing::RandomMatrix<float>(8, 8, 1);
  const Matrix u(8, 8, DType::kUInt32);
  auto supports = [&](const Matrix& m, const MultiplyOptions& options) {
    return (*cuda)->Supports(MultiplyQuery(m.view(), m.view(), options));
  };
  absl::Status too_many = supports(a, {.devices = devices + 1});
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.message()),
              HasSubstr("devices is " + std::to_string(devices + 1) + "; this server has " +
                        std::to_string(devices) + " GPU"));
  // Every floating dtype goes; uint32 (which one GPU multiplies exactly) does not.
  EXPECT_TRUE(supports(f, {.devices = 1, .method = MultiplyMethod::kCannon}).ok());
  absl::Status uint32 = supports(u, {.devices = 1, .method = MultiplyMethod::kCannon});
  EXPECT_EQ(uint32.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(uint32.message()), HasSubstr("a.dtype is uint32"));
  // Cannon does not run on TF32 tensor cores: float32 with allow_tf32 is refused, not degraded.
  absl::Status tf32 =
      supports(f, {.allow_tf32 = true, .devices = 1, .method = MultiplyMethod::kCannon});
  EXPECT_EQ(tf32.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(tf32.message()), HasSubstr("allow_tf32"));
  EXPECT_TRUE(supports(f, {.allow_tf32 = true}).ok());
  absl::Status transposed =
      supports(a, {.transpose_a = true, .devices = 1, .method = MultiplyMethod::kCannon});
  EXPECT_EQ(transposed.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(transposed.message()), HasSubstr("transpose_a"));
  absl::Status cublasmp = supports(a, {.method = MultiplyMethod::kCublasMp});
  EXPECT_EQ(cublasmp.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(cublasmp.message()), HasSubstr("CUBLASMP"));
  // Freivalds' check is not run over several GPUs: refused, not silently skipped.
  absl::Status verified =
      supports(a, {.verify = true, .devices = 1, .method = MultiplyMethod::kCannon});
  EXPECT_EQ(verified.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(verified.message()), HasSubstr("verify: Freivalds' check"));
  // The ordinary single-device product still goes through.
  EXPECT_TRUE(supports(f, {}).ok());
}

TEST(MultiGpuLuDeviceBytesPerGpu, LargestPartAndTwoPanelBuffers) {
  // 10 panels of 100 columns: 1 GPU holds all 10 and no buffers; of 3 GPUs the first holds 4.
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 1, 100), 10u * 100 * 1000 * 8);
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 3, 100), (4u + 2) * 100 * 1000 * 8);
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(50, 2, 512), (1u + 2) * 50 * 50 * 8);
  // complex128 elements are 16 bytes; float32 and complex64 are widened (to 8 and 16 bytes) from a
  // panel of their own elements.
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 3, 100, DType::kComplex128),
            (4u + 2) * 100 * 1000 * 16);
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 3, 100, DType::kFloat32),
            ((4u + 2) * 8 + 4) * 100 * 1000);
  EXPECT_EQ(MultiGpuLuDeviceBytesPerGpu(1000, 3, 100, DType::kComplex64),
            ((4u + 2) * 16 + 8) * 100 * 1000);
  const std::unique_ptr<Backend> backend =
      WithMultiGpuProducts(MakeCpuBackend({.threads = 1}), {0, 1});
  const Matrix z(1000, 1000, DType::kComplex64);
  EXPECT_EQ(backend->DeterminantDeviceBytes(z.view(), {.devices = 2}),
            MultiGpuLuDeviceBytesPerGpu(1000, 2, kDistributedRowBlock, DType::kComplex64));
}

TEST(MultiGpuBackend, DeterminantOverEveryDeviceCountEqualsTheCpuDeterminant) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  auto cpu = MakeCpuBackend({.threads = 0});
  const Matrix a = testing::RandomMatrix<double>(1100, 1100, 9);
  JobControl control;
  auto reference = cpu->Determinant(a.view(), {}, &control);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int gpus = 2; gpus <= devices; ++gpus) {
    const DeterminantOptions options{.devices = gpus};
    const absl::Status supported = (*cuda)->Supports(DeterminantQuery(a.view(), options));
    ASSERT_TRUE(supported.ok()) << gpus << " GPUs: " << supported;
    auto det = (*cuda)->Determinant(a.view(), options, &control);
    ASSERT_TRUE(det.ok()) << det.status();
    EXPECT_EQ(det->value.phase(), reference->value.phase()) << gpus << " GPUs";
    EXPECT_NEAR(det->value.log_abs(), reference->value.log_abs(),
                1e-9 * std::abs(reference->value.log_abs()))
        << gpus << " GPUs";
    ASSERT_EQ(det->stats.kernels.size(), 1u);
    EXPECT_EQ(det->stats.kernels[0].kernel, "multi_gpu_lu");
  }
}

TEST(MultiGpuBackend, RefusesWhatTheMultiGpuDeterminantDoesNotTakeNamingTheField) {
  const int devices = DeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Matrix a = testing::RandomMatrix<double>(8, 8, 1);
  const Matrix f = testing::RandomMatrix<float>(8, 8, 1);
  Matrix integers(8, 8, DType::kInt64);
  for (int64_t i = 0; i < 8; ++i) integers.As<int64_t>()[i * 9] = 1;
  const int many = std::max(devices, 2);
  auto supports = [&](const Matrix& m, const DeterminantOptions& options) {
    return (*cuda)->Supports(DeterminantQuery(m.view(), options));
  };
  absl::Status too_many = supports(a, {.devices = devices + 1});
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.message()),
              HasSubstr("devices is " + std::to_string(devices + 1) + "; this server has"));
  if (devices >= 2) {
    EXPECT_TRUE(supports(f, {.devices = many}).ok());
    absl::Status int64 = supports(integers, {.devices = many});
    EXPECT_EQ(int64.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(int64.message()), HasSubstr("matrix.dtype is int64"));
    absl::Status condensation =
        supports(a, {.method = DeterminantMethod::kCondensation, .devices = many});
    EXPECT_EQ(condensation.code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(condensation.message()), HasSubstr("CONDENSATION"));
  }
  // The ordinary single-device determinant still goes through.
  EXPECT_TRUE(supports(f, {}).ok());
}

// Every floating dtype over 2..all GPUs equals one GPU's determinant and the CPU backend's, as a
// ScaledNumber (a complex one with its phase): n = 1, n below one block of the LU (the other GPUs
// hold nothing), n not a multiple of the block, and a matrix with a zero row (exactly 0).
template <typename T>
class MultiGpuDeterminantDtype : public ::testing::Test {};
using FloatingTypes = ::testing::Types<float, double, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(MultiGpuDeterminantDtype, FloatingTypes);

TYPED_TEST(MultiGpuDeterminantDtype, OverSeveralGpusEqualsOneGpuAndTheCpu) {
  const int devices = DeviceCount();
  if (devices < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  absl::StatusOr<std::unique_ptr<Backend>> cuda = MakeBackend("cuda", {});
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  auto cpu = MakeCpuBackend({.threads = 0});
  JobControl control;
  for (const int64_t n : {int64_t{1}, int64_t{7}, kDistributedRowBlock + 37}) {
    Matrix a = testing::RandomMatrix<TypeParam>(n, n, 21 + n);
    for (const bool singular : {false, true}) {
      if (singular) {
        if (n < 2) continue;
        const size_t width = ElementSize(a.dtype()) * static_cast<size_t>(n);
        std::fill_n(a.mutable_bytes() + (static_cast<size_t>(n) / 2) * width, width, std::byte{0});
      }
      const std::string where =
          absl::StrCat(DTypeName(a.dtype()), " n=", n, singular ? " singular" : "");
      auto reference = cpu->Determinant(a.view(), {}, &control);
      auto one = (*cuda)->Determinant(a.view(), {}, &control);
      ASSERT_TRUE(reference.ok()) << reference.status();
      ASSERT_TRUE(one.ok()) << one.status();
      for (int gpus = 2; gpus <= devices; ++gpus) {
        const DeterminantOptions options{.devices = gpus};
        ASSERT_TRUE((*cuda)->Supports(DeterminantQuery(a.view(), options)).ok()) << where;
        auto det = (*cuda)->Determinant(a.view(), options, &control);
        ASSERT_TRUE(det.ok()) << where << ": " << det.status();
        if (singular) {
          EXPECT_TRUE(det->value.is_zero()) << where << " gpus=" << gpus;
          EXPECT_TRUE(one->value.is_zero()) << where;
          continue;
        }
        for (const DeterminantResult* other : {&*reference, &*one}) {
          EXPECT_NEAR(std::abs(det->value.phase() - other->value.phase()), 0.0, 1e-9)
              << where << " gpus=" << gpus;
          EXPECT_NEAR(det->value.log_abs(), other->value.log_abs(),
                      1e-9 * std::max(1.0, std::abs(other->value.log_abs())))
              << where << " gpus=" << gpus;
        }
      }
    }
  }
}

}  // namespace
}  // namespace matrixd::multi_gpu
