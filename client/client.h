// matrixd::Client: a thin, synchronous C++ client for matrixd.v1.MatrixService. One call per RPC,
// each returning absl::StatusOr with the server's status code and message; a per-call deadline.
#ifndef MATRIXD_CLIENT_CLIENT_H_
#define MATRIXD_CLIENT_CLIENT_H_

#include <complex>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "matrixd/v1/matrixd.grpc.pb.h"

namespace matrixd {

struct ClientOptions {
  absl::Duration deadline = absl::Minutes(5);  // per call
  int max_message_bytes = 1 << 30;             // largest request or response
};

class Client {
 public:
  // Connects lazily to `target` ("host:port"); the first call fails with UNAVAILABLE if nothing
  // listens there.
  explicit Client(const std::string& target, ClientOptions options = {});

  absl::StatusOr<v1::DeterminantResponse> Determinant(const v1::DeterminantRequest& request);
  absl::StatusOr<v1::FactorizeResponse> Factorize(const v1::FactorizeRequest& request);
  absl::StatusOr<v1::MultiplyResponse> Multiply(const v1::MultiplyRequest& request);
  absl::StatusOr<v1::PermanentResponse> Permanent(const v1::PermanentRequest& request);
  // The grpc.health.v1 status of the whole server: true when SERVING.
  absl::StatusOr<bool> Healthy();

  // Asynchronous jobs (matrixd.proto: Submit, Watch, Cancel, GetJob). Submit queues the request
  // and returns the job's id.
  absl::StatusOr<std::string> Submit(const v1::JobRequest& request);
  // Follows the job to its end: calls `on_update` (when set) with every update the server sends,
  // and returns the last one, the finished job with its result or error. The per-call deadline
  // covers the whole watch; a stream that ends before the job does is UNAVAILABLE.
  absl::StatusOr<v1::JobUpdate> Watch(
      const std::string& job_id,
      const std::function<void(const v1::JobUpdate&)>& on_update = nullptr);
  // Asks the job to stop; returns its state just after (a running job may still be RUNNING).
  absl::StatusOr<v1::JobUpdate> Cancel(const std::string& job_id);
  absl::StatusOr<v1::JobUpdate> GetJob(const std::string& job_id);

  void set_deadline(absl::Duration deadline) { options_.deadline = deadline; }

 private:
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::MatrixService::Stub> stub_;
};

// Builds a Matrix message from row-major values (float, double, std::complex<float|double>,
// int64_t or uint32_t pick the dtype). REQUIRES: values.size() == rows * cols.
template <typename T>
v1::Matrix MakeMatrix(int64_t rows, int64_t cols, std::span<const T> values);
template <typename T>
v1::Matrix MakeMatrix(int64_t rows, int64_t cols, const std::vector<T>& values) {
  return MakeMatrix<T>(rows, cols, std::span<const T>(values));
}

// Reads a Matrix message back as row-major values of type T. INVALID_ARGUMENT if the dtype is not
// T's or the data length does not match the shape.
template <typename T>
absl::StatusOr<std::vector<T>> ReadMatrix(const v1::Matrix& matrix);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_CLIENT_H_
