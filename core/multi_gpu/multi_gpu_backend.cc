#include "core/multi_gpu/multi_gpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/backend_wrapper.h"
#include "core/distributed_resident_matrix.h"
#include "core/factorization.h"
#include "core/job_control.h"
#include "core/multi_gpu/cannon_gemm.h"
#include "core/multi_gpu/multi_gpu_factorize.h"
#include "core/multi_gpu/multi_gpu_lu.h"
#include "core/status_macros.h"
#include "core/validation.h"

namespace matrixd::multi_gpu {
namespace {

// Columns per panel of the determinant over several GPUs (docs/distributed.md): a distributed
// resident matrix's row blocks, so that the LU reads its parts in place.
constexpr int64_t kLuBlock = kDistributedRowBlock;

// sign * exp(i angle) * exp(log_abs) without overflow: the mantissa carries exp of the fraction of
// log_abs that is not a whole number of binary exponents (a real determinant's angle is 0, and
// its mantissa real).
ScaledNumber FromDistributed(const DistributedDeterminant& det) {
  if (det.sign == 0 || !std::isfinite(det.log_abs)) return ScaledNumber::Zero();
  const double exponent = std::floor(det.log_abs / std::log(2.0));
  const double magnitude = std::exp(det.log_abs - exponent * std::log(2.0));
  const std::complex<double> mantissa =
      det.angle == 0.0 ? std::complex<double>(magnitude) : std::polar(magnitude, det.angle);
  return ScaledNumber::FromParts(static_cast<double>(det.sign) * mantissa,
                                 static_cast<int64_t>(exponent));
}

class MultiGpuBackend : public BackendWrapper {
 public:
  MultiGpuBackend(std::unique_ptr<Backend> cuda, std::vector<int> devices,
                  const DeviceMemoryLimit& memory_limit)
      : BackendWrapper(std::move(cuda)),
        devices_(std::move(devices)),
        memory_limit_(memory_limit) {}

  absl::Status Supports(const OperationQuery& query) const override {
    if (query.operation == Operation::kFactorize && query.factorize.devices > 1) {
      OperationQuery single = query;
      single.factorize.devices = 1;
      if (absl::Status s = target().Supports(single); !s.ok()) return s;
      return CheckMultiDeviceFactorize(query.dtype, query.rows, query.cols, query.factorize);
    }
    if (query.operation == Operation::kDeterminant && query.determinant.devices > 1) {
      OperationQuery single = query;
      single.determinant.devices = 1;
      if (absl::Status s = target().Supports(single); !s.ok()) return s;
      return CheckMultiDeviceDeterminant(query.dtype, query.determinant);
    }
    if (query.operation != Operation::kMultiply || !IsMultiDeviceProduct(query.multiply)) {
      return target().Supports(query);
    }
    // The single-device checks (dtype, shapes, limits) first, then what Cannon takes.
    OperationQuery single = query;
    single.multiply.devices = 1;
    single.multiply.method = MultiplyMethod::kAuto;
    if (absl::Status s = target().Supports(single); !s.ok()) return s;
    return CheckMultiDevice(query.dtype, query.multiply);
  }

  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    if (!IsMultiDeviceProduct(options)) return target().Multiply(a, b, options, control);
    if (absl::Status s = CheckMultiDevice(a.dtype, options); !s.ok()) return s;
    if (IsCancelled(control)) return absl::CancelledError("multiply cancelled");
    const std::vector<int> used(devices_.begin(), devices_.begin() + options.devices);
    // C straight into the caller's resident matrix when it lies on the GPUs (a kept product);
    // otherwise to the host, and the caller stores it.
    ResidentMatrix* output = options.output != nullptr && CannonWritesInto(*options.output, a.rows,
                                                                           b.cols, a.dtype, used)
                                 ? options.output
                                 : nullptr;
    CannonTimes times;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Matrix> c = CannonGemm(used, {.view = a, .distributed = options.distributed_a},
                                          {.view = b, .distributed = options.distributed_b}, &times,
                                          memory_limit_, output);
    if (!c.ok()) {
      return absl::Status(c.status().code(), absl::StrCat("Cannon's product on ", options.devices,
                                                          " GPUs: ", c.status().message()));
    }
    MultiplyResult result;
    result.c = *std::move(c);
    const double flops = (IsComplex(a.dtype) ? 8.0 : 2.0) * static_cast<double>(a.rows) *
                         static_cast<double>(a.cols) * static_cast<double>(b.cols);
    const uint64_t c_bytes =
        static_cast<uint64_t>(a.rows) * static_cast<uint64_t>(b.cols) * ElementSize(a.dtype);
    result.stats.flops = flops;
    result.stats.bytes_moved = a.byte_size() + b.byte_size() + c_bytes;
    result.stats.kernels.push_back(
        {"cannon_scatter", times.scatter_seconds, a.byte_size() + b.byte_size(), 0.0});
    result.stats.kernels.push_back({"cannon_rounds", times.rounds_seconds, 0, flops});
    result.stats.kernels.push_back({"cannon_gather", times.gather_seconds, c_bytes, 0.0});
    result.stats.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    NameDevices(options.devices, result.stats);
    ReportProgress(control, 1.0);
    return result;
  }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    if (options.devices <= 1) return target().Determinant(a, options, control);
    if (absl::Status s = CheckMultiDeviceDeterminant(a.dtype, options); !s.ok()) return s;
    if (IsCancelled(control)) return absl::CancelledError("determinant cancelled");
    const std::vector<int> used(devices_.begin(), devices_.begin() + options.devices);
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<DistributedDeterminant> det =
        options.distributed != nullptr
            ? MultiGpuDeterminant(used, *options.distributed, devices_)
            : MultiGpuDeterminant(used, a, kLuBlock, options.host_entries_checked);
    if (!det.ok()) {
      return absl::Status(det.status().code(), absl::StrCat("LU over ", options.devices,
                                                            " GPUs: ", det.status().message()));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    DeterminantResult result;
    result.value = FromDistributed(*det);
    result.method_used = DeterminantMethod::kLu;
    const double n = static_cast<double>(a.rows);
    result.stats.flops = (IsComplex(a.dtype) ? 8.0 : 2.0) / 3.0 * n * n * n;
    result.stats.bytes_moved = a.byte_size();
    result.stats.kernels.push_back({"multi_gpu_lu", seconds, a.byte_size(), result.stats.flops});
    result.stats.seconds = seconds;
    NameDevices(options.devices, result.stats);
    ReportProgress(control, 1.0);
    return result;
  }

  uint64_t DeterminantDeviceBytes(const MatrixView& a,
                                  const DeterminantOptions& options) const override {
    if (options.devices <= 1) return target().DeterminantDeviceBytes(a, options);
    return MultiGpuLuDeviceBytesPerGpu(a.rows, options.devices, kLuBlock, a.dtype);
  }

  // The LU over several GPUs copies its parts from wherever the operand lies (a device operand
  // from its GPU: operand_source.h) and looks for NaN and Inf there itself (in a host operand
  // only when the options do not say it was checked).
  bool DeterminantReadsOnDevice(const MatrixView& a,
                                const DeterminantOptions& options) const override {
    if (options.devices <= 1) return target().DeterminantReadsOnDevice(a, options);
    return CheckMultiDeviceDeterminant(a.dtype, options).ok();
  }

  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    if (options.devices <= 1) return target().Factorize(a, options, rhs, control);
    if (absl::Status s = CheckMultiDeviceFactorize(a.dtype, a.rows, a.cols, options); !s.ok()) {
      return s;
    }
    if (IsCancelled(control)) return absl::CancelledError("factorization cancelled");
    const std::vector<int> used(devices_.begin(), devices_.begin() + options.devices);
    absl::StatusOr<FactorizeResult> result = MultiGpuFactorize(used, a, options, rhs, kLuBlock);
    if (!result.ok()) {
      // FAILED_PRECONDITION (singular, not positive definite) says what is wrong with the input.
      if (result.status().code() == absl::StatusCode::kFailedPrecondition) return result;
      return absl::Status(result.status().code(),
                          absl::StrCat("cusolverMg ", FactorizationName(options.kind), " over ",
                                       options.devices, " GPUs: ", result.status().message()));
    }
    NameDevices(options.devices, result->stats);
    ReportProgress(control, 1.0);
    return result;
  }

  uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs) const override {
    if (options.devices <= 1) return target().FactorizeDeviceBytes(a, options, rhs);
    return MultiGpuFactorizeDeviceBytesPerGpu(a.rows, rhs != nullptr ? rhs->cols : 0,
                                              options.devices, kLuBlock, ElementSize(a.dtype));
  }

  // cusolverMg does not look for NaN and Inf: the caller checks a host operand itself.
  bool FactorizeChecksFinite(const MatrixView& a, const FactorizeOptions& options,
                             const MatrixView* rhs) const override {
    return options.devices <= 1 && target().FactorizeChecksFinite(a, options, rhs);
  }

  // cusolverMg's parts are copied from wherever the operands lie (operand_source.h); a device
  // operand's entries were checked when it was stored.
  bool FactorizeReadsOnDevice(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs) const override {
    if (options.devices <= 1) return target().FactorizeReadsOnDevice(a, options, rhs);
    return CheckMultiDeviceFactorize(a.dtype, a.rows, a.cols, options).ok();
  }

  // A factorization kept over several GPUs (FactorizationView::kept) solves with its own parts
  // there; every other, one kept whole on one GPU included, goes to the wrapped backend.
  absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization, const MatrixView& rhs,
                                    const SolveOptions& options, JobControl* control) override {
    if (factorization.kept == nullptr || factorization.kept->whole_on_one_device()) {
      return target().Solve(factorization, rhs, options, control);
    }
    MATRIXD_RETURN_IF_ERROR(CheckSolve(factorization, rhs, options));
    if (IsCancelled(control)) return absl::CancelledError("solve cancelled");
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Matrix> x = factorization.kept->Solve(rhs);
    if (!x.ok()) {
      return absl::Status(
          x.status().code(),
          absl::StrCat("cusolverMg ", FactorizationName(factorization.kind), " solve over ",
                       factorization.kept->Parts().size(), " GPUs: ", x.status().message()));
    }
    SolveResult result;
    result.x = *std::move(x);
    result.stats.flops = SolveFlops(factorization, rhs.cols, false);
    result.stats.bytes_moved = 2 * rhs.byte_size();
    result.stats.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.stats.kernels.push_back(
        {factorization.kind == FactorizationKind::kLu ? "cusolvermg_getrs" : "cusolvermg_potrs",
         result.stats.seconds, result.stats.bytes_moved, result.stats.flops});
    NameDevices(static_cast<int>(factorization.kept->Parts().size()), result.stats);
    ReportProgress(control, 1.0);
    return result;
  }

  uint64_t SolveDeviceBytes(const FactorizationView& factorization, const MatrixView& rhs,
                            const SolveOptions& options) const override {
    if (factorization.kept == nullptr) {
      return target().SolveDeviceBytes(factorization, rhs, options);
    }
    return MultiGpuSolveDeviceBytesPerGpu(factorization.cols(), rhs.cols,
                                          static_cast<int>(factorization.kept->Parts().size()),
                                          kLuBlock, ElementSize(rhs.dtype));
  }

  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                               const MultiplyOptions& options) const override {
    if (!IsMultiDeviceProduct(options)) return target().MultiplyDeviceBytes(a, b, options);
    return CannonDeviceBytesPerGpu(a.rows, a.cols, b.cols, std::max(options.devices, 1),
                                   ElementSize(a.dtype));
  }

  // Cannon scatters its operands from wherever they lie (operand_source.h), a distributed
  // resident matrix from its parts (operand_rectangles.h); C comes back to host memory, or goes
  // into MultiplyOptions::output when that lies on the GPUs (result_rectangles.h).
  bool MultiplyReadsOnDevice(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) const override {
    if (!IsMultiDeviceProduct(options)) return target().MultiplyReadsOnDevice(a, b, options);
    return CheckMultiDevice(a.dtype, options).ok() && b.dtype == a.dtype;
  }

 private:
  // The backend and devices of a job over the first `devices` GPUs, in its stats.
  void NameDevices(int devices, ComputeStats& stats) const {
    stats.backend = "cuda";
    stats.device = absl::StrCat("the first ", devices, " of: ", target().device());
  }

  absl::Status CheckMultiDevice(DType dtype, const MultiplyOptions& options) const {
    if (options.method == MultiplyMethod::kCublasMp) {
      return absl::UnimplementedError(
          "method = CUBLASMP: cuBLASMp runs one process per GPU; start the server as `mpirun -n "
          "R matrixd --distributed --backend=cuda` (one rank per GPU) to use it, or use method "
          "= CANNON here (docs/distributed.md)");
    }
    const int available = static_cast<int>(devices_.size());
    if (options.devices > available) {
      return absl::InvalidArgumentError(absl::StrCat("devices is ", options.devices,
                                                     "; this server has ", available, " GPU",
                                                     available == 1 ? "" : "s"));
    }
    if (!IsFloating(dtype)) {
      return absl::UnimplementedError(
          absl::StrCat("a.dtype is ", std::string(DTypeName(dtype)),
                       "; a product over several GPUs takes float32, float64, complex64 or "
                       "complex128"));
    }
    // Cannon's block products run in the operands' precision; TF32 would be silently dropped.
    if (options.allow_tf32 && dtype == DType::kFloat32) {
      return absl::UnimplementedError(
          "allow_tf32: a product over several GPUs does not use TF32 tensor cores; unset it (the "
          "product then runs in float32) or multiply with devices = 1");
    }
    if (options.transpose_a || options.transpose_b || options.block_size > 0) {
      return absl::UnimplementedError(
          "transpose_a, transpose_b and block_size are not taken by a product over several "
          "GPUs; send op(A) and op(B) dense");
    }
    if (options.verify) {
      return absl::UnimplementedError(
          "verify: Freivalds' check does not run on a product over several GPUs; multiply with "
          "devices = 1 to have C checked");
    }
    return absl::OkStatus();
  }

  absl::Status CheckMultiDeviceDeterminant(DType dtype, const DeterminantOptions& options) const {
    const int available = static_cast<int>(devices_.size());
    if (options.devices > available) {
      return absl::InvalidArgumentError(absl::StrCat("devices is ", options.devices,
                                                     "; this server has ", available, " GPU",
                                                     available == 1 ? "" : "s"));
    }
    if (!IsFloating(dtype)) {
      return absl::UnimplementedError(
          absl::StrCat("matrix.dtype is ", std::string(DTypeName(dtype)),
                       "; a determinant over several GPUs takes float32, float64, complex64 or "
                       "complex128"));
    }
    if (options.modulus > 0) {
      return absl::UnimplementedError(
          absl::StrCat("modulus is ", options.modulus,
                       "; a determinant over several GPUs is over the reals (modulus 0)"));
    }
    if (options.method == DeterminantMethod::kCondensation) {
      return absl::UnimplementedError(
          "method = CONDENSATION: a determinant over several GPUs runs LU; use method AUTO or "
          "LU");
    }
    return absl::OkStatus();
  }

  absl::Status CheckMultiDeviceFactorize(DType dtype, int64_t rows, int64_t cols,
                                         const FactorizeOptions& options) const {
    // The request's own contract first (what every backend refuses, naming the field), then
    // whether this server has the GPUs.
    if (absl::Status s = CheckFactorizeDevices(options, dtype, rows, cols); !s.ok()) return s;
    const int available = static_cast<int>(devices_.size());
    if (options.devices > available) {
      return absl::InvalidArgumentError(absl::StrCat("devices is ", options.devices,
                                                     "; this server has ", available, " GPU",
                                                     available == 1 ? "" : "s"));
    }
    return absl::OkStatus();
  }

  std::vector<int> devices_;
  DeviceMemoryLimit memory_limit_;  // the wrapped backend's, which Cannon's blocks count against
};

}  // namespace

uint64_t CannonDeviceBytesPerGpu(int64_t m, int64_t k, int64_t n, int gpus, size_t element_size) {
  const int q = CannonGridSide(gpus);
  const uint64_t nb = static_cast<uint64_t>((std::max({m, k, n}) + q - 1) / q);
  const uint64_t positions_per_gpu = static_cast<uint64_t>(q * q / gpus);
  return positions_per_gpu * 5 * nb * nb * element_size;
}

uint64_t MultiGpuLuDeviceBytesPerGpu(int64_t n, int gpus, int64_t block, DType dtype) {
  const auto un = static_cast<uint64_t>(n);
  const auto ublock = static_cast<uint64_t>(std::min(block, n));
  const uint64_t panels = (un + ublock - 1) / ublock;
  const uint64_t panels_per_gpu = (panels + static_cast<uint64_t>(gpus) - 1) / gpus;
  const uint64_t copies = gpus > 1 ? 2 : 0;
  const uint64_t element = IsComplex(dtype) ? 2 * sizeof(double) : sizeof(double);
  const uint64_t staging = ElementSize(dtype) < element ? ElementSize(dtype) : 0;
  return ((panels_per_gpu + copies) * element + staging) * ublock * un;
}

std::unique_ptr<Backend> WithMultiGpuProducts(std::unique_ptr<Backend> cuda,
                                              std::vector<int> devices,
                                              const DeviceMemoryLimit& memory_limit) {
  return std::make_unique<MultiGpuBackend>(std::move(cuda), std::move(devices), memory_limit);
}

}  // namespace matrixd::multi_gpu
