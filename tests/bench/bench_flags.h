// matrixd_bench's command line: the sizes each table runs at, which tables run, and on which
// backends. Every size has a default for a full run on an H100 and a smaller one under --quick.
#ifndef MATRIXD_TESTS_BENCH_BENCH_FLAGS_H_
#define MATRIXD_TESTS_BENCH_BENCH_FLAGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace matrixd::bench {

struct Flags {
  // Tables to run (names in kTableNames); empty: all of them.
  std::vector<std::string> tables;

  // dense: determinant by LU and GEMM, with their library calls alone.
  std::vector<int> det_sizes = {4096, 8192, 16384};
  int gemm_n = 8192;
  // factorize: LU, Cholesky and QR on the GPU.
  int factor_n = 4096;
  // batched: batched LU of small matrices.
  int batch = 100000;  // matrices per batched LU on the GPU
  std::vector<int> batch_sizes = {32, 64};
  // condensation: one step kernel at step_n, whole determinants at condensation_sizes.
  int step_n = 8192;
  std::vector<int> condensation_sizes = {1024, 4096, 8192};
  // modular: det mod each prime at order ntl_n, ours next to NTL on one core (when ntl); the CPU
  // backend (when cpu; one thread, unblocked, so slow) only at orders up to cpu_modular_n, and at
  // cpu_modular_n itself when that is below ntl_n.
  int ntl_n = 4096;
  int cpu_modular_n = 1024;
  std::vector<uint64_t> primes = {2147483629, 65521};
  bool ntl = true;
  // The GPU rows once per value: 1 with look-ahead, 0 on one stream (cuda::ModularLuTuning).
  std::vector<int> modp_look_ahead = {1};
  // And once per value of the host threads that narrow the int64 matrix on its way into the
  // pinned staging (cuda::PinnedStaging::SetHostThreads; empty: the default).
  std::vector<int> staging_threads;
  // And once per value of the rows of A per piece of the overlapped upload (0: the default) and
  // of the overlap itself (1: the factorization overlaps the upload, 0: after it)
  // (cuda::ModularLuTuning::piece_rows, overlap).
  std::vector<int> modp_piece_rows = {0};
  std::vector<int> modp_overlap = {1};
  // exact: the exact determinant at each order of exact_sizes with entries below 2^exact_bits,
  // ours on the GPU next to FLINT's fmpz_mat_det on one core (when flint).
  std::vector<int> exact_sizes = {500, 1000};
  int exact_bits = 20;
  // The GPU rows once per value, the modular LU's one-piece products by: "fused" (product and
  // reduction in one kernel) or "cublas" (cublasDgemmStridedBatched, then the reduction)
  // (cuda::ModularLuTuning::fused_products).
  std::vector<std::string> exact_products = {"fused"};
  bool flint = true;
  // sparse: block-sparse product of order sparse_n at each block size.
  int sparse_n = 16384;
  std::vector<int> sparse_blocks = {128, 256};
  double sparse_density = 0.1;
  // permanent: real Glynn at perm_n - 4, perm_n - 2 and perm_n, both precisions, dense and
  // perm_density-dense matrices, dense and sparse walks.
  int perm_n = 36;
  double perm_density = 0.3;
  // permanent (GPU): the sparse walk's head rows to run, each a row of the table
  // (cuda::SetSparsePermanentHeadRows: -1 by the operation count, 0 the block walk, 8, 12, 16, 20
  // the head walk with that many head rows).
  std::vector<int> perm_head_rows = {-1};
  // accuracy: median and worst relative error of both precisions against the exact permanent
  // (the INT64 walk), accuracy_samples matrices with entries k / 2^20 of each order and sign.
  std::vector<int> accuracy_sizes = {20, 24, 28, 32};
  int accuracy_samples = 5;
  // small: small_count determinants of each order in small_sizes, one request each from each
  // number of callers in small_threads, against one batched LU of them all.
  std::vector<int> small_sizes = {8, 32};
  int small_count = 8192;
  std::vector<int> small_threads = {1, 4, 16};
  // verify: Freivalds' check of a product (Multiply with verify) next to the product itself, on
  // each backend at each order.
  std::vector<int> verify_sizes = {4096, 8192};
  // condition: condition estimates (Factorize with estimate_condition) next to the
  // factorization, on each backend at each order.
  std::vector<int> condition_sizes = {4096, 8192};
  // refine, deterministic: a refined LU solve next to the plain one; each operation with and
  // without deterministic.
  std::vector<int> refine_sizes = {4096, 8192};
  // cpu: the CPU backend's own tables.
  int cpu_n = 2048;
  int cpu_batch = 10000;  // matrices per batched LU on the CPU

  int repeats = 3;
  bool gpu = true;
  bool cpu = true;

  // Whether the table called `name` is to run.
  bool Runs(std::string_view name) const;
};

// The tables, in the order they print: bandwidth, dense, factorize, batched, condensation, sparse,
// permanent, accuracy, modular, exact, small, verify, condition, refine, deterministic, cpu.
extern const std::vector<std::string_view> kTableNames;

// Parses argv into `flags`. Prints what is wrong to stderr and returns false on an unknown flag, a
// malformed value, an unknown table name or a modulus that is not a prime below 2^62.
bool ParseFlags(int argc, char** argv, Flags& flags);

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_BENCH_FLAGS_H_
