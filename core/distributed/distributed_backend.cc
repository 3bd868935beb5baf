#include "core/distributed/distributed_backend.h"

#include <algorithm>
#include <chrono>
#include <complex>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/backend_wrapper.h"
#include "core/status_macros.h"

namespace matrixd::distributed {
namespace {

// Runs closures one after the other on its own thread: the only thread of the root that calls
// MPI after start-up, so that a job stuck in MPI blocks it and not the server's worker.
class GridThread {
 public:
  GridThread() : thread_([this] { Loop(); }) {}
  ~GridThread() {
    {
      absl::MutexLock lock(&mutex_);
      stopping_ = true;
    }
    if (stuck_) {
      thread_.detach();  // blocked in MPI for good; the process ends without it
    } else {
      thread_.join();
    }
  }

  void Post(std::function<void()> task) {
    absl::MutexLock lock(&mutex_);
    tasks_.push_back(std::move(task));
  }
  void MarkStuck() { stuck_ = true; }

 private:
  void Loop() {
    while (true) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mutex_);
        mutex_.Await(absl::Condition(
            +[](GridThread* self) { return self->stopping_ || !self->tasks_.empty(); }, this));
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  absl::Mutex mutex_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::atomic<bool> stuck_{false};
  std::thread thread_;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr int64_t kDeviceGemmBlock = 1024;
constexpr int64_t kDeviceLuBlock = 512;

// op(a) as a dense float64 copy: the GPU engine multiplies untransposed operands.
Matrix DenseOperand(const MatrixView& a, bool transpose) {
  if (!transpose) return Matrix::CopyOf(a);
  Matrix t(a.cols, a.rows, DType::kFloat64);
  const auto* in = reinterpret_cast<const double*>(a.data);
  double* out = t.As<double>().data();
  constexpr int64_t kTile = 64;  // tiles, so that both sides are read and written in lines
  for (int64_t i0 = 0; i0 < a.rows; i0 += kTile) {
    for (int64_t j0 = 0; j0 < a.cols; j0 += kTile) {
      for (int64_t i = i0; i < std::min(a.rows, i0 + kTile); ++i) {
        for (int64_t j = j0; j < std::min(a.cols, j0 + kTile); ++j) {
          out[j * a.rows + i] = in[i * a.cols + j];
        }
      }
    }
  }
  return t;
}

// A float32 or complex64 operand widened to float64 or complex128 (the grid's LU runs in those,
// as the CPU backend's determinant does); another dtype copied as it is.
template <typename Narrow, typename Wide>
Matrix WidenedCopy(const MatrixView& a) {
  Matrix wide(a.rows, a.cols, DTypeOf<Wide>());
  const auto* in = reinterpret_cast<const Narrow*>(a.data);
  Wide* out = wide.As<Wide>().data();
  for (int64_t i = 0; i < a.size(); ++i) out[i] = static_cast<Wide>(in[i]);
  return wide;
}

Matrix Widened(const MatrixView& a) {
  switch (a.dtype) {
    case DType::kFloat32:
      return WidenedCopy<float, double>(a);
    case DType::kComplex64:
      return WidenedCopy<std::complex<float>, std::complex<double>>(a);
    default:
      return Matrix::CopyOf(a);
  }
}

// The grid's kernel names: "scalapack_pzgemm" for a complex128 product.
std::string ScalapackKernel(DType dtype, const char* routine) {
  constexpr char kLetters[] = {'s', 'd', 'c', 'z'};
  return absl::StrCat("scalapack_p", std::string(1, kLetters[static_cast<int>(dtype)]), routine);
}

class DistributedBackend final : public BackendWrapper {
 public:
  DistributedBackend(std::unique_ptr<Backend> local, std::unique_ptr<ScalapackGrid> grid,
                     const DistributedBackendOptions& options)
      : BackendWrapper(std::move(local)),
        grid_(std::move(grid)),
        options_(options),
        on_device_(grid_->device_engine() != nullptr),
        device_(on_device_
                    ? absl::StrCat(GridDevice("cuBLASMp/cuSOLVERMp"), " (Factorize on ScaLAPACK)")
                    : GridDevice("ScaLAPACK")) {}

  ~DistributedBackend() override {
    if (!options_.lost->load()) {
      (void)RunOnGrid<bool>([](ScalapackGrid& grid) -> absl::StatusOr<bool> {
        GridJobHeader header;  // kShutdown
        MATRIXD_RETURN_IF_ERROR(grid.BroadcastHeader(&header));
        return true;
      });
    }
    if (options_.lost->load()) {
      thread_.MarkStuck();
      (void)grid_.release();  // its BLACS exit would wait for the lost rank
    }
  }

  std::string device() const override { return device_; }

  absl::Status Supports(const OperationQuery& query) const override {
    if (query.operation != Operation::kMultiply ||
        query.multiply.method != MultiplyMethod::kCublasMp) {
      return target().Supports(query);
    }
    // The local checks (dtype, shapes, limits) of a one-device product, then what the grid takes.
    OperationQuery single = query;
    single.multiply.method = MultiplyMethod::kAuto;
    single.multiply.devices = 1;
    if (absl::Status s = target().Supports(single); !s.ok()) return s;
    return CheckCublasMp(query.dtype, query.multiply);
  }

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    if (!DeterminantOnGrid(a, options) || a.on_device()) {
      return target().Determinant(a, options, control);
    }
    const bool on_device = JobOnDevice(a.dtype);
    const auto start = std::chrono::steady_clock::now();
    const Matrix wide = Widened(a);
    GridJobHeader header{.command = GridCommand::kLu,
                         .on_device = on_device ? 1 : 0,
                         .dtype = static_cast<int32_t>(wide.dtype()),
                         .a_rows = a.rows,
                         .a_cols = a.cols,
                         .block = on_device ? DeviceBlock(kDeviceLuBlock) : 0};
    MATRIXD_ASSIGN_OR_RETURN(GridLu lu_result, RunLu(header, wide.view(), nullptr));
    DeterminantResult result;
    result.value = lu_result.determinant;
    result.method_used = DeterminantMethod::kLu;
    result.stats = Stats(on_device ? "cusolvermp_getrf" : ScalapackKernel(wide.dtype(), "getrf"),
                         on_device ? "cuSOLVERMp" : "ScaLAPACK", SecondsSince(start),
                         FlopsPerMultiplyAdd(a.dtype) / 3.0 * Cube(a.rows), a.size(), wide.dtype());
    return result;
  }

  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    if (!FactorizeOnGrid(a, options, rhs) || a.on_device() ||
        (rhs != nullptr && rhs->on_device())) {
      return target().Factorize(a, options, rhs, control);
    }
    GridJobHeader header{.command = GridCommand::kLu,
                         .want_factors = 1,
                         .a_rows = a.rows,
                         .a_cols = a.cols,
                         .b_rows = rhs != nullptr ? rhs->rows : 0,
                         .b_cols = rhs != nullptr ? rhs->cols : 0};
    const auto start = std::chrono::steady_clock::now();
    MATRIXD_ASSIGN_OR_RETURN(GridLu lu_result, RunLu(header, a, rhs));
    if (rhs != nullptr && lu_result.singular_column.has_value()) {
      const int64_t k = *lu_result.singular_column;
      return absl::FailedPreconditionError(absl::StrCat("the matrix is singular: U[", k, ",", k,
                                                        "] = 0 at column ", k, "; cannot solve"));
    }
    FactorizeResult result;
    result.kind = FactorizationKind::kLu;
    result.lu = std::move(lu_result.lu);
    result.permutation = std::move(lu_result.permutation);
    result.singular_column = lu_result.singular_column;
    result.solution = std::move(lu_result.solution);
    const double solve_flops = rhs != nullptr ? 2.0 * Square(a.rows) * rhs->cols : 0.0;
    result.stats = Stats("scalapack_pdgetrf", "ScaLAPACK", SecondsSince(start),
                         2.0 / 3.0 * Cube(a.rows) + solve_flops,
                         2 * a.size() + (rhs != nullptr ? 2 * rhs->size() : 0), a.dtype);
    return result;
  }

  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    if (options.method == MultiplyMethod::kCublasMp) {
      MATRIXD_RETURN_IF_ERROR(CheckCublasMp(a.dtype, options));
      if (options_.lost->load()) return Lost();
      if (a.on_device() || b.on_device()) {
        return absl::InternalError("method = CUBLASMP was given device operands, not host bytes");
      }
    } else if (!MultiplyOnGrid(a, b, options) || a.on_device() || b.on_device()) {
      return target().Multiply(a, b, options, control);
    }
    // Only float64 goes to the GPU engine (cuBLASMp is wired for it alone); the other dtypes run
    // on ScaLAPACK's p?gemm.
    const bool on_device = JobOnDevice(a.dtype);
    GridJobHeader header{.command = GridCommand::kMultiply,
                         .transpose_a = options.transpose_a ? 1 : 0,
                         .transpose_b = options.transpose_b ? 1 : 0,
                         .on_device = on_device ? 1 : 0,
                         .dtype = static_cast<int32_t>(a.dtype),
                         .a_rows = a.rows,
                         .a_cols = a.cols,
                         .b_rows = b.rows,
                         .b_cols = b.cols,
                         .block = on_device ? DeviceBlock(kDeviceGemmBlock) : 0};
    const auto start = std::chrono::steady_clock::now();
    std::shared_ptr<Matrix> a_copy;
    std::shared_ptr<Matrix> b_copy;
    if (on_device) {
      // cuBLASMp gets op(A) and op(B) as dense operands.
      a_copy = std::make_shared<Matrix>(DenseOperand(a, options.transpose_a));
      b_copy = std::make_shared<Matrix>(DenseOperand(b, options.transpose_b));
      header.transpose_a = header.transpose_b = 0;
      header.a_rows = a_copy->rows();
      header.a_cols = a_copy->cols();
      header.b_rows = b_copy->rows();
      header.b_cols = b_copy->cols();
    } else {
      a_copy = std::make_shared<Matrix>(Matrix::CopyOf(a));
      b_copy = std::make_shared<Matrix>(Matrix::CopyOf(b));
    }
    MATRIXD_ASSIGN_OR_RETURN(
        Matrix c, RunOnGrid<Matrix>([header, a_copy, b_copy](
                                        ScalapackGrid& grid) mutable -> absl::StatusOr<Matrix> {
          MATRIXD_RETURN_IF_ERROR(grid.BroadcastHeader(&header));
          const MatrixView a_view = a_copy->view();
          const MatrixView b_view = b_copy->view();
          return grid.Multiply(header, &a_view, &b_view);
        }));
    const int64_t k = options.transpose_a ? a.rows : a.cols;
    MultiplyResult result;
    result.stats = Stats(on_device ? "cublasmp_gemm" : ScalapackKernel(a.dtype, "gemm"),
                         on_device ? "cuBLASMp" : "ScaLAPACK", SecondsSince(start),
                         FlopsPerMultiplyAdd(a.dtype) * static_cast<double>(c.rows()) *
                             static_cast<double>(c.cols()) * static_cast<double>(k),
                         a.size() + b.size() + c.size(), a.dtype);
    result.c = std::move(c);
    return result;
  }

  // Grid jobs read host bytes: a resident operand is copied to the host for them.
  bool DeterminantReadsOnDevice(const MatrixView& a,
                                const DeterminantOptions& options) const override {
    return !DeterminantOnGrid(a, options) && target().DeterminantReadsOnDevice(a, options);
  }
  bool MultiplyReadsOnDevice(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options) const override {
    return !MultiplyOnGrid(a, b, options) && options.method != MultiplyMethod::kCublasMp &&
           target().MultiplyReadsOnDevice(a, b, options);
  }
  bool FactorizeReadsOnDevice(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs) const override {
    return !FactorizeOnGrid(a, options, rhs) && target().FactorizeReadsOnDevice(a, options, rhs);
  }
  // The grid does not look for NaN or Inf: the caller checks grid operands itself.
  bool FactorizeChecksFinite(const MatrixView& a, const FactorizeOptions& options,
                             const MatrixView* rhs) const override {
    return !FactorizeOnGrid(a, options, rhs) && target().FactorizeChecksFinite(a, options, rhs);
  }

  // A grid job takes no memory of the local backend's devices, except the GPU engine's parts on
  // rank 0's GPU (1/R of the operands; admitted on the device the job was placed on).
  uint64_t DeterminantDeviceBytes(const MatrixView& a,
                                  const DeterminantOptions& options) const override {
    if (!DeterminantOnGrid(a, options)) return target().DeterminantDeviceBytes(a, options);
    return JobOnDevice(a.dtype) ? PartBytes(a.size()) : 0;
  }
  uint64_t FactorizeDeviceBytes(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs) const override {
    if (!FactorizeOnGrid(a, options, rhs)) return target().FactorizeDeviceBytes(a, options, rhs);
    return 0;
  }
  uint64_t MultiplyDeviceBytes(const MatrixView& a, const MatrixView& b,
                               const MultiplyOptions& options) const override {
    if (!MultiplyOnGrid(a, b, options) && options.method != MultiplyMethod::kCublasMp) {
      return target().MultiplyDeviceBytes(a, b, options);
    }
    const int64_t m = options.transpose_a ? a.cols : a.rows;
    const int64_t n = options.transpose_b ? b.rows : b.cols;
    return JobOnDevice(a.dtype) ? PartBytes(a.size() + b.size() + m * n) : 0;
  }

 private:
  static double Square(int64_t n) { return static_cast<double>(n) * static_cast<double>(n); }
  static double Cube(int64_t n) { return Square(n) * static_cast<double>(n); }

  std::string GridDevice(const char* engine) const {
    return absl::StrCat(target().device(), " + ", engine, " grid ", grid_->shape().rows, "x",
                        grid_->shape().cols, " of MPI ranks");
  }

  int64_t DeviceBlock(int64_t fallback) const {
    return options_.device_block > 0 ? options_.device_block : fallback;
  }

  // Bytes of rank 0's GPU parts of `elements` float64 elements over the ranks (0 on ScaLAPACK).
  uint64_t PartBytes(int64_t elements) const {
    if (!on_device_) return 0;
    const auto ranks = static_cast<uint64_t>(grid_->shape().size());
    return (static_cast<uint64_t>(elements) + ranks - 1) / ranks * sizeof(double);
  }

  // Whether a job of this dtype runs on the GPU engine: float64 alone (cuBLASMp and cuSOLVERMp
  // are wired for it); the other dtypes run on ScaLAPACK.
  bool JobOnDevice(DType dtype) const { return on_device_ && dtype == DType::kFloat64; }

  // Real flops of one multiply-add: 2, or 8 for complex operands.
  static double FlopsPerMultiplyAdd(DType dtype) { return IsComplex(dtype) ? 8.0 : 2.0; }

  // Whether floating-point operands (float32, float64, complex64, complex128; b of a's dtype) of
  // these shapes go to the grid (shapes and dtypes only: the operand's bytes may still be on a
  // device, then copied to the host by the caller).
  bool GridSized(const MatrixView& a, const MatrixView* b) const {
    if (options_.lost->load() || !IsFloating(a.dtype)) return false;
    if (b != nullptr && b->dtype != a.dtype) return false;
    int64_t largest = std::max(a.rows, a.cols);
    if (b != nullptr) largest = std::max({largest, b->rows, b->cols});
    return largest >= options_.min_dimension;
  }

  bool DeterminantOnGrid(const MatrixView& a, const DeterminantOptions& options) const {
    const bool lu =
        options.method == DeterminantMethod::kAuto || options.method == DeterminantMethod::kLu;
    return lu && options.modulus == 0 && options.devices <= 1 && GridSized(a, nullptr);
  }

  // A condition estimate runs on the local backend: pdgecon is not wired to the grid; nor are
  // factors and solves of other dtypes than float64, nor a factorization over rank 0's GPUs.
  bool FactorizeOnGrid(const MatrixView& a, const FactorizeOptions& options,
                       const MatrixView* rhs) const {
    return options.kind == FactorizationKind::kLu && options.batch_count == 0 &&
           !options.estimate_condition && options.devices <= 1 && a.dtype == DType::kFloat64 &&
           GridSized(a, rhs);
  }

  // Freivalds' check (verify) runs where C is computed, which the grid does not offer: a verified
  // product runs on the local backend, check included; so do products over the local GPUs.
  bool MultiplyOnGrid(const MatrixView& a, const MatrixView& b,
                      const MultiplyOptions& options) const {
    return options.block_size == 0 && !options.verify && !IsMultiDeviceProduct(options) &&
           GridSized(a, &b);
  }

  absl::Status CheckCublasMp(DType dtype, const MultiplyOptions& options) const {
    if (!on_device_) {
      return absl::UnimplementedError(absl::StrCat(
          "method = CUBLASMP: this distributed server's grid engine is ",
          options_.engine_note.empty() ? "ScaLAPACK" : options_.engine_note,
          "; cuBLASMp needs --backend=cuda, one GPU per MPI rank and a build with the NVIDIA MP "
          "wheels (docs/distributed.md)"));
    }
    if (dtype != DType::kFloat64) {
      return absl::UnimplementedError(absl::StrCat("a.dtype is ", std::string(DTypeName(dtype)),
                                                   "; method = CUBLASMP takes float64"));
    }
    if (options.block_size > 0 || options.verify) {
      return absl::UnimplementedError(
          "block_size and verify are not taken by method = CUBLASMP (the grid's product)");
    }
    return absl::OkStatus();
  }

  ComputeStats Stats(const std::string& kernel, const char* engine, double seconds, double flops,
                     int64_t elements, DType dtype) const {
    const uint64_t bytes = static_cast<uint64_t>(elements) * ElementSize(dtype);
    return {.backend = std::string(target().name()),
            .device = GridDevice(engine),
            .seconds = seconds,
            .bytes_moved = bytes,
            .flops = flops,
            .kernels = {{.kernel = kernel, .seconds = seconds, .bytes = bytes, .flops = flops}}};
  }

  absl::StatusOr<GridLu> RunLu(GridJobHeader header, const MatrixView& a, const MatrixView* rhs) {
    auto a_copy = std::make_shared<Matrix>(Matrix::CopyOf(a));
    auto rhs_copy = rhs != nullptr ? std::make_shared<Matrix>(Matrix::CopyOf(*rhs)) : nullptr;
    return RunOnGrid<GridLu>(
        [header, a_copy, rhs_copy](ScalapackGrid& grid) mutable -> absl::StatusOr<GridLu> {
          MATRIXD_RETURN_IF_ERROR(grid.BroadcastHeader(&header));
          const MatrixView a_view = a_copy->view();
          const MatrixView rhs_view = rhs_copy != nullptr ? rhs_copy->view() : MatrixView{};
          return grid.Lu(header, &a_view, rhs_copy != nullptr ? &rhs_view : nullptr);
        });
  }

  // Runs `job` on the grid thread, one grid job at a time, and waits at most options_.timeout.
  // The job owns what it reads (copies), so that a job left running after a timeout reads
  // nothing freed.
  template <typename T>
  absl::StatusOr<T> RunOnGrid(std::function<absl::StatusOr<T>(ScalapackGrid&)> job) {
    absl::MutexLock serial(&grid_mutex_);
    if (options_.lost->load()) return Lost();
    struct Outcome {
      absl::Notification done;
      absl::StatusOr<T> value = absl::UnknownError("not run");
    };
    auto outcome = std::make_shared<Outcome>();
    ScalapackGrid* grid = grid_.get();
    thread_.Post([outcome, grid, job = std::move(job)] {
      outcome->value = job(*grid);
      outcome->done.Notify();
    });
    if (!outcome->done.WaitForNotificationWithTimeout(options_.timeout)) {
      options_.lost->store(true);
      return absl::UnavailableError(absl::StrCat(
          "the distributed job did not finish in ", absl::FormatDuration(options_.timeout),
          " (a rank of the grid is lost?); the grid is given up, later jobs run on rank 0 alone"));
    }
    if (absl::IsUnavailable(outcome->value.status())) options_.lost->store(true);
    return std::move(outcome->value);
  }

  static absl::Status Lost() {
    return absl::UnavailableError("the distributed grid was lost; restart mpirun to use it again");
  }

  std::unique_ptr<ScalapackGrid> grid_;
  DistributedBackendOptions options_;
  bool on_device_;  // the grid has its GPU engine
  std::string device_;
  absl::Mutex grid_mutex_;
  GridThread thread_;  // last: stops before the grid it uses
};

}  // namespace

std::unique_ptr<Backend> MakeDistributedBackend(std::unique_ptr<Backend> local,
                                                std::unique_ptr<ScalapackGrid> grid,
                                                const DistributedBackendOptions& options) {
  return std::make_unique<DistributedBackend>(std::move(local), std::move(grid), options);
}

}  // namespace matrixd::distributed
