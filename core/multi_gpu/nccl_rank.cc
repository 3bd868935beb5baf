#include "core/multi_gpu/nccl_rank.h"

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/nccl_status.h"
#include "core/status_macros.h"

namespace matrixd::multi_gpu {
namespace {

constexpr size_t kScratchDoubles = 64;

}  // namespace

template <typename T>
absl::StatusOr<DeviceArray<T>> DeviceArray<T>::Allocate(size_t count) {
  DeviceArray array;
  if (count == 0) return array;
  const cudaError_t code = cudaMalloc(&array.data_, count * sizeof(T));
  if (code == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it so that later launch checks do not see it
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaMalloc of ", count * sizeof(T), " bytes: out of device memory"));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(code);
  array.count_ = count;
  return array;
}

template class DeviceArray<double>;
template class DeviceArray<int64_t>;
template class DeviceArray<int>;
template class DeviceArray<unsigned char>;

absl::StatusOr<std::unique_ptr<NcclRank>> NcclRank::Join(const ncclUniqueId& id, int ranks,
                                                         int rank, int device) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    return absl::InvalidArgumentError(absl::StrCat("NcclRank: rank ", rank, " of ", ranks));
  }
  std::unique_ptr<NcclRank> self(new NcclRank());
  self->rank_ = rank;
  self->ranks_ = ranks;
  self->device_ = device;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&self->stream_, cudaStreamNonBlocking));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMalloc(&self->scratch_, kScratchDoubles * sizeof(double)));
  MATRIXD_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&self->comm_, ranks, id, rank));
  return self;
}

NcclRank::~NcclRank() {
  if (comm_ != nullptr) {
    // Finalize flushes this rank's outstanding collectives; after a failed one, destroying is all
    // that is left to do.
    if (cudaStreamSynchronize(stream_) == cudaSuccess) ncclCommFinalize(comm_);
    ncclCommDestroy(comm_);
  }
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status NcclRank::Barrier() {
  MATRIXD_ASSIGN_OR_RETURN(std::vector<double> unused, AllReduce({1.0}, ncclSum));
  static_cast<void>(unused);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> NcclRank::AllReduce(absl::Span<const double> values,
                                                        ncclRedOp_t op) {
  if (values.size() > kScratchDoubles) {
    return absl::InvalidArgumentError(
        absl::StrCat("NcclRank::AllReduce takes at most ", kScratchDoubles, " values"));
  }
  std::vector<double> result(values.begin(), values.end());
  const size_t bytes = values.size() * sizeof(double);
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(scratch_, values.data(), bytes, cudaMemcpyHostToDevice, stream_));
  MATRIXD_NCCL_RETURN_IF_ERROR(
      ncclAllReduce(scratch_, scratch_, values.size(), ncclDouble, op, comm_, stream_));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(result.data(), scratch_, bytes, cudaMemcpyDeviceToHost, stream_));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return result;
}

}  // namespace matrixd::multi_gpu
