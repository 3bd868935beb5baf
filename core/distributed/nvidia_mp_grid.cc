// The grid's GPU engine (device_grid_engine.h) by cuBLASMp and cuSOLVERMp, built as the plugin
// libmatrixd_mp_grid.so. Each job plans its operation (core/multi_gpu's CublasMpGemm,
// CusolverMpLu), copies this rank's scattered parts to the GPU, runs the library and copies the
// result part back. Before a job allocates, the ranks agree that everyone's parts fit (an NCCL
// all-reduce): a rank that failed alone would leave the others blocked in the library's
// collectives.
#include <cublasmp.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/distributed/device_grid_engine.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/multi_gpu/cublasmp_gemm.h"
#include "core/multi_gpu/cusolvermp_lu.h"
#include "core/multi_gpu/nccl_rank.h"
#include "core/multi_gpu/nccl_status.h"
#include "core/status_macros.h"

namespace matrixd::distributed {
namespace {

static_assert(sizeof(ncclUniqueId) == kCommunicatorIdBytes);

// Room left on the GPU beyond the parts, for the libraries' workspaces.
constexpr double kWorkspaceShare = 0.1;

class NvidiaMpGridEngine final : public DeviceGridEngine {
 public:
  NvidiaMpGridEngine(std::unique_ptr<multi_gpu::NcclRank> rank, std::string device)
      : rank_(std::move(rank)), device_(std::move(device)) {}

  std::string device() const override { return device_; }

  absl::StatusOr<std::vector<double>> Multiply(const BlockCyclicLayout& a,
                                               const BlockCyclicLayout& b,
                                               const std::vector<double>& local_a,
                                               const std::vector<double>& local_b) override {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank_->device()));
    const BlockCyclicLayout c{.rows = a.rows, .cols = b.cols, .block = a.block, .grid = a.grid};
    MATRIXD_RETURN_IF_ERROR(AgreeFits({&a, &b, &c}, "cuBLASMp's product"));
    MATRIXD_ASSIGN_OR_RETURN(
        std::unique_ptr<multi_gpu::CublasMpGemm> gemm,
        multi_gpu::CublasMpGemm::Create(*rank_, a.grid, a.rows, b.cols, a.cols, a.block));
    MATRIXD_RETURN_IF_ERROR(Upload(local_a, gemm->a_part(), gemm->a()));
    MATRIXD_RETURN_IF_ERROR(Upload(local_b, gemm->b_part(), gemm->b()));
    MATRIXD_RETURN_IF_ERROR(gemm->Multiply());
    std::vector<double> local_c(multi_gpu::PartElements(gemm->c_part()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(local_c.data(), gemm->c(),
                                                 local_c.size() * sizeof(double),
                                                 cudaMemcpyDeviceToHost, rank_->stream()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(rank_->stream()));
    return local_c;
  }

  absl::StatusOr<SignedLogDeterminant> Determinant(const BlockCyclicLayout& a,
                                                   const std::vector<double>& local_a) override {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(rank_->device()));
    MATRIXD_RETURN_IF_ERROR(AgreeFits({&a}, "cuSOLVERMp's LU"));
    MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<multi_gpu::CusolverMpLu> lu,
                             multi_gpu::CusolverMpLu::Create(*rank_, a.grid, a.rows, a.block));
    MATRIXD_RETURN_IF_ERROR(Upload(local_a, lu->part(), lu->matrix()));
    MATRIXD_RETURN_IF_ERROR(lu->Factor());
    MATRIXD_ASSIGN_OR_RETURN(multi_gpu::DistributedDeterminant det, lu->Determinant());
    return SignedLogDeterminant{.sign = det.sign, .log_abs = det.log_abs};
  }

 private:
  // OK when this rank's parts of `layouts` (and a share for workspaces) fit its GPU's free memory
  // on every rank; RESOURCE_EXHAUSTED on every rank otherwise. Collective.
  absl::Status AgreeFits(std::initializer_list<const BlockCyclicLayout*> layouts,
                         const char* what) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    double needed = 0.0;
    for (const BlockCyclicLayout* layout : layouts) {
      needed += static_cast<double>(
          multi_gpu::PartElements(multi_gpu::PartOf(*layout, rank_->rank())) * sizeof(double));
    }
    const bool fits = needed + kWorkspaceShare * static_cast<double>(total_bytes) <=
                      static_cast<double>(free_bytes);
    MATRIXD_ASSIGN_OR_RETURN(std::vector<double> short_ranks,
                             rank_->AllReduce({fits ? 0.0 : 1.0}, ncclSum));
    if (short_ranks[0] == 0.0) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " does not fit the GPUs: ", static_cast<int>(short_ranks[0]), " of ",
                     rank_->ranks(), " ranks lack the memory for their parts (this rank needs ",
                     static_cast<uint64_t>(needed), " bytes and has ", free_bytes, " free)"));
  }

  absl::Status Upload(const std::vector<double>& local, const cuda::BlockCyclicPart& part,
                      double* device) {
    const size_t elements = multi_gpu::PartElements(part);
    if (local.size() < elements) {
      return absl::InternalError(absl::StrCat("a scattered part has ", local.size(),
                                              " elements; the GPU part wants ", elements));
    }
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device, local.data(), elements * sizeof(double),
                                                 cudaMemcpyHostToDevice, rank_->stream()));
    return absl::OkStatus();
  }

  std::unique_ptr<multi_gpu::NcclRank> rank_;
  std::string device_;
};

class NvidiaMpGridPlugin final : public DeviceGridPlugin {
 public:
  int DeviceCount() const override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();  // no driver or no device: not an error to keep
      return 0;
    }
    return count;
  }

  absl::StatusOr<CommunicatorId> NewCommunicatorId() const override {
    ncclUniqueId id;
    MATRIXD_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
    CommunicatorId bytes;
    std::memcpy(bytes.data(), &id, sizeof(id));
    return bytes;
  }

  absl::StatusOr<std::unique_ptr<DeviceGridEngine>> Join(const CommunicatorId& id, int ranks,
                                                         int rank, int device) const override {
    ncclUniqueId nccl_id;
    std::memcpy(&nccl_id, id.data(), sizeof(nccl_id));
    MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<multi_gpu::NcclRank> nccl_rank,
                             multi_gpu::NcclRank::Join(nccl_id, ranks, rank, device));
    cudaDeviceProp properties;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&properties, device));
    int nccl_version = 0;
    MATRIXD_NCCL_RETURN_IF_ERROR(ncclGetVersion(&nccl_version));
    int cublasmp_version = 0;
    if (cublasMpGetVersion(&cublasmp_version) != CUBLASMP_STATUS_SUCCESS) cublasmp_version = 0;
    return std::make_unique<NvidiaMpGridEngine>(
        std::move(nccl_rank), absl::StrCat("GPU ", device, " (", properties.name, "; NCCL ",
                                           nccl_version, ", cuBLASMp ", cublasmp_version, ")"));
  }
};

}  // namespace
}  // namespace matrixd::distributed

extern "C" __attribute__((visibility("default"))) const matrixd::distributed::DeviceGridPlugin*
matrixd_device_grid_plugin() {
  static const matrixd::distributed::NvidiaMpGridPlugin plugin;
  return &plugin;
}
