#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/blocking_event.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/uint32_gemm.h"
#include "core/cuda/uint32_tile_gemm.cuh"

namespace matrixd::cuda {
namespace {

// A launch covers about this many multiply-adds (~5-10 ms on an H100), so that a cancel is seen
// soon even in a product of 10^13 of them; smaller products run in one launch and never wait.
constexpr double kBandMultiplyAdds = 1ull << 36;

template <bool kTransposeA, bool kTransposeB>
cudaError_t LaunchBand(int64_t m, int64_t n, int64_t k, const uint32_t* a, const uint32_t* b,
                       uint32_t* c, int64_t first_tile_row, int64_t tile_rows,
                       cudaStream_t stream) {
  return LaunchUint32Gemm<kTransposeA, kTransposeB>(m, n, k, a, b, c, first_tile_row, tile_rows,
                                                    DenseSlabs{}, stream);
}

cudaError_t LaunchBand(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                       const uint32_t* a, const uint32_t* b, uint32_t* c, int64_t first_tile_row,
                       int64_t tile_rows, cudaStream_t stream) {
  if (transpose_a) {
    return transpose_b
               ? LaunchBand<true, true>(m, n, k, a, b, c, first_tile_row, tile_rows, stream)
               : LaunchBand<true, false>(m, n, k, a, b, c, first_tile_row, tile_rows, stream);
  }
  return transpose_b
             ? LaunchBand<false, true>(m, n, k, a, b, c, first_tile_row, tile_rows, stream)
             : LaunchBand<false, false>(m, n, k, a, b, c, first_tile_row, tile_rows, stream);
}

}  // namespace

absl::StatusOr<MultiplyResult> Uint32Multiply(const MatrixView& a, const MatrixView& b,
                                              const MultiplyOptions& options,
                                              DeviceContext& context, JobControl* control) {
  if (IsCancelled(control)) return absl::CancelledError("multiplication cancelled");
  if (a.dtype != DType::kUInt32 || b.dtype != DType::kUInt32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a.dtype is ", DTypeName(a.dtype), " and b.dtype ", DTypeName(b.dtype), "; want uint32"));
  }
  const int64_t m = options.transpose_a ? a.cols : a.rows;
  const int64_t k = options.transpose_a ? a.rows : a.cols;
  const int64_t n = options.transpose_b ? b.rows : b.cols;
  if ((options.transpose_b ? b.cols : b.rows) != k || m < 1 || n < 1 || k < 1) {
    return absl::InvalidArgumentError(absl::StrCat("product of op(a) ", m, "x", k, " and op(b) ",
                                                   options.transpose_b ? b.cols : b.rows, "x", n,
                                                   " is not defined"));
  }

  MultiplyResult result;
  result.c = Matrix(m, n, DType::kUInt32);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_a, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_b, context.Allocate(b.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer device_c, context.Allocate(result.c.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, device_a, a.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context.Upload(b.data, device_b, b.byte_size()));

  const int64_t tile_rows = (m + kGemmTile - 1) / kGemmTile;
  const double per_tile_row =
      static_cast<double>(kGemmTile) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t band = std::clamp<int64_t>(static_cast<int64_t>(kBandMultiplyAdds / per_tile_row),
                                           1, kGemmMaxTileRows);
  MATRIXD_ASSIGN_OR_RETURN(BlockingEvent band_done, BlockingEvent::Create());
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
  for (int64_t first = 0; first < tile_rows; first += band) {
    const int64_t rows = std::min(band, tile_rows - first);
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBand(
        options.transpose_a, options.transpose_b, m, n, k, device_a.as<uint32_t>(),
        device_b.as<uint32_t>(), device_c.as<uint32_t>(), first, rows, context.stream()));
    if (first + rows < tile_rows) {
      // Wait for this band before queueing the next, so that a cancel stops the product.
      MATRIXD_RETURN_IF_ERROR(band_done.WaitFor(context.stream()));
      if (IsCancelled(control)) return absl::CancelledError("multiplication cancelled");
      ReportProgress(control, static_cast<double>(first + rows) / static_cast<double>(tile_rows));
    }
  }
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  MATRIXD_RETURN_IF_ERROR(
      context.Download(device_c, result.c.mutable_bytes(), result.c.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(double seconds, timer.Seconds());
  result.stats.flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  result.stats.bytes_moved = a.byte_size() + b.byte_size() + result.c.byte_size();
  result.stats.kernels.push_back(
      KernelRecord{"uint32_gemm", seconds, result.stats.bytes_moved, result.stats.flops});
  return result;
}

}  // namespace matrixd::cuda
