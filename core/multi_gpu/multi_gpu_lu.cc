#include "core/multi_gpu/multi_gpu_lu.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/cuda/batch_kernels.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/library_types.h"
#include "core/cuda/lu_row_swaps.h"
#include "core/multi_gpu/block_cyclic_part.h"
#include "core/multi_gpu/operand_source.h"
#include "core/multi_gpu/peer_access.h"
#include "core/status_macros.h"
#include "core/validation.h"

namespace matrixd::multi_gpu {
namespace {

// The cuSOLVER and cuBLAS calls of the LU's element type T (double or std::complex<double>) on
// its parts' doubles.
template <typename T>
typename cuda::LibraryTraits<T>::Device* AsLibrary(double* data) {
  return reinterpret_cast<typename cuda::LibraryTraits<T>::Device*>(data);
}
template <typename T>
const typename cuda::LibraryTraits<T>::Device* AsLibrary(const double* data) {
  return reinterpret_cast<const typename cuda::LibraryTraits<T>::Device*>(data);
}

// getrf's workspace for an m x n panel, in elements of T.
template <typename T>
absl::Status GetrfBufferSize(cusolverDnHandle_t solver, int m, int n, double* a, int lda,
                             int* elements) {
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cuda::LibraryTraits<T>::getrf_buffer_size(solver, m, n, AsLibrary<T>(a), lda, elements));
  return absl::OkStatus();
}

template <typename T>
absl::Status Getrf(cusolverDnHandle_t solver, int m, int n, double* a, int lda, double* work,
                   int* pivots, int* info) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LibraryTraits<T>::getrf(solver, m, n, AsLibrary<T>(a), lda,
                                                             AsLibrary<T>(work), pivots, info));
  return absl::OkStatus();
}

// U12 = L11^-1 A12 (w x cols, at a), then A22 -= L21 U12 (below x cols, at a + w), L11 at l and
// L21 at l + w; leading dimension ld throughout.
template <typename T>
absl::Status UpdateColumns(cublasHandle_t blas, int w, int cols, int below, const double* l,
                           double* a, int ld) {
  using Traits = cuda::LibraryTraits<T>;
  const T one_value(1.0);
  const T minus_one_value(-1.0);
  const auto* one = reinterpret_cast<const typename Traits::Device*>(&one_value);
  const auto* minus_one = reinterpret_cast<const typename Traits::Device*>(&minus_one_value);
  const int64_t words = sizeof(T) / sizeof(double);
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm(blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER,
                                            CUBLAS_OP_N, CUBLAS_DIAG_UNIT, w, cols, one,
                                            AsLibrary<T>(l), ld, AsLibrary<T>(a), ld));
  if (below == 0) return absl::OkStatus();
  MATRIXD_CUDA_RETURN_IF_ERROR(Traits::gemm(
      blas, CUBLAS_OP_N, CUBLAS_OP_N, below, cols, w, minus_one, AsLibrary<T>(l + w * words), ld,
      AsLibrary<T>(a), ld, one, AsLibrary<T>(a + w * words), ld));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MultiGpuLu>> MultiGpuLu::Create(std::vector<int> devices, int64_t n,
                                                               int64_t block, DType element) {
  if (devices.empty()) return absl::InvalidArgumentError("MultiGpuLu: no devices");
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError("MultiGpuLu: a device is listed twice");
  }
  if (n < 1 || n >= std::numeric_limits<int>::max() || block < 1) {
    return absl::InvalidArgumentError(absl::StrCat("MultiGpuLu: n=", n, " block=", block,
                                                   " (want 1 <= n < 2^31 - 1 and block >= 1)"));
  }
  if (element != DType::kFloat64 && element != DType::kComplex128) {
    return absl::InvalidArgumentError(absl::StrCat("MultiGpuLu: element type ", DTypeName(element),
                                                   "; want float64 or complex128"));
  }
  std::unique_ptr<MultiGpuLu> self(new MultiGpuLu());
  self->n_ = n;
  self->complex_ = element == DType::kComplex128;
  const int64_t words = self->Words();
  self->block_ = std::min(block, n);
  self->panels_ = (n + self->block_ - 1) / self->block_;
  const int gpus = static_cast<int>(devices.size());
  const distributed::BlockCyclicLayout layout{
      .rows = n, .cols = n, .block = self->block_, .grid = {.rows = 1, .cols = gpus}};
  MATRIXD_RETURN_IF_ERROR(EnablePeerAccess(devices));
  for (int g = 0; g < gpus; ++g) {
    const int device = devices[g];
    MATRIXD_ASSIGN_OR_RETURN(auto lane, LuLane::Create(device));
    self->lanes_.push_back(std::move(lane));
    self->parts_.push_back(PartOf(layout, g));
    MATRIXD_ASSIGN_OR_RETURN(auto matrix, DeviceAllocation<double>::Allocate(
                                              device, PartElements(self->parts_[g]) * words));
    self->matrices_.push_back(std::move(matrix));
    std::array<DeviceAllocation<double>, 2> copies;
    if (gpus > 1) {
      for (auto& copy : copies) {
        MATRIXD_ASSIGN_OR_RETURN(copy, DeviceAllocation<double>::Allocate(
                                           device, static_cast<size_t>(n * self->block_ * words)));
      }
    }
    self->panel_copies_.push_back(std::move(copies));
    MATRIXD_ASSIGN_OR_RETURN(auto pivots,
                             DeviceAllocation<int>::Allocate(device, static_cast<size_t>(n)));
    self->pivots_.push_back(std::move(pivots));
    MATRIXD_ASSIGN_OR_RETURN(
        auto infos, DeviceAllocation<int>::Allocate(device, static_cast<size_t>(self->panels_)));
    self->infos_.push_back(std::move(infos));
    // The first panel is the tallest: its workspace serves every later one.
    int work = 0;
    const auto buffer_size =
        self->complex_ ? GetrfBufferSize<std::complex<double>> : GetrfBufferSize<double>;
    MATRIXD_RETURN_IF_ERROR(buffer_size(self->lanes_[g]->solver, static_cast<int>(n),
                                        static_cast<int>(self->block_), self->matrices_[g].get(),
                                        static_cast<int>(n), &work));
    MATRIXD_ASSIGN_OR_RETURN(
        auto workspace,
        DeviceAllocation<double>::Allocate(device, static_cast<size_t>(std::max(work, 1) * words)));
    self->work_.push_back(std::move(workspace));
    MATRIXD_ASSIGN_OR_RETURN(
        auto summary, DeviceAllocation<double>::Allocate(device, cuda::kDiagonalSummaryFields));
    self->summary_.push_back(std::move(summary));
    MATRIXD_ASSIGN_OR_RETURN(auto first_nonfinite,
                             DeviceAllocation<unsigned long long>::Allocate(device, 1));
    self->first_nonfinite_.push_back(std::move(first_nonfinite));
  }
  return self;
}

MultiGpuLu::~MultiGpuLu() {
  // The buffers are freed before the lanes (members go in reverse order): let queued work end.
  SynchronizeAll().IgnoreError();
}

int64_t MultiGpuLu::Width(int64_t panel) const { return std::min(block_, n_ - panel * block_); }

const double* MultiGpuLu::PanelOn(int g, int64_t panel) const {
  if (Owner(panel) == g) return ElementOf(g, LocalColumn(panel) * n_);
  return panel_copies_[g][panel % 2].get();
}

std::array<int64_t, 2> MultiGpuLu::TrailingColumns(int g, int64_t first_panel) const {
  const int gpus = this->gpus();
  const int64_t first = first_panel + ((g - first_panel) % gpus + gpus) % gpus;
  const int64_t local_cols = parts_[g].local_cols;
  if (first >= panels_) return {local_cols, 0};
  const int64_t start = LocalColumn(first);
  return {start, local_cols - start};
}

absl::Status MultiGpuLu::WaitForPanel(int g, int64_t panel, cudaStream_t stream) {
  const int owner = Owner(panel);
  const int parity = static_cast<int>(panel % 2);
  if (owner != g) {
    return lanes_[owner]->sent[parity].MakeWait(stream);
  }
  if (stream == lanes_[g]->panel.get()) return absl::OkStatus();  // factored on this very stream
  return lanes_[g]->factored[parity].MakeWait(stream);
}

absl::Status MultiGpuLu::ApplyPanel(int g, int64_t panel, int64_t first_col, int64_t cols,
                                    cublasHandle_t blas, cudaStream_t stream) {
  if (cols <= 0) return absl::OkStatus();
  const int64_t c0 = panel * block_;
  const int64_t w = Width(panel);
  const int64_t below = n_ - c0 - w;
  double* a = ElementOf(g, first_col * n_);
  const double* l = PanelOn(g, panel);
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cuda::LaunchRowSwaps(a, ElementBytes(), n_, cols, pivots_[g].get() + c0, c0, w, stream));
  const auto update = complex_ ? UpdateColumns<std::complex<double>> : UpdateColumns<double>;
  return update(blas, static_cast<int>(w), static_cast<int>(cols), static_cast<int>(below),
                l + c0 * Words(), a + c0 * Words(), static_cast<int>(n_));
}

absl::Status MultiGpuLu::FactorPanel(int64_t panel) {
  const int owner = Owner(panel);
  const int parity = static_cast<int>(panel % 2);
  LuLane& lane = *lanes_[owner];
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lane.device));
  const int64_t c0 = panel * block_;
  const int64_t w = Width(panel);
  const int64_t rows = n_ - c0;
  double* a = ElementOf(owner, LocalColumn(panel) * n_ + c0);
  int* pivots = pivots_[owner].get() + c0;
  const auto getrf = complex_ ? Getrf<std::complex<double>> : Getrf<double>;
  MATRIXD_RETURN_IF_ERROR(getrf(lane.solver, static_cast<int>(rows), static_cast<int>(w), a,
                                static_cast<int>(n_), work_[owner].get(), pivots,
                                infos_[owner].get() + panel));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cuda::LaunchOffsetPivots(pivots, w, static_cast<int>(c0), lane.panel.get()));
  MATRIXD_RETURN_IF_ERROR(lane.factored[parity].Record(lane.panel.get()));
  if (gpus() == 1) return absl::OkStatus();
  // Rows c0.. of the panel's columns (L, and U11 above its diagonal) into each other GPU's buffer
  // for this parity, once that GPU is done with the panel of two steps ago that the buffer held.
  for (int g = 0; g < gpus(); ++g) {
    if (g == owner) continue;
    LuLane& peer = *lanes_[g];
    MATRIXD_RETURN_IF_ERROR(peer.released[parity].MakeWait(lane.panel.get()));
    cudaMemcpy3DPeerParms copy{};
    const size_t pitch = static_cast<size_t>(n_) * ElementBytes();
    const size_t bytes = static_cast<size_t>(rows) * ElementBytes();
    copy.srcPtr = make_cudaPitchedPtr(a, pitch, bytes, static_cast<size_t>(w));
    copy.srcDevice = lane.device;
    copy.dstPtr = make_cudaPitchedPtr(panel_copies_[g][parity].get() + c0 * Words(), pitch, bytes,
                                      static_cast<size_t>(w));
    copy.dstDevice = peer.device;
    copy.extent = make_cudaExtent(bytes, static_cast<size_t>(w), 1);
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy3DPeerAsync(&copy, lane.panel.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(pivots_[g].get() + c0, peer.device, pivots,
                                                     lane.device, w * sizeof(int),
                                                     lane.panel.get()));
  }
  return lane.sent[parity].Record(lane.panel.get());
}

absl::Status MultiGpuLu::LookAhead(int64_t panel) {
  const int64_t next = panel + 1;
  const int g = Owner(next);
  const int parity = static_cast<int>(panel % 2);
  LuLane& lane = *lanes_[g];
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lane.device));
  // The next panel's columns have had every earlier panel applied once this GPU's previous
  // trailing update is done (nothing to wait for at step 0: Factor starts from idle GPUs).
  if (panel > 0) {
    MATRIXD_RETURN_IF_ERROR(lane.update_done[(panel - 1) % 2].MakeWait(lane.panel.get()));
  }
  MATRIXD_RETURN_IF_ERROR(WaitForPanel(g, panel, lane.panel.get()));
  MATRIXD_RETURN_IF_ERROR(
      ApplyPanel(g, panel, LocalColumn(next), Width(next), lane.panel_blas, lane.panel.get()));
  MATRIXD_RETURN_IF_ERROR(lane.lookahead_done[parity].Record(lane.panel.get()));
  return FactorPanel(next);
}

absl::Status MultiGpuLu::UpdateTrailing(int64_t panel) {
  const int parity = static_cast<int>(panel % 2);
  const int lookahead_owner = Owner(panel + 1);
  for (int g = 0; g < gpus(); ++g) {
    LuLane& lane = *lanes_[g];
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lane.device));
    MATRIXD_RETURN_IF_ERROR(WaitForPanel(g, panel, lane.update.get()));
    // The look-ahead owner has taken panel + 1's columns onto its panel stream.
    const auto [first, cols] = TrailingColumns(g, g == lookahead_owner ? panel + 2 : panel + 1);
    MATRIXD_RETURN_IF_ERROR(ApplyPanel(g, panel, first, cols, lane.update_blas, lane.update.get()));
    if (g == lookahead_owner) {
      MATRIXD_RETURN_IF_ERROR(lane.lookahead_done[parity].MakeWait(lane.update.get()));
    }
    MATRIXD_RETURN_IF_ERROR(lane.released[parity].Record(lane.update.get()));
    MATRIXD_RETURN_IF_ERROR(lane.update_done[parity].Record(lane.update.get()));
  }
  return absl::OkStatus();
}

absl::Status MultiGpuLu::SynchronizeAll() {
  absl::Status status;
  for (const auto& lane : lanes_) {
    status.Update(MATRIXD_CUDA_STATUS(cudaSetDevice(lane->device)));
    status.Update(MATRIXD_CUDA_STATUS(cudaStreamSynchronize(lane->panel.get())));
    status.Update(MATRIXD_CUDA_STATUS(cudaStreamSynchronize(lane->update.get())));
  }
  return status;
}

absl::Status MultiGpuLu::Upload(const MatrixView& a, bool host_entries_checked) {
  if (!TakesDType(a.dtype) || a.rows != n_ || a.cols != n_) {
    return absl::InvalidArgumentError(absl::StrCat("MultiGpuLu::Upload: want a ", n_, "x", n_,
                                                   " matrix of ", TakenDTypes(), ", got ", a.rows,
                                                   "x", a.cols, " ", DTypeName(a.dtype)));
  }
  MATRIXD_ASSIGN_OR_RETURN(const OperandSource source, OperandSource::Of(a));
  // The parts may still be read by the last factorisation's work (a copy pushed from another
  // GPU is not ordered after it).
  MATRIXD_RETURN_IF_ERROR(SynchronizeAll());
  // float32 words (float32, complex64) come through a panel-sized buffer on each GPU and are
  // widened from there.
  const bool narrow = ElementSize(a.dtype) < ElementBytes();
  std::vector<DeviceAllocation<float>> staging;
  for (int g = 0; narrow && g < gpus(); ++g) {
    MATRIXD_ASSIGN_OR_RETURN(
        auto buffer, DeviceAllocation<float>::Allocate(lanes_[g]->device,
                                                       static_cast<size_t>(block_ * n_ * Words())));
    staging.push_back(std::move(buffer));
  }
  // Row-major rows [k nb, (k+1) nb) of A are column-major block column k of A^T: one contiguous
  // copy per block.
  const auto* bytes = reinterpret_cast<const std::byte*>(a.data);
  for (int64_t panel = 0; panel < panels_; ++panel) {
    const int g = Owner(panel);
    cudaStream_t update = lanes_[g]->update.get();
    MATRIXD_ASSIGN_OR_RETURN(cudaStream_t stream, source.StreamFor(lanes_[g]->device, update));
    const int64_t words = Width(panel) * n_ * Words();  // of the panel, in the LU's doubles
    const std::byte* from =
        bytes + panel * block_ * n_ * static_cast<int64_t>(ElementSize(a.dtype));
    double* to = ElementOf(g, LocalColumn(panel) * n_);
    if (!narrow) {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(to, from, words * sizeof(double), cudaMemcpyDefault, stream));
      continue;
    }
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(staging[g].get(), from, words * sizeof(float), cudaMemcpyDefault, stream));
    // A copy pushed by the holder's stream is not ordered with this GPU's streams: wait for it,
    // and keep the widening done before the next push reuses the buffer.
    if (stream != update) MATRIXD_RETURN_IF_ERROR(source.Synchronize());
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lanes_[g]->device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchWidenFloats(staging[g].get(), to, words, update));
    if (stream != update) MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(update));
  }
  MATRIXD_RETURN_IF_ERROR(source.Synchronize());
  MATRIXD_RETURN_IF_ERROR(SynchronizeAll());
  if (host_entries_checked && !a.on_device()) return absl::OkStatus();
  return CheckFinite();
}

absl::Status MultiGpuLu::UploadParts(const DistributedResidentMatrix& a,
                                     const std::vector<int>& device_of_part) {
  const RowCyclicLayout& layout = a.row_layout();
  // n <= block: one block, on part 0 in both layouts, whatever the block sizes.
  const bool same_blocks = layout.block == block_ || (n_ <= layout.block && n_ <= block_);
  if (!TakesDType(a.dtype()) || a.rows() != n_ || a.cols() != n_ || layout.parts != gpus() ||
      !same_blocks) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layout RESIDENT_LAYOUT_DISTRIBUTED: the matrix is ", a.rows(), "x", a.cols(), " ",
        DTypeName(a.dtype()), " over ", layout.parts, " GPUs in blocks of ", layout.block,
        " rows; this LU takes a ", n_, "x", n_, " matrix of ", TakenDTypes(), " over ", gpus(),
        " GPUs in blocks of ", block_, " (ask with devices = ", layout.parts, ")"));
  }
  const bool narrow = ElementSize(a.dtype()) < ElementBytes();
  MATRIXD_RETURN_IF_ERROR(SynchronizeAll());
  for (int g = 0; g < gpus(); ++g) {
    const ResidentMatrix* part = a.part(g);
    if (part == nullptr) continue;  // no rows there
    const int index = part->device_index();
    if (index < 0 || index >= static_cast<int>(device_of_part.size()) ||
        device_of_part[static_cast<size_t>(index)] != lanes_[g]->device) {
      return absl::FailedPreconditionError(
          absl::StrCat("layout RESIDENT_LAYOUT_DISTRIBUTED: part ", g, " lives on device ", index,
                       ", not on the LU's GPU ", lanes_[g]->device));
    }
    const MatrixView view = part->view();
    const int64_t elements = parts_[g].local_cols * n_;
    const auto wanted = elements * static_cast<int64_t>(ElementSize(a.dtype()));
    if (view.data == nullptr || static_cast<int64_t>(view.byte_size()) != wanted) {
      return absl::InternalError(absl::StrCat("distributed part ", g, " has ", view.byte_size(),
                                              " bytes on the device; the LU's part wants ",
                                              wanted));
    }
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lanes_[g]->device));
    if (narrow) {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cuda::LaunchWidenFloats(reinterpret_cast<const float*>(view.data), matrices_[g].get(),
                                  elements * Words(), lanes_[g]->update.get()));
    } else {
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(matrices_[g].get(), view.data, view.byte_size(),
                                                   cudaMemcpyDeviceToDevice,
                                                   lanes_[g]->update.get()));
    }
  }
  MATRIXD_RETURN_IF_ERROR(SynchronizeAll());
  return CheckFinite();
}

absl::Status MultiGpuLu::CheckFinite() {
  for (int g = 0; g < gpus(); ++g) {
    LuLane& lane = *lanes_[g];
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lane.device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_nonfinite_[g].get(), 0xff,
                                                 first_nonfinite_[g].bytes(), lane.update.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cuda::LaunchFirstNonFinite(
        matrices_[g].get(), parts_[g].local_cols * n_ * Words(), sizeof(double), 0,
        first_nonfinite_[g].get(), lane.update.get()));
  }
  // GPU g's local element e (its double e Words() and the next) is A^T(e mod n, global column of
  // local column e div n), that is A(that column, e mod n); a GPU's first hit is its first in A's
  // row-major order too.
  int64_t first = -1;
  for (int g = 0; g < gpus(); ++g) {
    LuLane& lane = *lanes_[g];
    unsigned long long local = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lane.device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&local, first_nonfinite_[g].get(), sizeof(local),
                                                 cudaMemcpyDeviceToHost, lane.update.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(lane.update.get()));
    if (local == ~0ull) continue;
    const auto e = static_cast<int64_t>(local) / Words();
    const int64_t column = e / n_;
    const int64_t row = ((column / block_) * gpus() + g) * block_ + column % block_;
    const int64_t element = row * n_ + e % n_;
    if (first < 0 || element < first) first = element;
  }
  if (first >= 0) return NonFiniteEntryError("matrix", first, n_);
  return absl::OkStatus();
}

absl::Status MultiGpuLu::Generate(cuda::GeneratedMatrix matrix, uint64_t seed) {
  if (complex_) {
    return absl::FailedPreconditionError("MultiGpuLu::Generate makes float64 matrices only");
  }
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lanes_[g]->device));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cuda::LaunchGenerate(parts_[g], matrix, seed, matrices_[g].get(), lanes_[g]->update.get()));
  }
  return absl::OkStatus();
}

absl::Status MultiGpuLu::Factor() {
  // Both streams of every GPU start from the matrix as Upload or Generate left it.
  MATRIXD_RETURN_IF_ERROR(SynchronizeAll());
  for (int g = 0; g < gpus(); ++g) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lanes_[g]->device));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(infos_[g].get(), 0, infos_[g].bytes(), lanes_[g]->panel.get()));
  }
  MATRIXD_RETURN_IF_ERROR(FactorPanel(0));
  for (int64_t panel = 0; panel + 1 < panels_; ++panel) {
    MATRIXD_RETURN_IF_ERROR(LookAhead(panel));
    MATRIXD_RETURN_IF_ERROR(UpdateTrailing(panel));
  }
  MATRIXD_RETURN_IF_ERROR(SynchronizeAll());
  for (int g = 0; g < gpus(); ++g) {
    std::vector<int> infos(infos_[g].count());
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lanes_[g]->device));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(infos.data(), infos_[g].get(), infos_[g].bytes(), cudaMemcpyDeviceToHost));
    for (size_t panel = 0; panel < infos.size(); ++panel) {
      if (infos[panel] < 0) {
        return absl::InternalError(absl::StrCat("cusolverDn getrf of panel ", panel, " on GPU ",
                                                lanes_[g]->device, ": info ", infos[panel]));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DistributedDeterminant> MultiGpuLu::Determinant() {
  std::array<double, cuda::kDiagonalSummaryFields> total{};
  for (int g = 0; g < gpus(); ++g) {
    LuLane& lane = *lanes_[g];
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lane.device));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(summary_[g].get(), 0, summary_[g].bytes(), lane.update.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(
        complex_ ? cuda::LaunchDiagonalSummary(
                       parts_[g], reinterpret_cast<const std::complex<double>*>(matrices_[g].get()),
                       summary_[g].get(), lane.update.get())
                 : cuda::LaunchDiagonalSummary(parts_[g], matrices_[g].get(), summary_[g].get(),
                                               lane.update.get()));
    std::array<double, cuda::kDiagonalSummaryFields> local{};
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(local.data(), summary_[g].get(), sizeof(local),
                                                 cudaMemcpyDeviceToHost, lane.update.get()));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(lane.update.get()));
    for (size_t i = 0; i < local.size(); ++i) total[i] += local[i];
  }
  // A zero pivot: det is 0 whatever the pivots after it (and what a division by it left).
  if (total[2] > 0) {
    return DistributedDeterminant{.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
  }
  // Every GPU holds every panel's pivots (its own, and the copies it received).
  std::vector<int> pivots(static_cast<size_t>(n_));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(lanes_[0]->device));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpy(pivots.data(), pivots_[0].get(),
                                          pivots.size() * sizeof(int), cudaMemcpyDeviceToHost));
  const std::vector<int64_t> wide(pivots.begin(), pivots.end());
  const PivotCounts counts[1] = {CountPivots(wide, n_, n_, n_, 1, 0)};
  // Complex: field [1] is the sum of the pivots' arguments, not a count of negative ones.
  MATRIXD_ASSIGN_OR_RETURN(
      DistributedDeterminant det,
      CombineDeterminant(total[0], complex_ ? 0.0 : total[1], total[2], total[3], counts));
  if (complex_ && det.sign != 0) det.angle = total[1];
  return det;
}

absl::StatusOr<DistributedDeterminant> MultiGpuDeterminant(const std::vector<int>& devices,
                                                           const DistributedResidentMatrix& a,
                                                           const std::vector<int>& device_of_part) {
  if (a.rows() != a.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a determinant needs a square matrix, got ", a.rows(), "x", a.cols()));
  }
  MATRIXD_ASSIGN_OR_RETURN(auto lu, MultiGpuLu::Create(devices, a.rows(), a.row_layout().block,
                                                       MultiGpuLu::ElementFor(a.dtype())));
  MATRIXD_RETURN_IF_ERROR(lu->UploadParts(a, device_of_part));
  MATRIXD_RETURN_IF_ERROR(lu->Factor());
  return lu->Determinant();
}

absl::StatusOr<DistributedDeterminant> MultiGpuDeterminant(const std::vector<int>& devices,
                                                           const MatrixView& a, int64_t block,
                                                           bool host_entries_checked) {
  if (a.rows != a.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("a determinant needs a square matrix, got ", a.rows, "x", a.cols));
  }
  MATRIXD_ASSIGN_OR_RETURN(
      auto lu, MultiGpuLu::Create(devices, a.rows, block, MultiGpuLu::ElementFor(a.dtype)));
  MATRIXD_RETURN_IF_ERROR(lu->Upload(a, host_entries_checked));
  MATRIXD_RETURN_IF_ERROR(lu->Factor());
  return lu->Determinant();
}

}  // namespace matrixd::multi_gpu
