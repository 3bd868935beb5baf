// A stand-in for the grid's GPU engine in tests without a GPU (as rmm's mock resource): every
// rank gathers the whole operands from the parts (MPI_Allgatherv), computes the result with the
// CPU backend, and keeps its own part of it. It holds the engine to the same contract as the
// cuBLASMp/cuSOLVERMp one (parts in BlockCyclicLayout's column-major local layout, results the
// same on every rank), so that the grid's routing, scatter, gather, transposes and determinant
// conversion are tested on the CPU.
#ifndef MATRIXD_TESTS_DISTRIBUTED_GATHERING_DEVICE_ENGINE_H_
#define MATRIXD_TESTS_DISTRIBUTED_GATHERING_DEVICE_ENGINE_H_

#include <mpi.h>

#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cpu/cpu_backend.h"
#include "core/distributed/block_cyclic.h"
#include "core/distributed/device_grid_engine.h"
#include "core/matrix.h"

namespace matrixd::distributed {

class GatheringDeviceEngine final : public DeviceGridEngine {
 public:
  std::string device() const override { return "gathering stand-in"; }

  absl::StatusOr<std::vector<double>> Multiply(const BlockCyclicLayout& a,
                                               const BlockCyclicLayout& b,
                                               const std::vector<double>& local_a,
                                               const std::vector<double>& local_b) override {
    const Matrix whole_a = Whole(a, local_a);
    const Matrix whole_b = Whole(b, local_b);
    JobControl control;
    absl::StatusOr<MultiplyResult> c = cpu_->Multiply(whole_a.view(), whole_b.view(), {}, &control);
    if (!c.ok()) return c.status();
    const BlockCyclicLayout c_layout{
        .rows = a.rows, .cols = b.cols, .block = a.block, .grid = a.grid};
    std::vector<double> local(Elements(c_layout));
    PackLocal(c_layout, Rank(), c->c.bytes(), sizeof(double),
              reinterpret_cast<std::byte*>(local.data()));
    return local;
  }

  absl::StatusOr<SignedLogDeterminant> Determinant(const BlockCyclicLayout& a,
                                                   const std::vector<double>& local_a) override {
    const Matrix whole = Whole(a, local_a);
    JobControl control;
    absl::StatusOr<DeterminantResult> det = cpu_->Determinant(whole.view(), {}, &control);
    if (!det.ok()) return det.status();
    if (det->value.is_zero()) {
      return SignedLogDeterminant{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
    }
    return SignedLogDeterminant{.sign = det->value.phase().real() < 0 ? -1 : 1,
                                .log_abs = det->value.log_abs()};
  }

 private:
  static int Rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }

  static size_t Elements(const BlockCyclicLayout& layout) {
    const int rank = Rank();
    const int64_t count = layout.LocalLeadingDimension(rank / layout.grid.cols) *
                          layout.LocalCols(rank % layout.grid.cols);
    return static_cast<size_t>(count > 0 ? count : 1);
  }

  // The row-major matrix whose parts the ranks hold.
  static Matrix Whole(const BlockCyclicLayout& layout, const std::vector<double>& local) {
    const int ranks = layout.grid.size();
    std::vector<int> counts(static_cast<size_t>(ranks));
    std::vector<int> offsets(static_cast<size_t>(ranks));
    int total = 0;
    for (int r = 0; r < ranks; ++r) {
      counts[static_cast<size_t>(r)] = static_cast<int>(layout.LocalElements(r));
      offsets[static_cast<size_t>(r)] = total;
      total += counts[static_cast<size_t>(r)];
    }
    std::vector<double> all(static_cast<size_t>(total > 0 ? total : 1));
    MPI_Allgatherv(local.data(), counts[static_cast<size_t>(Rank())], MPI_DOUBLE, all.data(),
                   counts.data(), offsets.data(), MPI_DOUBLE, MPI_COMM_WORLD);
    Matrix whole(layout.rows, layout.cols, DType::kFloat64);
    for (int r = 0; r < ranks; ++r) {
      UnpackLocal(layout, r,
                  reinterpret_cast<const std::byte*>(all.data() + offsets[static_cast<size_t>(r)]),
                  sizeof(double), whole.mutable_bytes());
    }
    return whole;
  }

  std::unique_ptr<Backend> cpu_ = MakeCpuBackend({.threads = 1});
};

}  // namespace matrixd::distributed

#endif  // MATRIXD_TESTS_DISTRIBUTED_GATHERING_DEVICE_ENGINE_H_
