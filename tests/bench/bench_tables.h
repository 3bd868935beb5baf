// The tables of matrixd_bench, one function each (or one per group that shares its inputs). Each
// prints a header saying what is compared, then one line per size; failures print in the table
// and never stop the run.
#ifndef MATRIXD_TESTS_BENCH_BENCH_TABLES_H_
#define MATRIXD_TESTS_BENCH_BENCH_TABLES_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "tests/bench/bench_flags.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/device_context.h"
#endif

namespace matrixd::bench {

// LU, Cholesky and QR of one n x n float64 matrix through any backend.
void BenchFactorize(Backend& backend, int n, int repeats);

// det mod p of an INT64 matrix: our GPU backend (when `gpu` is not null) and our CPU backend
// (when `cpu` is not null) next to NTL on one core (when the build has NTL and flags.ntl).
void BenchModularDeterminant(const Flags& flags, Backend* gpu, Backend* cpu);

// The exact determinant of INT64 matrices with flags.exact_bits-bit entries at each of
// flags.exact_sizes: our GPU backend (when `gpu` is not null) next to FLINT on one core (when the
// build has FLINT and flags.flint), values compared.
void BenchExactDeterminant(const Flags& flags, Backend* gpu);

// What batching small requests could gain: flags.small_count determinants of small orders, each
// its own Backend call from 1..T concurrent callers (as separate requests reach the backend),
// against one batched LU call holding them all. `make(callers)` makes the backend for T callers
// (for CUDA: T streams). The gap is the most that coalescing requests in the server can win.
void BenchSmallRequests(const std::string& label,
                        const std::function<std::unique_ptr<Backend>(int callers)>& make,
                        const Flags& flags);

// The relative error of both precisions of `backend`'s (called `label`) real permanents against
// exact integer permanents: median and worst over flags.accuracy_samples matrices per order in
// flags.accuracy_sizes and sign.
void BenchPermanentAccuracy(Backend& backend, const std::string& label, const Flags& flags);
// The dense and sparse walks (and AUTO's choice) of `backend`'s (called `label`) real Glynn
// permanents on a flags.perm_density-dense matrix at perm_n - 4, perm_n - 2 and perm_n.
void BenchPermanentWalks(Backend& backend, const std::string& label, const Flags& flags);
// Freivalds' check (Multiply with verify) next to the product at each of flags.verify_sizes,
// float64 and float32, on `backend` (named `label`), for each setting beside the same product
// unverified, all alternating run by run: `warm_up` untimed rounds, then the medians of `runs`.
// One way of running the check that the verify table compares (e.g. the CUDA backend's tunings,
// core/cuda/freivalds.h): `apply` sets it before each of its runs; restore_defaults after each.
struct VerifySetting {
  std::string name;
  std::function<void()> apply;
};
void BenchVerify(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                 int runs, const std::vector<VerifySetting>& settings,
                 const std::function<void()>& restore_defaults);

// Condition estimates (Factorize with estimate_condition; on the GPU also the LU determinant)
// next to the factorization at each of flags.condition_sizes, float64, on `backend` (named
// `label`): `warm_up` untimed runs, then the medians of `runs`.
void BenchCondition(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                    int runs);
// An LU solve refined with float32, TF32 and float64 factors next to the plain one, and each
// operation with and without deterministic, at each of flags.refine_sizes on `backend` (named
// `label`): `warm_up` untimed runs, then the medians of `runs`.
void BenchRefine(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                 int runs);
void BenchDeterministic(const std::string& label, Backend& backend, const Flags& flags, int warm_up,
                        int runs);

// The CPU backend's tables: determinant and GEMM, factorizations, batched LU.
void BenchCpu(Backend& cpu, const Flags& flags);

#ifdef MATRIXD_HAVE_CUDA
// `gpu` is the CUDA backend; `context` a context of its own on the backend's device, for the
// library calls and kernels timed alone on resident data.

// Copy kernel, cudaMemcpy and host transfers.
void BenchBandwidth(cuda::DeviceContext& context, int repeats);
// Determinant by LU next to cuSOLVER getrf alone; GEMM next to cuBLAS alone.
void BenchDeterminant(Backend& gpu, cuda::DeviceContext& context, const Flags& flags);
void BenchGemm(Backend& gpu, cuda::DeviceContext& context, const Flags& flags);
// Batched LU of small matrices next to cuBLAS getrfBatched alone and the PCIe round trip.
void BenchBatchedLu(Backend& gpu, cuda::DeviceContext& context, const Flags& flags);
// One condensation step kernel against the copy kernel; whole condensation determinants, fused
// and one kernel per step, next to LU.
void BenchCondensation(Backend& gpu, cuda::DeviceContext& context, const Flags& flags);
// Block-sparse products next to dense cuBLAS dgemm on the same matrices.
void BenchBlockSparse(Backend& gpu, cuda::DeviceContext& context, const Flags& flags);
// Real Glynn permanents next to the FP64 floor: both precisions, dense and sparse walks.
void BenchPermanent(Backend& gpu, cuda::DeviceContext& context, const Flags& flags);
// Where the GPU condition estimate's time goes: getrs with 1 and 2 right-hand sides, the
// estimator's own LU solve, its triangular solves next to cuBLAS dtrsv, and the device block
// estimator on its solves and on getrs, at each of flags.condition_sizes (part of `condition`).
void BenchConditionSolves(cuda::DeviceContext& context, const Flags& flags);
// What ||A||_1 costs as a kernel of its own against taken in the LU transpose's and the
// determinant's row scaling's passes, at each of flags.condition_sizes (part of `condition`).
void BenchNormPass(cuda::DeviceContext& context, const Flags& flags);
// Freivalds' thin product W = M X, staged and unstaged, next to the copy kernel, at each of
// flags.verify_sizes (part of `verify`).
void BenchThinProducts(cuda::DeviceContext& context, const Flags& flags);
#endif

}  // namespace matrixd::bench

#endif  // MATRIXD_TESTS_BENCH_BENCH_TABLES_H_
