#include "core/distributed/distributed_backend.h"

#include <algorithm>
#include <chrono>
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

class DistributedBackend final : public BackendWrapper {
 public:
  DistributedBackend(std::unique_ptr<Backend> local, std::unique_ptr<ScalapackGrid> grid,
                     const DistributedBackendOptions& options)
      : BackendWrapper(std::move(local)),
        grid_(std::move(grid)),
        options_(options),
        device_(absl::StrCat(target().device(), " + ScaLAPACK grid ", grid_->shape().rows, "x",
                             grid_->shape().cols, " of MPI ranks")) {}

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

  absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                const DeterminantOptions& options,
                                                JobControl* control) override {
    const bool lu =
        options.method == DeterminantMethod::kAuto || options.method == DeterminantMethod::kLu;
    if (!lu || options.modulus != 0 || !OnGrid(a, nullptr)) {
      return target().Determinant(a, options, control);
    }
    GridJobHeader header{.command = GridCommand::kLu, .a_rows = a.rows, .a_cols = a.cols};
    const auto start = std::chrono::steady_clock::now();
    MATRIXD_ASSIGN_OR_RETURN(GridLu lu_result, RunLu(header, a, nullptr));
    DeterminantResult result;
    result.value = lu_result.determinant;
    result.method_used = DeterminantMethod::kLu;
    result.stats =
        Stats("scalapack_pdgetrf", SecondsSince(start), 2.0 / 3.0 * Cube(a.rows), a.size());
    return result;
  }

  absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a, const FactorizeOptions& options,
                                            const MatrixView* rhs, JobControl* control) override {
    // A condition estimate runs on the local backend: pdgecon is not wired to the grid.
    if (options.kind != FactorizationKind::kLu || options.batch_count > 0 ||
        options.estimate_condition || !OnGrid(a, rhs)) {
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
    result.stats =
        Stats("scalapack_pdgetrf", SecondsSince(start), 2.0 / 3.0 * Cube(a.rows) + solve_flops,
              2 * a.size() + (rhs != nullptr ? 2 * rhs->size() : 0));
    return result;
  }

  absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                          const MultiplyOptions& options,
                                          JobControl* control) override {
    // Freivalds' check (verify) runs where C is computed, which the grid's pdgemm does not offer:
    // a verified product runs on the local backend, check included.
    if (options.block_size > 0 || options.verify || !OnGrid(a, &b)) {
      return target().Multiply(a, b, options, control);
    }
    GridJobHeader header{.command = GridCommand::kMultiply,
                         .transpose_a = options.transpose_a ? 1 : 0,
                         .transpose_b = options.transpose_b ? 1 : 0,
                         .a_rows = a.rows,
                         .a_cols = a.cols,
                         .b_rows = b.rows,
                         .b_cols = b.cols};
    const auto start = std::chrono::steady_clock::now();
    auto a_copy = std::make_shared<Matrix>(Matrix::CopyOf(a));
    auto b_copy = std::make_shared<Matrix>(Matrix::CopyOf(b));
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
    result.stats = Stats("scalapack_pdgemm", SecondsSince(start),
                         2.0 * static_cast<double>(c.rows()) * static_cast<double>(c.cols()) *
                             static_cast<double>(k),
                         a.size() + b.size() + c.size());
    result.c = std::move(c);
    return result;
  }

 private:
  static double Square(int64_t n) { return static_cast<double>(n) * static_cast<double>(n); }
  static double Cube(int64_t n) { return Square(n) * static_cast<double>(n); }

  // Whether a float64 host job of these operands goes to the grid.
  bool OnGrid(const MatrixView& a, const MatrixView* b) const {
    if (options_.lost->load() || a.dtype != DType::kFloat64 || a.on_device()) return false;
    if (b != nullptr && (b->dtype != DType::kFloat64 || b->on_device())) return false;
    int64_t largest = std::max(a.rows, a.cols);
    if (b != nullptr) largest = std::max({largest, b->rows, b->cols});
    return largest >= options_.min_dimension;
  }

  ComputeStats Stats(const char* kernel, double seconds, double flops, int64_t elements) const {
    const uint64_t bytes = static_cast<uint64_t>(elements) * sizeof(double);
    return {.backend = std::string(target().name()),
            .device = device_,
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
