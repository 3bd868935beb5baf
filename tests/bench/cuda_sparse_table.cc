// Block-sparse products on the GPU (MultiplyOptions::block_size) next to dense cuBLAS dgemm of the
// same matrices, and next to our dense product.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/cuda_device_timing.h"

namespace matrixd::bench {
namespace {

struct ProductTiming {
  Timing timing;
  int64_t block_products = 0;
  int64_t block_products_total = 0;
  double flops = 0.0;
};

ProductTiming TimeProduct(Backend& gpu, const Matrix& a, const Matrix& b, int64_t block_size,
                          int repeats) {
  MultiplyOptions options;
  options.block_size = block_size;
  ProductTiming product;
  product.timing = TimeOperation(repeats, [&] {
    absl::StatusOr<MultiplyResult> result = gpu.Multiply(a.view(), b.view(), options, nullptr);
    if (result.ok()) {
      product.block_products = result->block_products;
      product.block_products_total = result->block_products_total;
      product.flops = result->stats.flops;
    }
    return result;
  });
  return product;
}

void PrintRow(const std::string& b, const std::string& non_zero, const std::string& products,
              const ProductTiming& ours, double dense_alone) {
  std::printf("%-6s %-15s %-26s %-9s %-15s %-15s %-15s %s\n", b.c_str(), non_zero.c_str(),
              products.c_str(), Seconds(ours.timing.seconds).c_str(),
              Seconds(ours.timing.device).c_str(),
              Rate(ours.flops, ours.timing.device, 1e12).c_str(), Seconds(dense_alone).c_str(),
              Ratio(dense_alone, ours.timing.device).c_str());
  if (!ours.timing.error.empty()) std::printf("  ours failed: %s\n", ours.timing.error.c_str());
}

std::string Share(int64_t part, int64_t whole) {
  return whole > 0 ? Percent(static_cast<double>(part), static_cast<double>(whole)) : "-";
}

}  // namespace

void BenchBlockSparse(Backend& gpu, cuda::DeviceContext& context, const Flags& flags) {
  const int n = flags.sparse_n;
  PrintHeader(
      absl::StrCat("Block-sparse product C = A B, float64, n = ", n, ", ",
                   Significant(100 * flags.sparse_density),
                   "% of the b x b blocks of A and of B non-zero: ours vs dense cuBLAS dgemm"),
      "b      non-zero A/B    block products ran/total   ours(s)   device part(s)  "
      "device TFLOP/s  dense alone(s)  alone/device",
      {"ours: backend Multiply with block_size = b (upload A, B + block scans + products of the "
       "non-zero block pairs + download C); row \"dense\": block_size 0 (cuBLAS gemm)",
       "device part: stats.kernels (block_scan of A and of B + cublas_gemm_batched; dense: "
       "cublas_gemm), no transfers; TFLOP/s counts the block products that ran",
       "dense alone: cublasDgemm of A and B already on the device (the zeros do not change its "
       "work: measured once)",
       "target: faster than dense cuBLAS, i.e. alone/device > 1"});
  std::optional<BlockSparseMatrix> a, b;
  absl::StatusOr<double> dense_alone = absl::UnknownError("not measured");
  for (const int block : flags.sparse_blocks) {
    a.reset();
    b.reset();
    a = RandomBlockSparse(n, block, flags.sparse_density, 700 + block);
    b = RandomBlockSparse(n, block, flags.sparse_density, 800 + block);
    const ProductTiming ours = TimeProduct(gpu, a->matrix, b->matrix, block, flags.repeats);
    // cuBLAS does the same work whatever the zeros: one measurement serves every row.
    if (!dense_alone.ok()) {
      dense_alone = TimeCublasGemm(context, a->matrix, b->matrix, false, flags.repeats);
    }
    PrintRow(std::to_string(block),
             Share(a->non_zero_blocks, a->blocks) + " / " + Share(b->non_zero_blocks, b->blocks),
             absl::StrCat(ours.block_products, "/", ours.block_products_total, " (",
                          Share(ours.block_products, ours.block_products_total), ")"),
             ours, dense_alone.ok() ? *dense_alone : NAN);
  }
  if (!a) return;
  const ProductTiming dense = TimeProduct(gpu, a->matrix, b->matrix, 0, flags.repeats);
  PrintRow("dense", "-", "-", dense, dense_alone.ok() ? *dense_alone : NAN);
  if (!dense_alone.ok()) {
    std::printf("  dense alone failed: %s\n", std::string(dense_alone.status().ToString()).c_str());
  }
}

}  // namespace matrixd::bench
