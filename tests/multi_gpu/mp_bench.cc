// matrixd_mp_bench: NVIDIA's distributed libraries on R GPUs of one host, one process per GPU,
// started without MPI (tests/multi_gpu/forked_ranks.h). Operands are made on the GPUs from a seed
// (cuda::LaunchGenerate), so nothing large crosses the host.
//
//   matrixd_mp_bench --op=gemm --n=32768 --gpus=4 [--repeats=3] [--block=1024] [--grid_rows=2]
//     cuBLASMp C = A B; rank 0 prints, per timed run,
//     "cublasmp n=N gpus=R grid=PxQ block=B repeat=I seconds=S tflops=T"
//   matrixd_mp_bench --op=lu --n=32768 --gpus=4
//     cuSOLVERMp getrf and the determinant; per timed run
//     "cusolvermp_lu n=N gpus=R grid=PxQ block=B repeat=I seconds=S tflops=T det_seconds=D
//      sign=s log_abs_det=L" (seconds: the factorisation; tflops counts 2/3 n^3)
//   matrixd_mp_bench --check --op=gemm|lu --n=1000 --gpus=R
//     the distributed result against the same matrices on one GPU (cuBLAS DGEMM; cuSOLVER getrf
//     for the determinant), and for LU also a matrix of known determinant; "check ... PASS|FAIL"
//   matrixd_mp_bench --op=dgemm1|getrf1 --n=32768 --gpus=1
//     the one-GPU baselines on the whole matrices: cublasGemmEx (FP64) printing "cublas n=N gpus=1
//     repeat=I seconds=S tflops=T", cusolverDnXgetrf printing "cusolver_getrf n=N gpus=1 ..."
//   matrixd_mp_bench --probe
//     the NCCL, cuBLASMp and cuBLAS versions that were loaded (no GPU needed); exits 1 when NCCL
//     is older than 2.29.2 or cuBLAS than 13.1, what cuBLASMp 0.10 needs.
//
// NCCL_NVLS_ENABLE=0 and NVSHMEM_DISABLE_NVLS=1 are set unless already in the environment.
// Exit status: 0 success, 1 failure (or FAIL), 2 when the matrices do not fit the GPUs.
#include <cublas_v2.h>
#include <cublasmp.h>
#include <cuda_runtime.h>
#include <cusolverMp.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/multi_gpu/cublasmp_gemm.h"
#include "core/multi_gpu/cusolvermp_lu.h"
#include "core/multi_gpu/nccl_rank.h"
#include "core/multi_gpu/nccl_status.h"
#include "core/status_macros.h"
#include "tests/multi_gpu/forked_ranks.h"
#include "tests/multi_gpu/single_gpu_lu.h"

ABSL_FLAG(std::string, op, "gemm",
          "gemm (cuBLASMp), lu (cuSOLVERMp getrf + determinant), or the one-GPU baselines "
          "dgemm1 (cublasGemmEx) and getrf1 (cusolverDnXgetrf)");
ABSL_FLAG(int64_t, n, 4096, "matrix order");
ABSL_FLAG(int, gpus, 1, "ranks, one per GPU (ordinals 0 .. gpus-1)");
ABSL_FLAG(int, repeats, 3, "timed runs after one untimed warm-up run");
ABSL_FLAG(int64_t, block, 0, "square block of the block-cyclic layout (0: 1024 gemm, 512 lu)");
ABSL_FLAG(int, grid_rows, 0, "process grid rows (0: the most nearly square grid, rows <= cols)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the generated matrices");
ABSL_FLAG(bool, check, false, "compare with one GPU's cuBLAS/cuSOLVER instead of timing");
ABSL_FLAG(bool, probe, false, "print the library versions loaded and exit");

namespace matrixd::multi_gpu {
namespace {

constexpr int kExitDoesNotFit = 2;
// A distributed product differs from cuBLAS's only by summation order.
constexpr double kGemmTolerance = 1e-11;
// log|det| of a random matrix: within the conditioning of LU with partial pivoting.
constexpr double kLogDetTolerance = 1e-7;

struct Options {
  std::string op;
  int64_t n = 0;
  int gpus = 1;
  int repeats = 3;
  int64_t block = 0;
  distributed::GridShape grid;
  uint64_t seed = 1;
  bool check = false;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double LuFlops(int64_t n) {
  return 2.0 / 3.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
}
double GemmFlops(int64_t n) {
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
}

std::string Describe(const Options& o) {
  return absl::StrCat("n=", o.n, " gpus=", o.gpus, " grid=", o.grid.rows, "x", o.grid.cols,
                      " block=", o.block);
}

// A cuBLAS handle for the single-GPU references.
struct CublasHandle {
  cublasHandle_t handle = nullptr;
  ~CublasHandle() {
    if (handle != nullptr) cublasDestroy(handle);
  }
};

cuda::BlockCyclicPart Whole(int64_t rows, int64_t cols) {
  return PartOf({.rows = rows,
                 .cols = cols,
                 .block = std::max<int64_t>(rows, cols),
                 .grid = {.rows = 1, .cols = 1}},
                0);
}

// The whole n x n operands of the one-GPU reference on this rank's GPU, generated from the seeds
// the distributed runs use (A from o.seed, B from o.seed + 1), and C = A B by cuBLAS in float64.
struct WholeProduct {
  int n = 0;
  DeviceArray<double> a, b, c;
  std::unique_ptr<CublasHandle> cublas = std::make_unique<CublasHandle>();

  static absl::StatusOr<WholeProduct> Make(const Options& o, cudaStream_t stream) {
    WholeProduct p;
    p.n = static_cast<int>(o.n);
    const size_t elements = static_cast<size_t>(o.n * o.n);
    MATRIXD_ASSIGN_OR_RETURN(p.a, DeviceArray<double>::Allocate(elements));
    MATRIXD_ASSIGN_OR_RETURN(p.b, DeviceArray<double>::Allocate(elements));
    MATRIXD_ASSIGN_OR_RETURN(p.c, DeviceArray<double>::Allocate(elements));
    const cuda::BlockCyclicPart whole = Whole(o.n, o.n);
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchGenerate(whole, cuda::GeneratedMatrix::kUniform, o.seed, p.a.get(), stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(whole, cuda::GeneratedMatrix::kUniform,
                                                      o.seed + 1, p.b.get(), stream));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasCreate(&p.cublas->handle));
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasSetStream(p.cublas->handle, stream));
    return p;
  }

  // C = A B (row-major reads as column-major transposes: the same product of the transposes).
  absl::Status Multiply() {
    const double one = 1.0;
    const double zero = 0.0;
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasGemmEx(
        cublas->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a.get(), CUDA_R_64F, n, b.get(),
        CUDA_R_64F, n, &zero, c.get(), CUDA_R_64F, n, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT));
    return absl::OkStatus();
  }
};

absl::Status BenchGemm(NcclRank& rank, const Options& o) {
  MATRIXD_ASSIGN_OR_RETURN(auto gemm, CublasMpGemm::Create(rank, o.grid, o.n, o.n, o.n, o.block));
  cudaStream_t stream = rank.stream();
  MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(gemm->a_part(), cuda::GeneratedMatrix::kUniform,
                                                    o.seed, gemm->a(), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(gemm->b_part(), cuda::GeneratedMatrix::kUniform,
                                                    o.seed + 1, gemm->b(), stream));
  const double flops = GemmFlops(o.n);
  for (int repeat = 0; repeat <= o.repeats; ++repeat) {
    MATRIXD_RETURN_IF_ERROR(rank.Barrier());
    const double start = Now();
    MATRIXD_RETURN_IF_ERROR(gemm->Multiply());
    MATRIXD_RETURN_IF_ERROR(rank.Barrier());
    const double seconds = Now() - start;
    if (repeat > 0 && rank.rank() == 0) {  // run 0 warms up
      std::printf("cublasmp %s repeat=%d seconds=%.4f tflops=%.2f\n", Describe(o).c_str(), repeat,
                  seconds, flops / seconds * 1e-12);
      std::fflush(stdout);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGemm(NcclRank& rank, const Options& o) {
  MATRIXD_ASSIGN_OR_RETURN(auto gemm, CublasMpGemm::Create(rank, o.grid, o.n, o.n, o.n, o.block));
  cudaStream_t stream = rank.stream();
  MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(gemm->a_part(), cuda::GeneratedMatrix::kUniform,
                                                    o.seed, gemm->a(), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(gemm->b_part(), cuda::GeneratedMatrix::kUniform,
                                                    o.seed + 1, gemm->b(), stream));
  // Poison C so that an element the product never wrote shows.
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(gemm->c(), 0xff, PartElements(gemm->c_part()) * sizeof(double), stream));
  MATRIXD_RETURN_IF_ERROR(gemm->Multiply());

  // Every rank computes the whole product on its own GPU and compares the part it holds.
  MATRIXD_ASSIGN_OR_RETURN(WholeProduct whole, WholeProduct::Make(o, stream));
  MATRIXD_RETURN_IF_ERROR(whole.Multiply());
  const DeviceArray<double>& c = whole.c;
  MATRIXD_ASSIGN_OR_RETURN(auto result, DeviceArray<double>::Allocate(2));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cuda::LaunchCompareWithWhole(gemm->c_part(), gemm->c(), c.get(), result.get(), stream));
  double local[2] = {0, 0};
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(local, result.get(), sizeof(local), cudaMemcpyDeviceToHost, stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  const double bad = std::isfinite(local[0]) ? 0.0 : 1.0;
  MATRIXD_ASSIGN_OR_RETURN(
      std::vector<double> total,
      rank.AllReduce({std::isfinite(local[0]) ? local[0] : 0.0, local[1], bad}, ncclMax));
  const double relative = total[0] / total[1];
  const bool pass = total[2] == 0.0 && relative <= kGemmTolerance;
  if (rank.rank() == 0) {
    std::printf("check cublasmp %s max_rel_diff=%.3e non_finite_ranks=%s %s\n", Describe(o).c_str(),
                relative, total[2] > 0 ? "yes" : "no", pass ? "PASS" : "FAIL");
  }
  return pass ? absl::OkStatus() : absl::InternalError("cuBLASMp product differs from cuBLAS");
}

// The single-GPU baselines: cusolverDnXgetrf and cublasDgemm on the whole matrices.
absl::Status BenchSingleGpuLu(NcclRank& rank, const Options& o) {
  return SingleGpuLu(o.n, cuda::GeneratedMatrix::kUniform, o.seed, rank.stream(), o.repeats + 1,
                     [&](int run, double seconds, const DistributedDeterminant& det) {
                       if (run == 0) return;  // warm-up
                       std::printf(
                           "cusolver_getrf n=%lld gpus=1 repeat=%d seconds=%.4f tflops=%.2f "
                           "sign=%d log_abs_det=%.10g\n",
                           static_cast<long long>(o.n), run, seconds,
                           LuFlops(o.n) / seconds * 1e-12, det.sign, det.log_abs);
                       std::fflush(stdout);
                     });
}

absl::Status BenchSingleGpuGemm(NcclRank& rank, const Options& o) {
  cudaStream_t stream = rank.stream();
  MATRIXD_ASSIGN_OR_RETURN(WholeProduct whole, WholeProduct::Make(o, stream));
  for (int repeat = 0; repeat <= o.repeats; ++repeat) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    const double start = Now();
    MATRIXD_RETURN_IF_ERROR(whole.Multiply());
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    const double seconds = Now() - start;
    if (repeat > 0) {
      std::printf("cublas n=%lld gpus=1 repeat=%d seconds=%.4f tflops=%.2f\n",
                  static_cast<long long>(o.n), repeat, seconds, GemmFlops(o.n) / seconds * 1e-12);
      std::fflush(stdout);
    }
  }
  return absl::OkStatus();
}

absl::Status BenchLu(NcclRank& rank, const Options& o) {
  MATRIXD_ASSIGN_OR_RETURN(auto lu, CusolverMpLu::Create(rank, o.grid, o.n, o.block));
  cudaStream_t stream = rank.stream();
  const double flops = LuFlops(o.n);
  for (int repeat = 0; repeat <= o.repeats; ++repeat) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchGenerate(lu->part(), cuda::GeneratedMatrix::kUniform,
                                                      o.seed, lu->matrix(), stream));
    MATRIXD_RETURN_IF_ERROR(rank.Barrier());
    const double start = Now();
    MATRIXD_RETURN_IF_ERROR(lu->Factor());
    MATRIXD_RETURN_IF_ERROR(rank.Barrier());
    const double factored = Now();
    MATRIXD_ASSIGN_OR_RETURN(DistributedDeterminant det, lu->Determinant());
    const double seconds = factored - start;
    const double det_seconds = Now() - factored;
    if (repeat > 0 && rank.rank() == 0) {
      std::printf(
          "cusolvermp_lu %s repeat=%d seconds=%.4f tflops=%.2f det_seconds=%.4f sign=%d "
          "log_abs_det=%.10g\n",
          Describe(o).c_str(), repeat, seconds, flops / seconds * 1e-12, det_seconds, det.sign,
          det.log_abs);
      std::fflush(stdout);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLu(NcclRank& rank, const Options& o) {
  MATRIXD_ASSIGN_OR_RETURN(auto lu, CusolverMpLu::Create(rank, o.grid, o.n, o.block));
  cudaStream_t stream = rank.stream();
  bool all_pass = true;
  for (const auto matrix :
       {cuda::GeneratedMatrix::kUniform, cuda::GeneratedMatrix::kReversedLaplacian}) {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchGenerate(lu->part(), matrix, o.seed, lu->matrix(), stream));
    MATRIXD_RETURN_IF_ERROR(lu->Factor());
    MATRIXD_ASSIGN_OR_RETURN(DistributedDeterminant det, lu->Determinant());
    if (rank.rank() != 0) continue;
    DistributedDeterminant expected;
    const bool random = matrix == cuda::GeneratedMatrix::kUniform;
    if (random) {
      MATRIXD_RETURN_IF_ERROR(SingleGpuLu(
          o.n, matrix, o.seed, stream, 1,
          [&expected](int, double, const DistributedDeterminant& det) { expected = det; }));
    } else {
      expected = {.sign = (o.n / 2) % 2 == 0 ? 1 : -1,
                  .log_abs = std::log(static_cast<double>(o.n + 1))};
    }
    const double difference = std::fabs(det.log_abs - expected.log_abs);
    const double tolerance = kLogDetTolerance * std::max(1.0, std::fabs(expected.log_abs));
    const bool pass = det.sign == expected.sign && difference <= tolerance;
    all_pass = all_pass && pass;
    std::printf(
        "check cusolvermp_lu %s matrix=%s sign=%d log_abs_det=%.12g expected_sign=%d "
        "expected_log_abs_det=%.12g (%s) %s\n",
        Describe(o).c_str(), random ? "uniform" : "reversed_laplacian", det.sign, det.log_abs,
        expected.sign, expected.log_abs, random ? "cuSOLVER getrf on one GPU" : "exact",
        pass ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
  return all_pass ? absl::OkStatus()
                  : absl::InternalError("cuSOLVERMp determinant differs from the reference");
}

int RunRank(int rank, const std::string& token, const Options& o) {
  ncclUniqueId id;
  if (token.size() != sizeof(id)) return 1;
  std::memcpy(&id, token.data(), sizeof(id));
  absl::Status status = [&]() -> absl::Status {
    MATRIXD_ASSIGN_OR_RETURN(auto nccl, NcclRank::Join(id, o.gpus, rank, /*device=*/rank));
    if (o.op == "dgemm1") return BenchSingleGpuGemm(*nccl, o);
    if (o.op == "getrf1") return BenchSingleGpuLu(*nccl, o);
    if (o.op == "gemm") return o.check ? CheckGemm(*nccl, o) : BenchGemm(*nccl, o);
    return o.check ? CheckLu(*nccl, o) : BenchLu(*nccl, o);
  }();
  if (status.ok()) return 0;
  std::fprintf(stderr, "rank %d: %s\n", rank, status.ToString().c_str());
  return absl::IsResourceExhausted(status) ? kExitDoesNotFit : 1;
}

int Probe() {
  int nccl = 0;
  int cublasmp = 0;
  int cublas_major = 0;
  int cublas_minor = 0;
  int cublas_patch = 0;
  ncclGetVersion(&nccl);
  cublasMpGetVersion(&cublasmp);
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  // What the cuBLASMp 0.10 wheel asks for: nvidia-nccl-cu13 >= 2.29.2, nvidia-cublas >= 13.1.
  const bool nccl_ok = nccl >= 22902;
  const bool cublas_ok = cublas_major * 100 + cublas_minor >= 1301;
  std::printf("probe nccl=%d cublasmp=%d cusolvermp_header=%d cublas=%d.%d.%d %s%s%s\n", nccl,
              cublasmp, CUSOLVERMP_VERSION, cublas_major, cublas_minor, cublas_patch,
              nccl_ok && cublas_ok ? "ok" : "", nccl_ok ? "" : " nccl-too-old(need>=2.29.2)",
              cublas_ok ? "" : " cublas-too-old(need>=13.1)");
  return nccl_ok && cublas_ok ? 0 : 1;
}

}  // namespace
}  // namespace matrixd::multi_gpu

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_probe)) return matrixd::multi_gpu::Probe();
  matrixd::multi_gpu::Options o;
  o.op = absl::GetFlag(FLAGS_op);
  o.n = absl::GetFlag(FLAGS_n);
  o.gpus = absl::GetFlag(FLAGS_gpus);
  o.repeats = absl::GetFlag(FLAGS_repeats);
  o.block = absl::GetFlag(FLAGS_block);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.check = absl::GetFlag(FLAGS_check);
  if (o.op != "gemm" && o.op != "lu" && o.op != "dgemm1" && o.op != "getrf1") {
    std::fprintf(stderr, "--op must be gemm, lu, dgemm1 or getrf1, not %s\n", o.op.c_str());
    return 1;
  }
  if ((o.op == "dgemm1" || o.op == "getrf1") && (o.gpus != 1 || o.check)) {
    std::fprintf(stderr, "--op=%s is the one-GPU baseline: --gpus=1, no --check\n", o.op.c_str());
    return 1;
  }
  if (o.n < 1 || o.gpus < 1 || o.repeats < 0) {
    std::fprintf(stderr, "--n and --gpus must be positive and --repeats not negative\n");
    return 1;
  }
  if (o.block == 0) o.block = o.op == "gemm" ? 1024 : 512;
  const int grid_rows = absl::GetFlag(FLAGS_grid_rows);
  if (grid_rows > 0) {
    if (o.gpus % grid_rows != 0) {
      std::fprintf(stderr, "--grid_rows=%d does not divide --gpus=%d\n", grid_rows, o.gpus);
      return 1;
    }
    o.grid = {.rows = grid_rows, .cols = o.gpus / grid_rows};
  } else {
    o.grid = matrixd::distributed::ChooseGridShape(o.gpus);
  }
  // NVLink multicast (NVLS) off unless the caller chose otherwise: on shared hosts a program using
  // it can take the GPUs out of service (the lent machines require it off).
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  setenv("NVSHMEM_DISABLE_NVLS", "1", /*overwrite=*/0);
  // No CUDA call before the fork: each child takes its own GPU.
  return matrixd::testing::RunForkedRanks(
      o.gpus,
      []() -> absl::StatusOr<std::string> {
        ncclUniqueId id;
        MATRIXD_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
        return std::string(reinterpret_cast<const char*>(&id), sizeof(id));
      },
      [&o](int rank, const std::string& token) {
        return matrixd::multi_gpu::RunRank(rank, token, o);
      });
}
