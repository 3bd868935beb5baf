#include "core/multi_gpu/cannon_gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/device_vector.h"
#include "core/cuda/library_types.h"
#include "core/memory_resource.h"
#include "core/multi_gpu/cannon_ranks.h"
#include "core/multi_gpu/nccl_status.h"
#include "core/multi_gpu/operand_rectangles.h"
#include "core/multi_gpu/result_rectangles.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What the rounds need to know of the element type, chosen once per product so that the rest of
// the algorithm is written once over bytes: its size, how NCCL moves it (a complex element as two
// real ones: NCCL has no complex type, and the shifts only copy), and the block product C += A B of
// nb x nb row-major blocks on a handle's stream.
using BlockProduct = cublasStatus_t (*)(cublasHandle_t handle, int nb, const void* a, const void* b,
                                        void* c);
struct ElementType {
  size_t bytes = 0;
  ncclDataType_t nccl = ncclDouble;
  size_t nccl_per_element = 1;
  BlockProduct accumulate = nullptr;
};

// Row-major C += A B is column-major C^T += B^T A^T: gemm with the blocks swapped.
template <typename T>
cublasStatus_t AccumulateBlockProduct(cublasHandle_t handle, int nb, const void* a, const void* b,
                                      void* c) {
  using Traits = cuda::LibraryTraits<T>;
  using Device = typename Traits::Device;
  const Device one = Traits::One();
  return Traits::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, nb, nb, nb, &one,
                      static_cast<const Device*>(b), nb, static_cast<const Device*>(a), nb, &one,
                      static_cast<Device*>(c), nb);
}

// REQUIRES: IsFloating(dtype).
ElementType ElementTypeOf(DType dtype) {
  return cuda::VisitFloatingType(dtype, [](auto type) {
    using T = typename decltype(type)::type;
    using Real = typename cuda::LibraryTraits<T>::Real;
    return ElementType{.bytes = sizeof(T),
                       .nccl = std::is_same_v<Real, float> ? ncclFloat : ncclDouble,
                       .nccl_per_element = sizeof(T) / sizeof(Real),
                       .accumulate = &AccumulateBlockProduct<T>};
  });
}

// The blocks one grid position holds: two buffers each of A and B (the current one is read by
// this round's GEMM while the next one receives the shifted block) and C, from the rank's memory
// resource in its compute stream's order.
struct BlockSlot {
  absl::Status Allocate(const GpuRank& rank, size_t bytes) {
    device = rank.device;
    for (int buffer = 0; buffer < 2; ++buffer) {
      MATRIXD_ASSIGN_OR_RETURN(a[buffer], Block::Create(*rank.memory, bytes, rank.compute.get()));
      MATRIXD_ASSIGN_OR_RETURN(b[buffer], Block::Create(*rank.memory, bytes, rank.compute.get()));
    }
    MATRIXD_ASSIGN_OR_RETURN(c, Block::Create(*rank.memory, bytes, rank.compute.get()));
    return absl::OkStatus();
  }
  // The rank's device stays current while the buffers are given back.
  ~BlockSlot() { cudaSetDevice(device); }

  using Block = cuda::DeviceVector<std::byte>;  // nb x nb elements of the product's dtype
  int device = 0;
  int rank = 0;
  std::array<Block, 2> a;
  std::array<Block, 2> b;
  Block c;
};

// Copies block (bi, bj) of `m` (block nb) into `block` (row-major nb x nb, zeroed already: the
// padding beyond the edges) on `rank`'s GPU, whose stream `pulling` copies from host memory.
absl::Status CopyBlockUp(const OperandRectangles& m, int64_t bi, int64_t bj, int64_t nb,
                         void* block, int rank, cudaStream_t pulling) {
  const int64_t row0 = bi * nb;
  const int64_t col0 = bj * nb;
  const int64_t rows = std::clamp<int64_t>(m.rows() - row0, 0, nb);
  const int64_t cols = std::clamp<int64_t>(m.cols() - col0, 0, nb);
  if (rows == 0 || cols == 0) return absl::OkStatus();
  return m.Copy(row0, rows, col0, cols, block, nb, rank, pulling);
}

// The rectangles of `operand` (`field` names it in errors).
absl::StatusOr<OperandRectangles> RectanglesOf(const CannonOperand& operand,
                                               absl::string_view field) {
  if (operand.distributed == nullptr) return OperandRectangles::Of(operand.view);
  const DistributedResidentMatrix& m = *operand.distributed;
  if (m.rows() != operand.view.rows || m.cols() != operand.view.cols ||
      m.dtype() != operand.view.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the distributed matrix is ", m.rows(), "x", m.cols(), " ",
                     DTypeName(m.dtype()), ", its view ", operand.view.rows, "x", operand.view.cols,
                     " ", DTypeName(operand.view.dtype)));
  }
  return OperandRectangles::Of(m);
}

// The rectangles of `output` for an m x n product of `dtype` on `devices` (see CannonWritesInto).
absl::StatusOr<ResultRectangles> OutputRectangles(ResidentMatrix& output, int64_t m, int64_t n,
                                                  DType dtype, const std::vector<int>& devices) {
  if (output.rows() != m || output.cols() != n || output.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("output is ", output.rows(), "x", output.cols(),
                                                   " ", DTypeName(output.dtype()), "; C is ", m,
                                                   "x", n, " ", DTypeName(dtype)));
  }
  MATRIXD_ASSIGN_OR_RETURN(ResultRectangles rectangles, ResultRectangles::Of(output));
  if (absl::Status writable = rectangles.CheckWritableFrom(devices); !writable.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("output: ", writable.message()));
  }
  return rectangles;
}

absl::Status SynchronizeComputeStreams(const std::vector<std::unique_ptr<GpuRank>>& ranks) {
  for (const auto& rank : ranks) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank->device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank->compute.get()));
  }
  return absl::OkStatus();
}

}  // namespace

bool CannonWritesInto(ResidentMatrix& output, int64_t m, int64_t n, DType dtype,
                      const std::vector<int>& devices) {
  return OutputRectangles(output, m, n, dtype, devices).ok();
}

int CannonGridSide(int gpus) {
  for (int q = 1;; ++q) {
    if (q * q >= gpus && (q * q) % gpus == 0) return q;
  }
}

absl::StatusOr<Matrix> CannonGemm(const std::vector<int>& devices, const MatrixView& a,
                                  const MatrixView& b, CannonTimes* times,
                                  const DeviceMemoryLimit& memory_limit) {
  return CannonGemm(devices, CannonOperand{.view = a}, CannonOperand{.view = b}, times,
                    memory_limit);
}

absl::StatusOr<Matrix> CannonGemm(const std::vector<int>& devices, const CannonOperand& a_operand,
                                  const CannonOperand& b_operand, CannonTimes* times,
                                  const DeviceMemoryLimit& memory_limit, ResidentMatrix* output) {
  const MatrixView& a = a_operand.view;
  const MatrixView& b = b_operand.view;
  if (devices.empty()) return absl::InvalidArgumentError("CannonGemm: no devices");
  if (a.dtype != b.dtype || !IsFloating(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CannonGemm: A is ", DTypeName(a.dtype), ", B is ", DTypeName(b.dtype),
                     "; want both float32, float64, complex64 or complex128"));
  }
  if (a.cols != b.rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("CannonGemm: A is ", a.rows, "x", a.cols, ", B is ", b.rows, "x", b.cols));
  }
  // Where C goes: checked before any GPU is touched, and the output's own writes (and its
  // allocation, in its stream's order) landed before the gather writes it from other streams.
  std::optional<ResultRectangles> into;
  if (output != nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(into, OutputRectangles(*output, a.rows, b.cols, a.dtype, devices));
    MATRIXD_RETURN_IF_ERROR(output->Flush());
  }
  const int gpus = static_cast<int>(devices.size());
  const int q = CannonGridSide(gpus);
  const int64_t extent = std::max({a.rows, a.cols, b.cols});
  const int64_t nb = (extent + q - 1) / q;
  const ElementType element = ElementTypeOf(a.dtype);
  const size_t block_elements = static_cast<size_t>(nb * nb);
  const size_t block_bytes = block_elements * element.bytes;

  // The ranks of an earlier product on these GPUs, or new ones; given back only on success.
  MATRIXD_ASSIGN_OR_RETURN(RankSetLease lease, RankSetLease::Acquire(devices, memory_limit));
  std::vector<std::unique_ptr<GpuRank>>& ranks = lease.ranks();

  // Grid position p = i q + j lives on rank p mod R. Initial skew: (i, j) holds A(i, j + i) and
  // B(i + j, j), indices mod q.
  const auto start = std::chrono::steady_clock::now();
  MATRIXD_ASSIGN_OR_RETURN(const OperandRectangles a_source, RectanglesOf(a_operand, "a"));
  MATRIXD_ASSIGN_OR_RETURN(const OperandRectangles b_source, RectanglesOf(b_operand, "b"));
  std::vector<BlockSlot> slots(static_cast<size_t>(q * q));
  // Destroyed before the slots: no transfer may still read or write a block given back.
  const absl::Cleanup drain = [&ranks] {
    for (const auto& rank : ranks) rank->Drain();
  };
  for (int p = 0; p < q * q; ++p) {
    BlockSlot& slot = slots[p];
    slot.rank = p % gpus;
    const GpuRank& rank = *ranks[slot.rank];
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
    MATRIXD_RETURN_IF_ERROR(slot.Allocate(rank, block_bytes));
    for (std::byte* zeroed : {slot.a[0].data(), slot.b[0].data(), slot.c.data()}) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(zeroed, 0, block_bytes, rank.compute.get()));
    }
  }
  // A block pushed from the GPU holding a device operand goes on that GPU's stream: the zeroing
  // above must have landed first.
  MATRIXD_RETURN_IF_ERROR(SynchronizeComputeStreams(ranks));
  for (int i = 0; i < q; ++i) {
    for (int j = 0; j < q; ++j) {
      BlockSlot& slot = slots[i * q + j];
      const GpuRank& rank = *ranks[slot.rank];
      MATRIXD_RETURN_IF_ERROR(CopyBlockUp(a_source, i, (j + i) % q, nb, slot.a[0].data(),
                                          rank.device, rank.compute.get()));
      MATRIXD_RETURN_IF_ERROR(CopyBlockUp(b_source, (i + j) % q, j, nb, slot.b[0].data(),
                                          rank.device, rank.compute.get()));
    }
  }
  MATRIXD_RETURN_IF_ERROR(a_source.Synchronize());
  MATRIXD_RETURN_IF_ERROR(b_source.Synchronize());
  MATRIXD_RETURN_IF_ERROR(SynchronizeComputeStreams(ranks));
  if (times != nullptr) times->scatter_seconds = SecondsSince(start);

  const auto rounds_start = std::chrono::steady_clock::now();
  const int ld = static_cast<int>(nb);
  const size_t nccl_count = block_elements * element.nccl_per_element;
  for (int round = 0; round < q; ++round) {
    const int current = round % 2;
    const int next = 1 - current;
    // The products of this round.
    for (BlockSlot& slot : slots) {
      GpuRank& rank = *ranks[slot.rank];
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
      if (round > 0) {
        MATRIXD_RETURN_IF_ERROR(rank.shifts_done.MakeWait(rank.compute.get()));
      }
      MATRIXD_CUDA_RETURN_IF_ERROR(element.accumulate(rank.cublas, ld, slot.a[current].data(),
                                                      slot.b[current].data(), slot.c.data()));
    }
    if (round + 1 == q) break;
    // The shifts, overlapping the products: they read the current buffers (as the GEMMs do) and
    // write the next ones, which the previous round's GEMMs read.
    for (const auto& rank : ranks) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank->device));
      if (round > 0) {
        MATRIXD_RETURN_IF_ERROR(rank->products_done.MakeWait(rank->transfer.get()));
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
          const std::byte* source = matrix == 0 ? from.a[current].data() : from.b[current].data();
          std::byte* target = matrix == 0 ? to.a[next].data() : to.b[next].data();
          if (from.rank == to.rank) {
            GpuRank& rank = *ranks[from.rank];
            MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
            MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
                target, source, block_bytes, cudaMemcpyDeviceToDevice, rank.transfer.get()));
            continue;
          }
          MATRIXD_NCCL_RETURN_IF_ERROR(ncclSend(source, nccl_count, element.nccl, to.rank,
                                                ranks[from.rank]->comm.get(),
                                                ranks[from.rank]->transfer.get()));
          MATRIXD_NCCL_RETURN_IF_ERROR(ncclRecv(target, nccl_count, element.nccl, from.rank,
                                                ranks[to.rank]->comm.get(),
                                                ranks[to.rank]->transfer.get()));
        }
      }
    }
    MATRIXD_NCCL_RETURN_IF_ERROR(ncclGroupEnd());
    for (const auto& rank : ranks) {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank->device));
      MATRIXD_RETURN_IF_ERROR(rank->shifts_done.Record(rank->transfer.get()));
      MATRIXD_RETURN_IF_ERROR(rank->products_done.Record(rank->compute.get()));
    }
  }
  for (const auto& rank : ranks) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank->device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank->compute.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank->transfer.get()));
  }
  if (times != nullptr) times->rounds_seconds = SecondsSince(rounds_start);

  const auto gather_start = std::chrono::steady_clock::now();
  Matrix c;
  if (!into.has_value()) {
    c = Matrix(a.rows, b.cols, a.dtype);
    into = ResultRectangles::Of(c);
  }
  // Each GPU pushes its blocks' rows to where they belong, all GPUs at once.
  for (int i = 0; i < q; ++i) {
    for (int j = 0; j < q; ++j) {
      const int64_t rows = std::clamp<int64_t>(a.rows - i * nb, 0, nb);
      const int64_t cols = std::clamp<int64_t>(b.cols - j * nb, 0, nb);
      if (rows == 0 || cols == 0) continue;
      const BlockSlot& slot = slots[i * q + j];
      const GpuRank& rank = *ranks[slot.rank];
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank.device));
      MATRIXD_RETURN_IF_ERROR(
          into->Copy(slot.c.data(), nb, i * nb, rows, j * nb, cols, rank.compute.get()));
    }
  }
  MATRIXD_RETURN_IF_ERROR(SynchronizeComputeStreams(ranks));
  if (times != nullptr) times->gather_seconds = SecondsSince(gather_start);
  lease.Keep();
  return c;
}

}  // namespace matrixd::multi_gpu
