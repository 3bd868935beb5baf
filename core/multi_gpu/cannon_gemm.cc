#include "core/multi_gpu/cannon_gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/nccl_status.h"
#include "core/multi_gpu/operand_source.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One GPU's share: its NCCL rank, streams, cuBLAS handle and the round events. Owns them all.
struct GpuRank {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t compute = nullptr;
  cudaStream_t transfer = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaEvent_t products_done = nullptr;  // the last round's GEMMs have read their buffers
  cudaEvent_t shifts_done = nullptr;    // the last round's shifts have landed

  GpuRank() = default;
  GpuRank(const GpuRank&) = delete;
  GpuRank& operator=(const GpuRank&) = delete;
  ~GpuRank() {
    if (device < 0) return;
    cudaSetDevice(device);
    if (cublas != nullptr) cublasDestroy(cublas);
    if (products_done != nullptr) cudaEventDestroy(products_done);
    if (shifts_done != nullptr) cudaEventDestroy(shifts_done);
    if (compute != nullptr) cudaStreamDestroy(compute);
    if (transfer != nullptr) cudaStreamDestroy(transfer);
    if (comm != nullptr) ncclCommDestroy(comm);
  }

  absl::Status Init() {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&transfer, cudaStreamNonBlocking));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&products_done, cudaEventDisableTiming));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&shifts_done, cudaEventDisableTiming));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&cublas));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(cublas, compute));
    return absl::OkStatus();
  }
};

// A device allocation of one GPU, freed on destruction.
class DeviceDoubles {
 public:
  DeviceDoubles() = default;
  DeviceDoubles(DeviceDoubles&& other) noexcept
      : device_(other.device_), data_(std::exchange(other.data_, nullptr)) {}
  DeviceDoubles& operator=(DeviceDoubles&&) = delete;
  ~DeviceDoubles() {
    if (data_ != nullptr) {
      cudaSetDevice(device_);
      cudaFree(data_);
    }
  }
  absl::Status Allocate(int device, size_t count) {
    device_ = device;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    return MATRIXD_CUDA_STATUS(cudaMalloc(&data_, count * sizeof(double)));
  }
  double* get() const { return data_; }

 private:
  int device_ = 0;
  double* data_ = nullptr;
};

// The blocks one grid position holds: two buffers each of A and B (the current one is read by
// this round's GEMM while the next one receives the shifted block) and C.
struct BlockSlot {
  int rank = 0;
  std::array<DeviceDoubles, 2> a;
  std::array<DeviceDoubles, 2> b;
  DeviceDoubles c;
};

// Copies block (bi, bj) of the row-major matrix `m` (rows x cols, block nb; in host memory or on a
// GPU, as `source` says) into `block` (row-major nb x nb, zeroed already: the padding beyond the
// edges) on `rank`'s GPU, whose stream `pulling` copies from host memory.
absl::Status CopyBlockUp(const MatrixView& m, const OperandSource& source, int64_t bi, int64_t bj,
                         int64_t nb, double* block, int rank, cudaStream_t pulling) {
  const int64_t row0 = bi * nb;
  const int64_t col0 = bj * nb;
  const int64_t rows = std::clamp<int64_t>(m.rows - row0, 0, nb);
  const int64_t cols = std::clamp<int64_t>(m.cols - col0, 0, nb);
  if (rows == 0 || cols == 0) return absl::OkStatus();
  const double* from = reinterpret_cast<const double*>(m.data) + row0 * m.cols + col0;
  MATRIXD_ASSIGN_OR_RETURN(cudaStream_t stream, source.StreamFor(rank, pulling));
  return MATRIXD_CUDA_STATUS(cudaMemcpy2DAsync(block, nb * sizeof(double), from,
                                               m.cols * sizeof(double), cols * sizeof(double), rows,
                                               cudaMemcpyDefault, stream));
}

absl::Status SynchronizeComputeStreams(const std::vector<GpuRank>& ranks) {
  for (const GpuRank& rank : ranks) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank.compute));
  }
  return absl::OkStatus();
}

}  // namespace

int CannonGridSide(int gpus) {
  for (int q = 1;; ++q) {
    if (q * q >= gpus && (q * q) % gpus == 0) return q;
  }
}

absl::StatusOr<Matrix> CannonGemm(const std::vector<int>& devices, const MatrixView& a,
                                  const MatrixView& b, CannonTimes* times) {
  if (devices.empty()) return absl::InvalidArgumentError("CannonGemm: no devices");
  if (a.dtype != DType::kFloat64 || b.dtype != DType::kFloat64) {
    return absl::InvalidArgumentError("CannonGemm takes float64 operands");
  }
  if (a.cols != b.rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("CannonGemm: A is ", a.rows, "x", a.cols, ", B is ", b.rows, "x", b.cols));
  }
  const int gpus = static_cast<int>(devices.size());
  const int q = CannonGridSide(gpus);
  const int64_t extent = std::max({a.rows, a.cols, b.cols});
  const int64_t nb = (extent + q - 1) / q;
  const size_t block_elements = static_cast<size_t>(nb * nb);

  std::vector<GpuRank> ranks(static_cast<size_t>(gpus));
  std::vector<ncclComm_t> comms(static_cast<size_t>(gpus));
  MATRIXD_NCCL_RETURN_IF_ERROR(ncclCommInitAll(comms.data(), gpus, devices.data()));
  for (int r = 0; r < gpus; ++r) {
    ranks[r].device = devices[r];
    ranks[r].comm = comms[r];
    MATRIXD_RETURN_IF_ERROR(ranks[r].Init());
  }

  // Grid position p = i q + j lives on rank p mod R. Initial skew: (i, j) holds A(i, j + i) and
  // B(i + j, j), indices mod q.
  const auto start = std::chrono::steady_clock::now();
  MATRIXD_ASSIGN_OR_RETURN(const OperandSource a_source, OperandSource::Of(a));
  MATRIXD_ASSIGN_OR_RETURN(const OperandSource b_source, OperandSource::Of(b));
  std::vector<BlockSlot> slots(static_cast<size_t>(q * q));
  for (int p = 0; p < q * q; ++p) {
    BlockSlot& slot = slots[p];
    slot.rank = p % gpus;
    const GpuRank& rank = ranks[slot.rank];
    for (int buffer = 0; buffer < 2; ++buffer) {
      MATRIXD_RETURN_IF_ERROR(slot.a[buffer].Allocate(rank.device, block_elements));
      MATRIXD_RETURN_IF_ERROR(slot.b[buffer].Allocate(rank.device, block_elements));
    }
    MATRIXD_RETURN_IF_ERROR(slot.c.Allocate(rank.device, block_elements));
    for (double* zeroed : {slot.a[0].get(), slot.b[0].get(), slot.c.get()}) {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(zeroed, 0, block_elements * sizeof(double), rank.compute));
    }
  }
  // A block pushed from the GPU holding a device operand goes on that GPU's stream: the zeroing
  // above must have landed first.
  MATRIXD_RETURN_IF_ERROR(SynchronizeComputeStreams(ranks));
  for (int i = 0; i < q; ++i) {
    for (int j = 0; j < q; ++j) {
      BlockSlot& slot = slots[i * q + j];
      const GpuRank& rank = ranks[slot.rank];
      MATRIXD_RETURN_IF_ERROR(
          CopyBlockUp(a, a_source, i, (j + i) % q, nb, slot.a[0].get(), rank.device, rank.compute));
      MATRIXD_RETURN_IF_ERROR(
          CopyBlockUp(b, b_source, (i + j) % q, j, nb, slot.b[0].get(), rank.device, rank.compute));
    }
  }
  MATRIXD_RETURN_IF_ERROR(a_source.Synchronize());
  MATRIXD_RETURN_IF_ERROR(b_source.Synchronize());
  MATRIXD_RETURN_IF_ERROR(SynchronizeComputeStreams(ranks));
  if (times != nullptr) times->scatter_seconds = SecondsSince(start);

  const auto rounds_start = std::chrono::steady_clock::now();
  const int ld = static_cast<int>(nb);
  const double one = 1.0;
  for (int round = 0; round < q; ++round) {
    const int current = round % 2;
    const int next = 1 - current;
    // The products of this round: row-major C += A B is column-major C^T += B^T A^T.
    for (BlockSlot& slot : slots) {
      GpuRank& rank = ranks[slot.rank];
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
      if (round > 0) {
        MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(rank.compute, rank.shifts_done, 0));
      }
      MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemm(rank.cublas, CUBLAS_OP_N, CUBLAS_OP_N, ld, ld, ld,
                                               &one, slot.b[current].get(), ld,
                                               slot.a[current].get(), ld, &one, slot.c.get(), ld));
    }
    if (round + 1 == q) break;
    // The shifts, overlapping the products: they read the current buffers (as the GEMMs do) and
    // write the next ones, which the previous round's GEMMs read.
    for (GpuRank& rank : ranks) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
      if (round > 0) {
        MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(rank.transfer, rank.products_done, 0));
      }
    }
    // Sends and receives are issued in the same order (by sending position) on both sides of
    // every pair of ranks, as NCCL matches them in order.
    MATRIXD_NCCL_RETURN_IF_ERROR(ncclGroupStart());
    for (int matrix = 0; matrix < 2; ++matrix) {
      for (int i = 0; i < q; ++i) {
        for (int j = 0; j < q; ++j) {
          // A moves left: (i, j) -> (i, j - 1); B moves up: (i, j) -> (i - 1, j).
          BlockSlot& from = slots[i * q + j];
          BlockSlot& to =
              matrix == 0 ? slots[i * q + (j + q - 1) % q] : slots[((i + q - 1) % q) * q + j];
          const double* source = matrix == 0 ? from.a[current].get() : from.b[current].get();
          double* target = matrix == 0 ? to.a[next].get() : to.b[next].get();
          if (from.rank == to.rank) {
            GpuRank& rank = ranks[from.rank];
            MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
            MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(target, source,
                                                         block_elements * sizeof(double),
                                                         cudaMemcpyDeviceToDevice, rank.transfer));
            continue;
          }
          MATRIXD_NCCL_RETURN_IF_ERROR(ncclSend(source, block_elements, ncclDouble, to.rank,
                                                ranks[from.rank].comm, ranks[from.rank].transfer));
          MATRIXD_NCCL_RETURN_IF_ERROR(ncclRecv(target, block_elements, ncclDouble, from.rank,
                                                ranks[to.rank].comm, ranks[to.rank].transfer));
        }
      }
    }
    MATRIXD_NCCL_RETURN_IF_ERROR(ncclGroupEnd());
    for (GpuRank& rank : ranks) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(rank.shifts_done, rank.transfer));
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaEventRecord(rank.products_done, rank.compute));
    }
  }
  for (GpuRank& rank : ranks) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank.compute));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank.transfer));
  }
  if (times != nullptr) times->rounds_seconds = SecondsSince(rounds_start);

  const auto gather_start = std::chrono::steady_clock::now();
  Matrix c(a.rows, b.cols, DType::kFloat64);
  for (int i = 0; i < q; ++i) {
    for (int j = 0; j < q; ++j) {
      const int64_t rows = std::clamp<int64_t>(a.rows - i * nb, 0, nb);
      const int64_t cols = std::clamp<int64_t>(b.cols - j * nb, 0, nb);
      if (rows == 0 || cols == 0) continue;
      const BlockSlot& slot = slots[i * q + j];
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(ranks[slot.rank].device));
      double* target = c.As<double>().data() + i * nb * b.cols + j * nb;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy2D(target, b.cols * sizeof(double), slot.c.get(),
                                                nb * sizeof(double), cols * sizeof(double), rows,
                                                cudaMemcpyDeviceToHost));
    }
  }
  if (times != nullptr) times->gather_seconds = SecondsSince(gather_start);
  return c;
}

}  // namespace matrixd::multi_gpu
