#include "core/cuda/freivalds.h"

#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstddef>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/library_types.h"
#include "core/cuda/scoped_math_mode.h"
#include "core/cuda/side_lane.h"
#include "core/cuda/thin_product.h"
#include "core/status_macros.h"

namespace matrixd::cuda {
namespace {

std::atomic<bool> own_kernels_setting{true};
std::atomic<bool> beside_upload_setting{true};
std::atomic<int64_t> a_piece_bytes_setting{FreivaldsTuning{}.a_piece_bytes};
std::atomic<bool> staged_rows_setting{true};
std::atomic<int64_t> last_piece_bytes_setting{FreivaldsTuning{}.last_piece_bytes};

// The most pieces A is cut into (pieces grow past a_piece_bytes beyond that).
constexpr int64_t kMostAPieces = 256;

template <typename T>
const typename LibraryTraits<T>::Device* Const(const void* data) {
  return static_cast<const typename LibraryTraits<T>::Device*>(data);
}

// Row-major out (rows x s) = op(M) X with X row-major (inner x s) through cuBLAS: in its
// column-major terms out^T = X^T op(M)^T, and M's row-major buffer read column-major is M^T, so
// op(M)^T is the buffer under the same op flag (as DenseMultiply in multiply.cc).
template <typename T>
absl::Status CublasThinProduct(cublasHandle_t cublas, bool transpose, int64_t rows, int64_t inner,
                               int s, const void* m, int64_t ldm, const void* x, void* out) {
  using Traits = LibraryTraits<T>;
  const typename Traits::Device one = Traits::One();
  const typename Traits::Device zero = Traits::Zero();
  MATRIXD_CUDA_RETURN_IF_ERROR(
      Traits::gemm(cublas, CUBLAS_OP_N, transpose ? CUBLAS_OP_T : CUBLAS_OP_N, s,
                   static_cast<int>(rows), static_cast<int>(inner), &one, Const<T>(x), s,
                   Const<T>(m), static_cast<int>(ldm), &zero, LibraryPointer<T>(out), s));
  return absl::OkStatus();
}

// ||M||_F through cuBLAS nrm2 (scaled: no overflow or underflow), waiting for the result.
absl::StatusOr<double> CublasNorm(cublasHandle_t cublas, const MatrixView& m) {
  return VisitFloatingType(m.dtype, [&](auto type) -> absl::StatusOr<double> {
    using Traits = LibraryTraits<typename decltype(type)::type>;
    typename Traits::Real norm = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::nrm2(cublas, static_cast<int>(m.size()),
                                              Const<typename decltype(type)::type>(m.data), 1,
                                              &norm));
    return static_cast<double>(norm);
  });
}

// The partial sums of squares added in index order (the same bits every run); the norm, or
// nullopt where the sum in double may have overflowed or lost the norm to underflow (entries
// beyond ~1e154 or all below ~1e-145 in magnitude: only float64 and complex128 can have them).
std::optional<double> NormFromSquares(std::span<const double> partials) {
  double sum = 0;
  for (const double p : partials) sum += p;
  if (!(sum >= 0x1p-968 && sum <= 0x1p1020)) return std::nullopt;
  return std::sqrt(sum);
}

// How A is cut for its part beside the upload (ProductCheckInFlight::a_pieces).
std::vector<RowRange> APiecesOf(const MatrixView& a, bool transpose_a, bool a_upload_follows,
                                const FreivaldsTuning& tuning) {
  if (!a_upload_follows || !tuning.own_kernels || !tuning.beside_upload || transpose_a ||
      tuning.a_piece_bytes <= 0) {
    return {};
  }
  const int64_t row_bytes = a.cols * static_cast<int64_t>(ElementSize(a.dtype));
  if (row_bytes <= 0) return {};
  const int64_t rows_per_piece = std::max(
      {int64_t{1}, tuning.a_piece_bytes / row_bytes, (a.rows + kMostAPieces - 1) / kMostAPieces});
  std::vector<RowRange> pieces;
  for (int64_t first = 0; first < a.rows; first += rows_per_piece) {
    pieces.push_back({.first = first, .count = std::min(rows_per_piece, a.rows - first)});
  }
  const int64_t last_piece_bytes = std::min(tuning.last_piece_bytes, tuning.a_piece_bytes);
  while (pieces.back().count > 1 && pieces.back().count * row_bytes > last_piece_bytes) {
    RowRange& last = pieces.back();
    const RowRange tail{.first = last.first + last.count / 2, .count = last.count - last.count / 2};
    last.count /= 2;
    pieces.push_back(tail);
  }
  return pieces;
}

// What Begin allocates besides the vectors, for one product under one tuning.
struct CheckLayout {
  std::vector<RowRange> a_pieces;
  std::vector<int64_t> a_piece_partials;  // where each piece's partial sums of |a|^2 start
  int64_t partials_a = 0;                 // partial sums of |a|^2 (over all pieces)
  int64_t partials_b = 0;
  size_t scratch_a = 0;  // the thin products' scratch (thin_product.h), per operand
  size_t scratch_b = 0;
  size_t scratch_c = 0;
};

CheckLayout LayoutOf(const MatrixView& a, const MatrixView& b, bool transpose_a, bool transpose_b,
                     bool a_upload_follows, const ProductShape& shape,
                     const FreivaldsTuning& tuning) {
  CheckLayout layout;
  if (!tuning.own_kernels) return layout;
  layout.a_pieces = APiecesOf(a, transpose_a, a_upload_follows, tuning);
  if (layout.a_pieces.empty()) {
    layout.partials_a = ThinProductPartials(a.dtype, a.rows, a.cols, transpose_a);
    layout.scratch_a = ThinProductScratchBytes(a.dtype, a.rows, a.cols, transpose_a);
  }
  for (const RowRange& piece : layout.a_pieces) {
    // One piece at a time on the side lane: they share the scratch.
    layout.a_piece_partials.push_back(layout.partials_a);
    layout.partials_a += ThinProductPartials(a.dtype, piece.count, a.cols, false);
    layout.scratch_a =
        std::max(layout.scratch_a, ThinProductScratchBytes(a.dtype, piece.count, a.cols, false));
  }
  layout.partials_b = ThinProductPartials(b.dtype, b.rows, b.cols, transpose_b);
  layout.scratch_b = ThinProductScratchBytes(b.dtype, b.rows, b.cols, transpose_b);
  layout.scratch_c = ThinProductScratchBytes(a.dtype, shape.m, shape.n, false);
  return layout;
}

}  // namespace

void SetFreivaldsTuning(const FreivaldsTuning& tuning) {
  own_kernels_setting.store(tuning.own_kernels, std::memory_order_relaxed);
  beside_upload_setting.store(tuning.beside_upload, std::memory_order_relaxed);
  a_piece_bytes_setting.store(tuning.a_piece_bytes, std::memory_order_relaxed);
  staged_rows_setting.store(tuning.staged_rows, std::memory_order_relaxed);
  last_piece_bytes_setting.store(tuning.last_piece_bytes, std::memory_order_relaxed);
}

FreivaldsTuning GetFreivaldsTuning() {
  return FreivaldsTuning{
      .own_kernels = own_kernels_setting.load(std::memory_order_relaxed),
      .beside_upload = beside_upload_setting.load(std::memory_order_relaxed),
      .a_piece_bytes = a_piece_bytes_setting.load(std::memory_order_relaxed),
      .staged_rows = staged_rows_setting.load(std::memory_order_relaxed),
      .last_piece_bytes = last_piece_bytes_setting.load(std::memory_order_relaxed)};
}

uint64_t ProductCheckDeviceBytes(const MatrixView& a, const MatrixView& b, bool transpose_a,
                                 bool transpose_b, int vectors, bool a_upload_follows) {
  ProductShape shape;
  shape.m = transpose_a ? a.cols : a.rows;
  shape.k = transpose_a ? a.rows : a.cols;
  shape.n = transpose_b ? b.rows : b.cols;
  const CheckLayout layout =
      LayoutOf(a, b, transpose_a, transpose_b, a_upload_follows, shape, GetFreivaldsTuning());
  const uint64_t vector_elements =
      static_cast<uint64_t>(std::max<int64_t>(shape.n + shape.k + 2 * shape.m, 0)) *
      static_cast<uint64_t>(vectors);
  const uint64_t summary =
      layout.partials_a + layout.partials_b > 0
          ? static_cast<uint64_t>(vectors + layout.partials_a + layout.partials_b) * sizeof(double)
          : 0;
  return vector_elements * ElementSize(a.dtype) + summary + layout.scratch_a + layout.scratch_b +
         layout.scratch_c;
}

struct ProductCheckInFlight::Operands {
  MatrixView a, b, c;
  bool transpose_a = false;
  bool transpose_b = false;
  ProductShape shape;
  FreivaldsOptions options;
  FreivaldsTuning tuning;
  DeviceBuffer x, y, z, w;  // X (n x s), Y = op(B) X (k x s), Z = op(A) Y, W = C X (m x s)
  // Own kernels: what comes back to the host, in one copy: the s norms ||Z_j - W_j||, then the
  // partial sums of |a|^2 (partials_a of them), then those of |b|^2.
  DeviceBuffer summary;
  int64_t partials_a = 0;
  int64_t partials_b = 0;
  double* norms() const { return static_cast<double*>(summary.data()); }
  double* squares_a() const { return norms() + options.vectors; }
  double* squares_b() const { return squares_a() + partials_a; }
  DeviceBuffer scratch_a, scratch_b, scratch_c;  // own kernels: the thin products' scratch
  std::vector<RowRange> a_pieces;                // A's part beside its upload, piece by piece
  std::vector<int64_t> a_piece_partials;         // where each piece's squares go
};

ProductCheckInFlight::ProductCheckInFlight(DeviceContext& context,
                                           std::unique_ptr<Operands> operands)
    : context_(context), operands_(std::move(operands)) {}

ProductCheckInFlight::~ProductCheckInFlight() {
  // An error between Begin and Finish: whatever frees the buffers next on the context's stream
  // must come after the side lane's reads.
  if (beside_done_.has_value() && !joined_) {
    MATRIXD_ASSERT_CUDA_SUCCESS(cudaStreamWaitEvent(context_.stream(), beside_done_->get(), 0));
  }
}

absl::StatusOr<std::unique_ptr<ProductCheckInFlight>> ProductCheckInFlight::Begin(
    const MatrixView& a, const MatrixView& b, const MatrixView& c, bool transpose_a,
    bool transpose_b, DeviceContext& context, const FreivaldsOptions& options,
    bool a_upload_follows) {
  auto operands = std::make_unique<Operands>();
  MATRIXD_ASSIGN_OR_RETURN(operands->shape,
                           FreivaldsShape(a, b, c, transpose_a, transpose_b, options));
  operands->a = a;
  operands->b = b;
  operands->c = c;
  operands->transpose_a = transpose_a;
  operands->transpose_b = transpose_b;
  operands->options = options;
  operands->tuning = GetFreivaldsTuning();
  const ProductShape& shape = operands->shape;
  const int s = options.vectors;
  const size_t element = ElementSize(a.dtype);
  const Matrix x = operands->tuning.own_kernels
                       ? FreivaldsVectorsByVector(shape.n, s, options.seed, a.dtype)
                       : FreivaldsVectors(shape.n, s, options.seed, a.dtype);
  MATRIXD_ASSIGN_OR_RETURN(operands->x, context.Allocate(x.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(operands->y,
                           context.Allocate(static_cast<size_t>(shape.k) * s * element));
  MATRIXD_ASSIGN_OR_RETURN(operands->z,
                           context.Allocate(static_cast<size_t>(shape.m) * s * element));
  MATRIXD_ASSIGN_OR_RETURN(operands->w,
                           context.Allocate(static_cast<size_t>(shape.m) * s * element));
  if (operands->tuning.own_kernels) {
    CheckLayout layout =
        LayoutOf(a, b, transpose_a, transpose_b, a_upload_follows, shape, operands->tuning);
    operands->partials_a = layout.partials_a;
    operands->partials_b = layout.partials_b;
    operands->a_pieces = std::move(layout.a_pieces);
    operands->a_piece_partials = std::move(layout.a_piece_partials);
    MATRIXD_ASSIGN_OR_RETURN(
        operands->summary,
        context.Allocate((s + operands->partials_a + operands->partials_b) * sizeof(double)));
    MATRIXD_ASSIGN_OR_RETURN(operands->scratch_a, context.Allocate(layout.scratch_a));
    MATRIXD_ASSIGN_OR_RETURN(operands->scratch_b, context.Allocate(layout.scratch_b));
    MATRIXD_ASSIGN_OR_RETURN(operands->scratch_c, context.Allocate(layout.scratch_c));
  }
  MATRIXD_RETURN_IF_ERROR(context.Upload(x.bytes(), operands->x, x.byte_size()));
  std::unique_ptr<ProductCheckInFlight> check(
      new ProductCheckInFlight(context, std::move(operands)));
  // Beside A's upload only: with nothing to upload, B's part would run beside the product and
  // slow it down by about its own time (docs/accuracy.md); after the product it costs the same.
  if (a_upload_follows && check->operands_->tuning.own_kernels &&
      check->operands_->tuning.beside_upload) {
    MATRIXD_RETURN_IF_ERROR(check->QueueBeside());
  }
  return check;
}

absl::Status ProductCheckInFlight::QueueOnSideLane(
    const std::function<absl::Status(cudaStream_t, cublasHandle_t)>& work, EventTimer* timer) {
  MATRIXD_ASSIGN_OR_RETURN(SideLane * side, context_.side_lane());
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent ready, CudaEvent::Create());
  if (!beside_done_.has_value()) {
    MATRIXD_ASSIGN_OR_RETURN(CudaEvent done, CudaEvent::Create());
    beside_done_.emplace(std::move(done));
  }
  MATRIXD_RETURN_IF_ERROR(ready.Record(context_.stream()));
  MATRIXD_RETURN_IF_ERROR(ready.MakeWait(side->stream()));
  // From here the side lane may read the buffers: the destructor (or Finish) joins it again.
  joined_ = false;
  if (timer != nullptr) MATRIXD_RETURN_IF_ERROR(timer->Start(side->stream()));
  const absl::Status queued = work(side->stream(), side->cublas());
  // Recorded whatever happened, so that the join in Finish or the destructor covers what was
  // queued.
  if (timer != nullptr) MATRIXD_RETURN_IF_ERROR(timer->Stop(side->stream()));
  MATRIXD_RETURN_IF_ERROR(beside_done_->Record(side->stream()));
  return queued;
}

absl::Status ProductCheckInFlight::QueueBeside() {
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(QueueOnSideLane(
      [&](cudaStream_t stream, cublasHandle_t cublas) { return QueueB(stream, cublas); }, &timer));
  beside_timer_.emplace(std::move(timer));
  return absl::OkStatus();
}

const std::vector<RowRange>& ProductCheckInFlight::a_pieces() const { return operands_->a_pieces; }

bool ProductCheckInFlight::a_beside() const {
  return !operands_->a_pieces.empty() && pieces_landed_ == operands_->a_pieces.size();
}

uint64_t ProductCheckInFlight::last_a_piece_bytes() const {
  const Operands& o = *operands_;
  if (o.a_pieces.empty()) return 0;
  return static_cast<uint64_t>(o.a_pieces.back().count * o.a.cols) * ElementSize(o.a.dtype);
}

absl::Status ProductCheckInFlight::QueueAPiece(size_t piece, cudaStream_t stream) {
  Operands& o = *operands_;
  const RowRange rows = o.a_pieces[piece];
  const size_t element = ElementSize(o.a.dtype);
  return LaunchThinProduct(
      ThinProductArgs{
          .dtype = o.a.dtype,
          .m = o.a.data + static_cast<size_t>(rows.first * o.a.cols) * element,
          .rows = rows.count,
          .cols = o.a.cols,
          .x = o.y.data(),
          .s = o.options.vectors,
          .out = static_cast<char*>(o.z.data()) + static_cast<size_t>(rows.first) * element,
          .out_stride = o.shape.m,
          .square_partials = o.squares_a() + o.a_piece_partials[piece],
          .scratch = o.scratch_a.data(),
          .staged = o.tuning.staged_rows},
      stream);
}

absl::Status ProductCheckInFlight::APieceLanded(size_t piece) {
  const size_t pieces = operands_->a_pieces.size();
  if (piece != pieces_landed_ || piece >= pieces) {
    return absl::FailedPreconditionError(
        absl::StrCat("A's piece ", piece, " landed; expected ", pieces_landed_, " of ", pieces));
  }
  ++pieces_landed_;
  if (piece + 1 == pieces) return absl::OkStatus();  // the last: after the product (Finish)
  return QueueOnSideLane(
      [&](cudaStream_t stream, cublasHandle_t) { return QueueAPiece(piece, stream); }, nullptr);
}

absl::Status ProductCheckInFlight::JoinBeforeProduct() {
  if (!beside_done_.has_value()) return absl::OkStatus();
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context_.stream()));
  MATRIXD_RETURN_IF_ERROR(beside_done_->MakeWait(context_.stream()));
  joined_ = true;
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context_.stream()));
  wait_timer_.emplace(std::move(timer));
  return absl::OkStatus();
}

absl::Status ProductCheckInFlight::QueueB(cudaStream_t stream, cublasHandle_t cublas) {
  Operands& o = *operands_;
  b_queued_ = true;
  return QueueOperandProduct(o.b, o.transpose_b, o.shape.k, o.shape.n, o.x, o.y, o.squares_b(),
                             o.scratch_b, stream, cublas);
}

absl::Status ProductCheckInFlight::QueueA(cudaStream_t stream, cublasHandle_t cublas) {
  Operands& o = *operands_;
  return QueueOperandProduct(o.a, o.transpose_a, o.shape.m, o.shape.k, o.y, o.z, o.squares_a(),
                             o.scratch_a, stream, cublas);
}

absl::Status ProductCheckInFlight::QueueOperandProduct(const MatrixView& m, bool transpose,
                                                       int64_t out_rows, int64_t inner,
                                                       const DeviceBuffer& in, DeviceBuffer& out,
                                                       double* squares, const DeviceBuffer& scratch,
                                                       cudaStream_t stream, cublasHandle_t cublas) {
  const Operands& o = *operands_;
  if (o.tuning.own_kernels) {
    return LaunchThinProduct(ThinProductArgs{.dtype = m.dtype,
                                             .m = m.data,
                                             .rows = m.rows,
                                             .cols = m.cols,
                                             .transpose = transpose,
                                             .x = in.data(),
                                             .s = o.options.vectors,
                                             .out = out.data(),
                                             .square_partials = squares,
                                             .scratch = scratch.data(),
                                             .staged = o.tuning.staged_rows},
                             stream);
  }
  return VisitFloatingType(m.dtype, [&](auto type) {
    return CublasThinProduct<typename decltype(type)::type>(cublas, transpose, out_rows, inner,
                                                            o.options.vectors, m.data, m.cols,
                                                            in.data(), out.data());
  });
}

absl::StatusOr<ProductCheck> ProductCheckInFlight::Finish() {
  Operands& o = *operands_;
  const int s = o.options.vectors;
  cudaStream_t stream = context_.stream();
  // Full precision even when the product ran on TF32 tensor cores: the check must not share the
  // product's rounding.
  MATRIXD_ASSIGN_OR_RETURN(ScopedMathMode math_mode,
                           ScopedMathMode::Set(context_.cublas(), CUBLAS_DEFAULT_MATH));
  if (!b_queued_) MATRIXD_RETURN_IF_ERROR(QueueB(stream, context_.cublas()));
  // W first: it needs neither Y nor the side lane.
  MATRIXD_RETURN_IF_ERROR(QueueOperandProduct(o.c, false, o.shape.m, o.shape.n, o.x, o.w,
                                              /*squares=*/nullptr, o.scratch_c, stream,
                                              context_.cublas()));
  if (beside_done_.has_value() && !joined_) {
    MATRIXD_RETURN_IF_ERROR(beside_done_->MakeWait(stream));
    joined_ = true;
  }
  if (!o.a_pieces.empty()) {
    if (!a_beside()) {
      return absl::FailedPreconditionError(absl::StrCat("Freivalds' check finished with ",
                                                        pieces_landed_, " of A's ",
                                                        o.a_pieces.size(), " pieces landed"));
    }
    MATRIXD_RETURN_IF_ERROR(QueueAPiece(o.a_pieces.size() - 1, stream));
  } else {
    MATRIXD_RETURN_IF_ERROR(QueueA(stream, context_.cublas()));
  }
  if (o.tuning.own_kernels) {
    MATRIXD_RETURN_IF_ERROR(
        LaunchDifferenceNorms(o.a.dtype, o.z.data(), o.w.data(), o.shape.m, s, o.norms(), stream));
  }
  MATRIXD_ASSIGN_OR_RETURN(ProductCheck check,
                           o.tuning.own_kernels ? VerdictFromSummary() : VerdictFromVectors());
  if (beside_timer_.has_value()) {
    MATRIXD_ASSIGN_OR_RETURN(const double seconds, beside_timer_->Seconds());
    beside_seconds_ = seconds;
  }
  if (wait_timer_.has_value()) {
    MATRIXD_ASSIGN_OR_RETURN(const double seconds, wait_timer_->Seconds());
    wait_seconds_ = seconds;
  }
  return check;
}

absl::StatusOr<ProductCheck> ProductCheckInFlight::VerdictFromSummary() {
  const Operands& o = *operands_;
  std::vector<double> summary(o.summary.bytes() / sizeof(double));
  MATRIXD_RETURN_IF_ERROR(context_.Download(o.summary, summary.data(), o.summary.bytes()));
  const auto span = std::span<const double>(summary);
  const auto norm = [&](const MatrixView& m, std::span<const double> partials) {
    if (const std::optional<double> from_squares = NormFromSquares(partials)) {
      return absl::StatusOr<double>(*from_squares);
    }
    // Beyond the squares' range: nrm2 (scaled), waiting for its result.
    return CublasNorm(context_.cublas(), m);
  };
  const int s = o.options.vectors;
  MATRIXD_ASSIGN_OR_RETURN(const double norm_a, norm(o.a, span.subspan(s, o.partials_a)));
  MATRIXD_ASSIGN_OR_RETURN(const double norm_b,
                           norm(o.b, span.subspan(s + o.partials_a, o.partials_b)));
  return FreivaldsVerdictFromNorms(span.first(s), norm_a, norm_b, o.a.dtype, o.shape.k, o.shape.n,
                                   o.options);
}

absl::StatusOr<ProductCheck> ProductCheckInFlight::VerdictFromVectors() {
  const Operands& o = *operands_;
  Matrix z(o.shape.m, o.options.vectors, o.a.dtype);
  Matrix w(o.shape.m, o.options.vectors, o.a.dtype);
  MATRIXD_RETURN_IF_ERROR(context_.Download(o.z, z.mutable_bytes(), z.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context_.Download(o.w, w.mutable_bytes(), w.byte_size()));
  // nrm2 with the handle's default host pointer mode waits for its result.
  MATRIXD_ASSIGN_OR_RETURN(const double norm_a, CublasNorm(context_.cublas(), o.a));
  MATRIXD_ASSIGN_OR_RETURN(const double norm_b, CublasNorm(context_.cublas(), o.b));
  return FreivaldsVerdict(z.view(), w.view(), norm_a, norm_b, o.shape.k, o.shape.n, o.options);
}

namespace {

FreivaldsOptions OptionsOf(const MultiplyOptions& options) {
  return FreivaldsOptions{.seed = FreivaldsSeed(options.deterministic), .tf32 = options.allow_tf32};
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProductCheckInFlight>> BeginVerifyProduct(
    const MatrixView& a, const MatrixView& b, const MatrixView& c, const MultiplyOptions& options,
    DeviceContext& context, bool a_upload_follows) {
  return ProductCheckInFlight::Begin(a, b, c, options.transpose_a, options.transpose_b, context,
                                     OptionsOf(options), a_upload_follows);
}

absl::Status FinishVerifyProduct(ProductCheckInFlight& check, const MatrixView& a,
                                 const MatrixView& b, const MatrixView& c,
                                 const MultiplyOptions& options, DeviceContext& context,
                                 MultiplyResult* result) {
  MATRIXD_ASSIGN_OR_RETURN(EventTimer timer, EventTimer::Create());
  MATRIXD_RETURN_IF_ERROR(timer.Start(context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(result->check, check.Finish());
  MATRIXD_RETURN_IF_ERROR(timer.Stop(context.stream()));
  MATRIXD_ASSIGN_OR_RETURN(const double after, timer.Seconds());
  const double m = static_cast<double>(c.rows);
  const double n = static_cast<double>(c.cols);
  const double k = static_cast<double>(options.transpose_a ? a.rows : a.cols);
  const double per_update = IsComplex(a.dtype) ? 8.0 : 2.0;
  const int s = result->check->vectors;
  // The record "freivalds": what the check added to the product's stream (its part after the
  // product), with the bytes and flops of what ran there.
  uint64_t bytes = c.byte_size();
  double flops = per_update * s * m * n;
  const uint64_t a_bytes = check.a_beside() ? check.last_a_piece_bytes() : a.byte_size();
  bytes += a_bytes;
  flops += per_update * s * static_cast<double>(a_bytes / ElementSize(a.dtype));
  if (const std::optional<double> beside = check.beside_seconds()) {
    result->stats.kernels.push_back(
        KernelRecord{"freivalds_b", *beside, b.byte_size(), per_update * s * k * n});
  } else {
    bytes += b.byte_size();
    flops += per_update * s * k * n;
  }
  if (const std::optional<double> wait = check.wait_seconds()) {
    result->stats.kernels.push_back(KernelRecord{"freivalds_wait", *wait, 0, 0.0});
  }
  result->stats.kernels.push_back(KernelRecord{"freivalds", after, bytes, flops});
  return absl::OkStatus();
}

absl::Status VerifyProduct(const MatrixView& a, const MatrixView& b, const MatrixView& c,
                           const MultiplyOptions& options, DeviceContext& context,
                           MultiplyResult* result) {
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<ProductCheckInFlight> check,
                           BeginVerifyProduct(a, b, c, options, context,
                                              /*a_upload_follows=*/false));
  return FinishVerifyProduct(*check, a, b, c, options, context, result);
}

}  // namespace matrixd::cuda
