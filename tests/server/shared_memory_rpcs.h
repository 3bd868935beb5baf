// The shared-memory RPCs by stub, for the server tests, so that each status comes back exactly
// as the server sent it.
#ifndef MATRIXD_TESTS_SERVER_SHARED_MEMORY_RPCS_H_
#define MATRIXD_TESTS_SERVER_SHARED_MEMORY_RPCS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "matrixd/v1/matrixd.grpc.pb.h"

namespace matrixd::server::testing {

class SharedMemoryRpcs {
 public:
  explicit SharedMemoryRpcs(const std::string& address)
      : stub_(v1::MatrixService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

  grpc::Status RegisterCuda(const std::string& name, const std::string& handle, int device_id,
                            uint64_t bytes) {
    grpc::ClientContext context;
    v1::RegisterCudaSharedMemoryRequest request;
    request.set_name(name);
    request.set_raw_handle(handle);
    request.set_device_id(device_id);
    request.set_byte_size(bytes);
    v1::RegisterCudaSharedMemoryResponse response;
    return stub_->RegisterCudaSharedMemory(&context, request, &response);
  }
  grpc::Status UnregisterCuda(const std::string& name) {
    grpc::ClientContext context;
    v1::UnregisterCudaSharedMemoryRequest request;
    request.set_name(name);
    v1::UnregisterCudaSharedMemoryResponse response;
    return stub_->UnregisterCudaSharedMemory(&context, request, &response);
  }
  grpc::Status RegisterSystem(const std::string& name, const std::string& key, uint64_t bytes,
                              uint64_t offset = 0) {
    grpc::ClientContext context;
    v1::RegisterSystemSharedMemoryRequest request;
    request.set_name(name);
    request.set_key(key);
    request.set_offset(offset);
    request.set_byte_size(bytes);
    v1::RegisterSystemSharedMemoryResponse response;
    return stub_->RegisterSystemSharedMemory(&context, request, &response);
  }
  grpc::Status UnregisterSystem(const std::string& name) {
    grpc::ClientContext context;
    v1::UnregisterSystemSharedMemoryRequest request;
    request.set_name(name);
    v1::UnregisterSystemSharedMemoryResponse response;
    return stub_->UnregisterSystemSharedMemory(&context, request, &response);
  }
  v1::ListSharedMemoryResponse List() {
    grpc::ClientContext context;
    v1::ListSharedMemoryResponse response;
    EXPECT_TRUE(stub_->ListSharedMemory(&context, {}, &response).ok());
    return response;
  }

 private:
  std::unique_ptr<v1::MatrixService::Stub> stub_;
};

}  // namespace matrixd::server::testing

#endif  // MATRIXD_TESTS_SERVER_SHARED_MEMORY_RPCS_H_
