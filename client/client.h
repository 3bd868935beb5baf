// matrixd::Client: a thin, synchronous C++ client for matrixd.v1.MatrixService. One call per RPC,
// each returning absl::StatusOr with the server's status code and message; a per-call deadline.
// Resident matrices: Upload (chunked, on several connections at once for large matrices) returns
// a RemoteMatrix that any operation takes as an operand; results can be kept on the server too.
// Same-host clients can place operands and results in shared memory (SharedMemoryRegion).
#ifndef MATRIXD_CLIENT_CLIENT_H_
#define MATRIXD_CLIENT_CLIENT_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client_credentials.h"
#include "client/operand.h"
#include "client/remote_matrix.h"
#include "client/shared_memory_region.h"
#include "matrixd/v1/matrixd.grpc.pb.h"

namespace matrixd {

// A computing call's method path ("/matrixd.v1.MatrixService/Determinant", ...) and its request,
// serialized (Client::SerializeJobRequest).
struct SerializedJobRequest {
  std::string method;
  grpc::ByteBuffer body;
};

struct ClientOptions {
  // Per call. Uploads and downloads get this plus the time their bytes take at
  // kAssumedTransferBytesPerSecond.
  absl::Duration deadline = absl::Minutes(5);
  // Largest request or response; a larger inline request fails before it is sent
  // (RESOURCE_EXHAUSTED, pointing to Upload). Negative: no limit.
  int max_message_bytes = 1 << 30;
  // TLS toward the server (client/client_credentials.h); none: plaintext.
  std::optional<ClientTls> tls = std::nullopt;
  // Sent as "authorization: Bearer TOKEN" on every call; empty: none.
  std::string token = {};
  // 0: the channel shares its TCP connection with every other channel of this process that has
  // the same options (gRPC's default). Clients with different non-zero values never share one:
  // `matrixctl load --connections` uses it to spread its workers over several connections.
  int connection = 0;
};

// The slowest rate a transfer's deadline allows for: 25 MB/s, below the slowest inline transfers
// measured (40-65 MB/s on a loaded 2-core VM), so that only a stalled transfer runs out of time.
inline constexpr double kAssumedTransferBytesPerSecond = 25e6;

// A matrix in host memory, packed row-major, little-endian: what Upload sends. Not copied; the
// bytes must stay alive during the call.
struct HostMatrixView {
  int64_t rows = 0;
  int64_t cols = 0;
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::span<const std::byte> bytes = {};
};

// Told the bytes moved so far and the total of a transfer, after each chunk. Called from the
// transferring threads (one at a time).
using TransferProgress = std::function<void(uint64_t done, uint64_t total)>;

struct UploadOptions {
  uint64_t chunk_bytes = uint64_t{4} << 20;  // capped to fit in max_message_bytes
  // Matrices of at least parallel_min_bytes go as this many parts at once, each on a connection
  // of its own (one HTTP/2 connection carries about 1.5 GB/s at most). 1: always one stream.
  int parallel_streams = 4;
  uint64_t parallel_min_bytes = uint64_t{256} << 20;
  std::string label = {};  // shown by ListMatrices
  // RESIDENT_LAYOUT_DISTRIBUTED: over the server's GPUs (docs/distributed.md).
  v1::ResidentLayout layout = v1::RESIDENT_LAYOUT_SINGLE_DEVICE;
  TransferProgress progress = {};
};

struct DownloadOptions {
  // Rows [begin, end) only; nullopt: the whole matrix.
  std::optional<std::pair<int64_t, int64_t>> rows = std::nullopt;
  uint64_t chunk_bytes = 0;  // 0: the server's default (4 MiB)
  TransferProgress progress = {};
};

class Client {
 public:
  // Connects lazily to `target` ("host:port"); the first call fails with UNAVAILABLE if nothing
  // listens there.
  explicit Client(const std::string& target, ClientOptions options = {});
  // Not copied or moved: the RemoteMatrix objects it hands out point to it.
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  absl::StatusOr<v1::DeterminantResponse> Determinant(const v1::DeterminantRequest& request);
  absl::StatusOr<v1::FactorizeResponse> Factorize(const v1::FactorizeRequest& request);
  absl::StatusOr<v1::MultiplyResponse> Multiply(const v1::MultiplyRequest& request);
  absl::StatusOr<v1::PermanentResponse> Permanent(const v1::PermanentRequest& request);
  // op(A) X = B with a factorization that Factorize kept (matrixd.proto: Solve).
  absl::StatusOr<v1::SolveResponse> Solve(const v1::SolveRequest& request);
  // The same operations on operands that are inline, resident (a RemoteMatrix) or in shared
  // memory (a SharedMatrixView): `request` as above with its operand(s) set from them (method,
  // kind, rhs, result_options... are sent as given; WriteResultInto sends results into shared
  // memory).
  absl::StatusOr<v1::DeterminantResponse> Determinant(Operand a,
                                                      v1::DeterminantRequest request = {});
  absl::StatusOr<v1::FactorizeResponse> Factorize(Operand a, v1::FactorizeRequest request = {});
  absl::StatusOr<v1::MultiplyResponse> Multiply(Operand a, Operand b,
                                                v1::MultiplyRequest request = {});
  absl::StatusOr<v1::PermanentResponse> Permanent(Operand a, v1::PermanentRequest request = {});
  // Solve with `factorization` (a Factorize response's kept["factorization"], adopted) for a
  // right-hand side B inline, resident or in shared memory.
  absl::StatusOr<v1::SolveResponse> Solve(const RemoteMatrix& factorization, Operand rhs,
                                          v1::SolveRequest request = {});

  // Resident matrices (matrixd.proto: Upload, CreateMatrix, Download, ListMatrices, Release).
  // Streams the matrix to the server in chunks with its CRC32C and keeps it there; the
  // RemoteMatrix must not outlive this client. The server's error (INVALID_ARGUMENT for a bad
  // shape, RESOURCE_EXHAUSTED when it has no room) is returned; a failed parallel upload releases
  // what it created.
  absl::StatusOr<RemoteMatrix> Upload(const HostMatrixView& matrix,
                                      const UploadOptions& options = {});
  absl::StatusOr<RemoteMatrix> Upload(const v1::Matrix& matrix, const UploadOptions& options = {});
  // Streams a resident matrix (or some of its rows) back. DATA_LOSS when the bytes received do not
  // match the server's CRC32C, or a chunk is out of place; NOT_FOUND for an unknown handle.
  absl::StatusOr<v1::Matrix> Download(const std::string& handle,
                                      const DownloadOptions& options = {});
  absl::StatusOr<v1::ListMatricesResponse> ListMatrices();
  // A matrix made on the server (random, identity, Hilbert; matrixd.proto's Generate), left there
  // unowned: release it with Release. The server's error as is.
  absl::StatusOr<v1::ResidentMatrix> Generate(const v1::GenerateRequest& request);
  // Frees the matrix now; returns the bytes freed. NOT_FOUND for an unknown handle.
  absl::StatusOr<uint64_t> Release(const std::string& handle);
  // Takes ownership of the matrices a response kept (its `kept`): each is released when its
  // RemoteMatrix is destroyed, unless detached. Where two names share a handle (Factorize's
  // "factorization" and "lu"), the first in name order owns it and the other does not.
  std::map<std::string, RemoteMatrix> Adopt(
      const google::protobuf::Map<std::string, v1::ResidentMatrix>& kept);

  // Shared memory (matrixd.proto: RegisterSystemSharedMemory...). SharedMemoryRegion makes,
  // registers and removes regions; these are the RPCs it uses. Registers bytes [offset, offset +
  // byte_size) of the POSIX shared-memory object `key` ("/name") as `name`; the server's error as
  // is (ALREADY_EXISTS, NOT_FOUND, INVALID_ARGUMENT).
  absl::StatusOr<v1::SharedMemoryRegion> RegisterSharedMemory(const std::string& name,
                                                              const std::string& key,
                                                              uint64_t offset, uint64_t byte_size);
  // Unregisters `name` (every region for ""); returns how many were. NOT_FOUND for an unknown name.
  absl::StatusOr<int> UnregisterSharedMemory(const std::string& name);
  // Registers the device allocation of a CUDA IPC handle (the 64 bytes of the cudaIpcMemHandle_t
  // from cudaIpcGetMemHandle, in this process) as `name`: its first byte_size bytes, on CUDA device
  // `device_id` as this process numbers it. References into it are then used on the device in
  // place, operands and results. Keep the allocation alive and write it only between calls until
  // it is unregistered. The server's error as is (ALREADY_EXISTS, INVALID_ARGUMENT naming the
  // field, UNIMPLEMENTED on a server without CUDA).
  absl::StatusOr<v1::SharedMemoryRegion> RegisterCudaSharedMemory(
      const std::string& name, std::span<const std::byte> raw_handle, int device_id,
      uint64_t byte_size);
  // Unregisters the CUDA region `name` (every CUDA region for ""); returns how many were.
  // NOT_FOUND for an unknown name.
  absl::StatusOr<int> UnregisterCudaSharedMemory(const std::string& name);
  // The registered regions of both kinds, in name order.
  absl::StatusOr<v1::ListSharedMemoryResponse> ListSharedMemory();

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

  // Starts `request` (a JobRequest's determinant, factorize, multiply, permanent or solve) through
  // gRPC's callback API and returns at once; `done` runs once, on a gRPC thread (or inline when
  // the call cannot start), with the call's status; the response is dropped. `request` and this
  // client must outlive the call; the call holds nothing of the client once `done` runs, so the
  // client may be destroyed as soon as `done` has returned (from a thread of the caller's, not
  // from `done`). INVALID_ARGUMENT for an empty JobRequest; the inline-size check of the
  // blocking calls.
  void StartJobRequest(const v1::JobRequest& request, absl::AnyInvocable<void(absl::Status)> done);

  // The computing call of `request` serialized once, to be sent many times on a completion
  // queue of the caller's (client/queued_call.h). INVALID_ARGUMENT for an empty JobRequest; the
  // inline-size check of the blocking calls.
  absl::StatusOr<SerializedJobRequest> SerializeJobRequest(const v1::JobRequest& request) const;
  // Gives `context` what every call of this client carries: the per-call deadline and the token.
  void PrepareCallContext(grpc::ClientContext& context) const;

  void set_deadline(absl::Duration deadline) { options_.deadline = deadline; }
  // The channel every call of this client goes over (connectivity state, stubs of other services).
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  // A unary call with the inline-size check before it.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(grpc::Status (v1::MatrixService::Stub::*method)(
                                    grpc::ClientContext*, const Request&, Response*),
                                const Request& request);
  // A channel to the same target on a connection of its own: parallel upload part `part`.
  std::shared_ptr<grpc::Channel> PartChannel(int part) const;
  // One Upload stream over `range` of `matrix` on `stub`; `sent` counts its bytes for progress.
  absl::StatusOr<v1::ResidentMatrix> UploadStream(v1::MatrixService::Stub& stub,
                                                  const HostMatrixView& matrix,
                                                  const std::string& handle, uint64_t begin,
                                                  uint64_t end, const UploadOptions& options,
                                                  const std::function<void(uint64_t)>& sent);
  absl::StatusOr<RemoteMatrix> ParallelUpload(const HostMatrixView& matrix,
                                              const UploadOptions& options);
  absl::Duration TransferDeadline(uint64_t bytes) const;

  ClientOptions options_;
  std::string target_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::MatrixService::Stub> stub_;
};

// A gRPC status as an absl::Status: the same code (both follow google.rpc.Code) and message.
absl::Status ToAbslStatus(const grpc::Status& status);

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
