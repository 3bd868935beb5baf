// Freivalds' check (core/freivalds.h) of a product on one CUDA device, on the device buffers the
// product uses (before C is downloaded). By default the thin products and the Frobenius norms are
// our kernels (thin_product.h: one pass over each operand) on the context's side lane while the
// operands are uploaded: the part that reads only B (Y = op(B) X and ||B||) while A is sent, and
// A's part (Z = A Y and ||A||) piece by piece as A's rows land, so that what the check adds to the
// product's stream is reading C (and A's last, small piece) once after it. Full precision whatever
// math mode the product ran with.
#ifndef MATRIXD_CORE_CUDA_FREIVALDS_H_
#define MATRIXD_CORE_CUDA_FREIVALDS_H_

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/device_buffer.h"
#include "core/cuda/device_context.h"
#include "core/freivalds.h"
#include "core/matrix.h"
#include "core/operations.h"

namespace matrixd::cuda {

// Process-wide tuning, for the benchmarks to compare (the defaults are what products use). Read
// when a check begins.
struct FreivaldsTuning {
  // Thin products and norms by thin_product.h's kernels; false: cuBLAS gemm and nrm2 (A and B
  // read twice, and nothing beside the upload).
  bool own_kernels = true;
  // B's part on the context's side lane from Begin on (beside A's upload); false: all of the check
  // after the product, on the context's stream.
  bool beside_upload = true;
  // With beside_upload and A not transposed: A uploaded in row pieces of about this many bytes,
  // Z's rows of each piece on the side lane once it has landed; 0: A's part after the product.
  int64_t a_piece_bytes = int64_t{64} << 20;
  // Own kernels: M X with M's rows staged in shared memory by bulk copies where they are 16-byte
  // aligned (ThinProductArgs::staged; the same bits either way).
  bool staged_rows = true;
  // The last piece of A is halved until it holds at most this many bytes (or one row): its part
  // runs after the product, each larger piece's during the next piece's upload. Not much smaller:
  // the host queues the product while the last piece is on the wire, and where that took less
  // time than the host's queueing the device waited inside the product (1 MiB pieces: ~80 us at
  // n = 4096 and 8192 on H100 hosts; 4 MiB on a slower host, 2026-11-28).
  int64_t last_piece_bytes = int64_t{16} << 20;
};
void SetFreivaldsTuning(const FreivaldsTuning& tuning);
FreivaldsTuning GetFreivaldsTuning();

// Rows [first, first + count) of a matrix.
struct RowRange {
  int64_t first = 0;
  int64_t count = 0;
};

// One check split around the product that fills c: Begin once B is on the device (its upload
// queued on the context's stream), ideally before A's upload, so that B's part runs while A is
// sent; then, where a_pieces() is not empty, A uploaded piece by piece with APieceLanded after
// each and JoinBeforeProduct after the last; Finish after the product. A's and C's buffers only
// have to exist at Begin. Owns the check's device buffers; destroying it before Finish (an error
// path) leaves the context's stream waiting for the side lane's work, so that those buffers and
// the operands are freed after it.
class ProductCheckInFlight {
 public:
  // Checks that c holds op(A) op(B) (op: the plain transpose when asked for) to within the
  // rounding of a floating-point product. REQUIRES: a, b and c are (or, for a with
  // a_upload_follows, will be) in `context`'s device's memory (their `data` device addresses,
  // `space` whatever), row-major, and the caller has made the context's device current.
  // INVALID_ARGUMENT, naming the operand, for dtypes or shapes that do not make c = op(a) op(b);
  // RESOURCE_EXHAUSTED when the vectors (O((m + k + n) s) elements) do not fit.
  // `a_upload_follows`: the caller uploads A after Begin (a_pieces() says how), and B's part is
  // queued on the side lane (behind everything already queued on the context's stream) when the
  // tuning says so; false: A is on the device already, and the whole check runs in Finish.
  static absl::StatusOr<std::unique_ptr<ProductCheckInFlight>> Begin(
      const MatrixView& a, const MatrixView& b, const MatrixView& c, bool transpose_a,
      bool transpose_b, DeviceContext& context, const FreivaldsOptions& options,
      bool a_upload_follows);
  ~ProductCheckInFlight();
  ProductCheckInFlight(const ProductCheckInFlight&) = delete;
  ProductCheckInFlight& operator=(const ProductCheckInFlight&) = delete;

  // A's rows in the order the caller should upload them, when A's part follows its upload (A's
  // upload follows Begin, own kernels beside the upload, A not transposed, a_piece_bytes > 0);
  // empty: A in one piece, its part after the product. Each piece's part runs during the next
  // piece's upload; the last piece is small (halved down to a_piece_bytes / 16) and its part runs
  // after the product, on the context's stream, so that the product's wait for the side lane is
  // short.
  const std::vector<RowRange>& a_pieces() const;
  // Call after queuing the upload of a_pieces()[piece] on the context's stream, pieces in order:
  // queues Z's rows of that piece (and its squares) on the side lane, behind the upload (the last
  // piece: in Finish).
  absl::Status APieceLanded(size_t piece);
  // After the last piece's upload, before the product: the context's stream waits for the side
  // lane, so that the product has the device to itself; the wait is timed (wait_seconds).
  absl::Status JoinBeforeProduct();

  // Queues the rest on the context's stream (B's part unless Begin queued it beside, W = C X,
  // then Z = op(A) Y and ||A||, or only A's last piece's part), waits for all of it and returns
  // the verdict. Call once, after every piece of a_pieces() has landed (FAILED_PRECONDITION
  // otherwise).
  absl::StatusOr<ProductCheck> Finish();

  // Seconds B's part took on the side lane, once Finish has returned; nullopt when it ran on the
  // context's stream.
  std::optional<double> beside_seconds() const { return beside_seconds_; }
  // Seconds the context's stream waited in JoinBeforeProduct, once Finish has returned; nullopt
  // without the join.
  std::optional<double> wait_seconds() const { return wait_seconds_; }
  // Whether A's part followed its upload (all pieces landed): after the product only its last
  // piece (last_a_piece_bytes) is read.
  bool a_beside() const;
  uint64_t last_a_piece_bytes() const;

 private:
  struct Operands;  // what Begin validated and allocated
  ProductCheckInFlight(DeviceContext& context, std::unique_ptr<Operands> operands);
  absl::Status QueueB(cudaStream_t stream, cublasHandle_t cublas);
  absl::Status QueueA(cudaStream_t stream, cublasHandle_t cublas);
  // out = op(M) in (out_rows x s, M's inner dimension `inner`) with M's squares, by our kernels on
  // `stream` or through `cublas` as the tuning says.
  absl::Status QueueOperandProduct(const MatrixView& m, bool transpose, int64_t out_rows,
                                   int64_t inner, const DeviceBuffer& in, DeviceBuffer& out,
                                   double* squares, const DeviceBuffer& scratch,
                                   cudaStream_t stream, cublasHandle_t cublas);
  absl::Status QueueBeside();
  // Z's rows of a_pieces()[piece] = those rows of A times Y, with their squares, on `stream`.
  absl::Status QueueAPiece(size_t piece, cudaStream_t stream);
  // Queues `work` on the side lane once what the context's stream holds now is done, then
  // records beside_done_ after it; `timer` (optional) around the work.
  absl::Status QueueOnSideLane(
      const std::function<absl::Status(cudaStream_t, cublasHandle_t)>& work, EventTimer* timer);
  // The verdict once everything is queued: own kernels (one small download of the difference
  // norms and partial squares), or cuBLAS (Z and W downloaded, norms by nrm2).
  absl::StatusOr<ProductCheck> VerdictFromSummary();
  absl::StatusOr<ProductCheck> VerdictFromVectors();

  DeviceContext& context_;
  std::unique_ptr<Operands> operands_;
  bool b_queued_ = false;                 // B's part is queued (beside or on the stream)
  std::optional<CudaEvent> beside_done_;  // recorded on the side lane after its part
  bool joined_ = false;                   // the context's stream waits for beside_done_
  std::optional<EventTimer> beside_timer_;
  std::optional<double> beside_seconds_;
  size_t pieces_landed_ = 0;
  std::optional<EventTimer> wait_timer_;
  std::optional<double> wait_seconds_;
};

// The device memory ProductCheckInFlight::Begin allocates for the check of c = op(a) op(b)
// (c m x n) with `vectors` sign vectors under the current tuning.
uint64_t ProductCheckDeviceBytes(const MatrixView& a, const MatrixView& b, bool transpose_a,
                                 bool transpose_b, int vectors, bool a_upload_follows);

// A product's verify step around the product: BeginVerifyProduct (once B is on the device, before
// A's upload where the caller can: `a_upload_follows` as in ProductCheckInFlight::Begin) starts
// the check of c = op(a) op(b) as `options` (a Multiply's)
// describes it, with FreivaldsSeed(options.deterministic); FinishVerifyProduct (after the product)
// puts the verdict in result->check and appends the kernel records "freivalds" (the check's time
// on the context's stream from the end of the product), "freivalds_wait" when the product waited
// for the side lane (JoinBeforeProduct) and, when B's part ran beside, "freivalds_b" (that part's
// time on the side lane). Same requirements and errors as ProductCheckInFlight::Begin.
absl::StatusOr<std::unique_ptr<ProductCheckInFlight>> BeginVerifyProduct(
    const MatrixView& a, const MatrixView& b, const MatrixView& c, const MultiplyOptions& options,
    DeviceContext& context, bool a_upload_follows);
absl::Status FinishVerifyProduct(ProductCheckInFlight& check, const MatrixView& a,
                                 const MatrixView& b, const MatrixView& c,
                                 const MultiplyOptions& options, DeviceContext& context,
                                 MultiplyResult* result);

// Both at once, after the product (as a block-sparse product does).
absl::Status VerifyProduct(const MatrixView& a, const MatrixView& b, const MatrixView& c,
                           const MultiplyOptions& options, DeviceContext& context,
                           MultiplyResult* result);

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_FREIVALDS_H_
