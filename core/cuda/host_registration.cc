#include "core/cuda/host_registration.h"

#include "core/cuda/cuda_status.h"

namespace matrixd::cuda {

HostRegistration::HostRegistration(const void* data, size_t bytes, cudaStream_t stream)
    : stream_(stream) {
  if (data == nullptr || bytes < kMinBytes) return;
  // The driver only reads a range registered for uploads, but takes it as void*.
  void* range = const_cast<void*>(data);
  if (cudaHostRegister(range, bytes, cudaHostRegisterDefault) == cudaSuccess) {
    data_ = range;
  } else {
    // Not an error for us (see the header): clear it so that it does not surface later as the
    // result of an unrelated call.
    static_cast<void>(cudaGetLastError());
  }
}

HostRegistration::~HostRegistration() {
  if (data_ == nullptr) return;
  // Errors cannot be returned from here; a failed wait leaves the range registered rather than
  // unregistering it under a running copy.
  const cudaError_t stream_synchronize = cudaStreamSynchronize(stream_);
  MATRIXD_ASSERT_CUDA_SUCCESS(stream_synchronize);
  if (stream_synchronize != cudaSuccess) return;
  MATRIXD_ASSERT_CUDA_SUCCESS(cudaHostUnregister(data_));
}

std::unique_ptr<PortableHostPin> PortableHostPin::Make(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return nullptr;
  void* range = const_cast<void*>(data);  // registered for copies both ways
  if (cudaHostRegister(range, bytes, cudaHostRegisterPortable) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // see the constructor above
    return nullptr;
  }
  return std::unique_ptr<PortableHostPin>(new PortableHostPin(range));
}

PortableHostPin::~PortableHostPin() { MATRIXD_ASSERT_CUDA_SUCCESS(cudaHostUnregister(data_)); }

}  // namespace matrixd::cuda
