// The thin product at the heart of Freivalds' check (core/cuda/thin_product.h): W = M X for an
// n x n M and 8 vectors, M's rows staged in shared memory by bulk copies and loaded by each warp
// itself, next to the copy kernel moving M's bytes (device time between events, data already on
// the device). Part of the `verify` table set, at flags.verify_sizes.
#include <cstdio>
#include <string>

#include "core/cuda/thin_product.h"
#include "core/status_macros.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {
namespace {

constexpr int kVectors = 8;

absl::Status ThinProductRow(cuda::DeviceContext& context, int n, DType dtype, int repeats) {
  const Matrix m = RandomMatrix(n, n, dtype, 31);
  const Matrix x = RandomMatrix(kVectors, n, dtype, 32);
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer dm, UploadMatrix(context, m));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer dx, UploadMatrix(context, x));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer out, context.Allocate(x.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(cuda::DeviceBuffer scratch,
                           context.Allocate(cuda::ThinProductScratchBytes(dtype, n, n, false)));
  const auto product = [&](bool staged) {
    return TimeOnDevice(context, repeats, NoPreparation, [&] {
      return cuda::LaunchThinProduct({.dtype = dtype,
                                      .m = dm.data(),
                                      .rows = n,
                                      .cols = n,
                                      .x = dx.data(),
                                      .s = kVectors,
                                      .out = out.data(),
                                      .scratch = scratch.data(),
                                      .staged = staged},
                                     context.stream());
    });
  };
  MATRIXD_ASSIGN_OR_RETURN(const double staged, product(true));
  MATRIXD_ASSIGN_OR_RETURN(const double unstaged, product(false));
  MATRIXD_ASSIGN_OR_RETURN(const double copy, TimeCopyKernel(context, m.byte_size(), repeats));
  const auto bytes = static_cast<double>(m.byte_size());
  // The copy kernel reads and writes M's bytes: its rate counts both.
  std::printf("%-8s %-6d %-10s %-10s %-10s %-10s %-10s %-9s %s\n", DTypeName(dtype), n,
              Microseconds(staged).c_str(), Rate(bytes, staged, 1e9).c_str(),
              Microseconds(unstaged).c_str(), Rate(bytes, unstaged, 1e9).c_str(),
              Microseconds(copy).c_str(), Rate(2 * bytes, copy, 1e9).c_str(),
              PercentTenths(bytes / staged, 2 * bytes / copy).c_str());
  return absl::OkStatus();
}

}  // namespace

void BenchThinProducts(cuda::DeviceContext& context, const Flags& flags) {
  PrintHeader("Thin product W = M X of Freivalds' check, n x n M, 8 vectors (device time)",
              "dtype    n      staged(us) GB/s       warps(us)  GB/s       copy(us)   GB/s      "
              "staged/copy rate",
              {"staged: M's rows in shared memory by bulk copies (the default); warps: each warp "
               "loads its rows (RowsKernel); copy: the copy kernel reading and writing M's bytes "
               "(GB/s counts both); medians of flags.repeats runs after one warm-up"});
  for (const int n : flags.verify_sizes) {
    for (const DType dtype : {DType::kFloat64, DType::kFloat32}) {
      const absl::Status row = ThinProductRow(context, n, dtype, flags.repeats);
      if (!row.ok())
        std::printf("%-8s %-6d failed: %s\n", DTypeName(dtype), n,
                    std::string(row.ToString()).c_str());
    }
  }
}

}  // namespace matrixd::bench
