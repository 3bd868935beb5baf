#include "core/cuda/lt_batched_dgemm.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace matrixd::cuda {
namespace {

using LtMatmulDesc = LtOwned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtOwned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtOwned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// Candidates asked of the heuristic (call 8 of docs/benchmarks.md saw 8 for the trailing update).
constexpr int kHeuristicCandidates = 16;

// The algorithm chosen for a shape on a device; none when cuBLASLt offered none (the fallback).
struct LtChoice {
  std::optional<cublasLtMatmulAlgo_t> algorithm;
  size_t workspace_bytes = 0;
};

struct ChoiceKey {
  int device = 0;
  BatchedDgemmShape shape;
  friend bool operator==(const ChoiceKey&, const ChoiceKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ChoiceKey& key) {
    return H::combine(std::move(h), key.device, key.shape);
  }
};

// Shapes whose choices are kept at most (one or two per panel of each order and batch size).
constexpr size_t kMostChoices = 4096;

// The choices made so far in this process.
class ChoiceCache {
 public:
  std::optional<LtChoice> Find(const ChoiceKey& key) const {
    absl::MutexLock lock(&mutex_);
    auto it = choices_.find(key);
    if (it == choices_.end()) return std::nullopt;
    return it->second;
  }
  void Put(const ChoiceKey& key, const LtChoice& choice) {
    absl::MutexLock lock(&mutex_);
    // A long-running server meets many orders and batch sizes: start over rather than grow.
    if (choices_.size() >= kMostChoices) choices_.clear();
    choices_.insert_or_assign(key, choice);
  }

 private:
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<ChoiceKey, LtChoice> choices_ ABSL_GUARDED_BY(mutex_);
};

ChoiceCache& Choices() {
  static auto* cache = new ChoiceCache();
  return *cache;
}

// The three layouts and the operation's descriptor of one shape.
struct LtOperation {
  LtMatmulDesc desc;
  LtLayout a;
  LtLayout b;
  LtLayout c;
};

absl::StatusOr<LtLayout> BatchedLayout(uint64_t rows, uint64_t cols, int64_t ld, int batch,
                                       int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&raw, CUDA_R_64F, rows, cols, ld));
  LtLayout layout(raw);
  const int32_t count = batch;
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return layout;
}

absl::StatusOr<LtOperation> DescribeOperation(const BatchedDgemmShape& s) {
  cublasLtMatmulDesc_t raw = nullptr;
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&raw, CUBLAS_COMPUTE_64F, CUDA_R_64F));
  LtOperation op{.desc = LtMatmulDesc(raw), .a = {}, .b = {}, .c = {}};
  const auto m = static_cast<uint64_t>(s.m);
  const auto n = static_cast<uint64_t>(s.n);
  const auto k = static_cast<uint64_t>(s.k);
  MATRIXD_ASSIGN_OR_RETURN(op.a, BatchedLayout(m, k, s.lda, s.batch, s.stride_a));
  MATRIXD_ASSIGN_OR_RETURN(op.b, BatchedLayout(k, n, s.ldb, s.batch, s.stride_b));
  MATRIXD_ASSIGN_OR_RETURN(op.c, BatchedLayout(m, n, s.ldc, s.batch, s.stride_c));
  return op;
}

// Asks the heuristic for the shape's candidates within `workspace_bytes` and the operands'
// alignments, and picks one (ChooseLtCandidate).
absl::StatusOr<LtChoice> Choose(cublasLtHandle_t lt, const LtOperation& op,
                                const BatchedDgemmShape& s, size_t workspace_bytes) {
  cublasLtMatmulPreference_t raw = nullptr;
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&raw));
  const LtPreference preference(raw);
  const uint64_t workspace = workspace_bytes;
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  const std::array<std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t>, 4> alignments = {{
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, s.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, s.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, s.align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, s.align_c},
  }};
  for (const auto& [attribute, bytes] : alignments) {
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(raw, attribute, &bytes, sizeof(bytes)));
  }
  std::array<cublasLtMatmulHeuristicResult_t, kHeuristicCandidates> results{};
  int returned = 0;
  const cublasStatus_t asked = cublasLtMatmulAlgoGetHeuristic(
      lt, op.desc.get(), op.a.get(), op.b.get(), op.c.get(), op.c.get(), raw, kHeuristicCandidates,
      results.data(), &returned);
  // NOT_SUPPORTED: no algorithm for this shape (the fallback's case), not a failure.
  if (asked == CUBLAS_STATUS_NOT_SUPPORTED) return LtChoice{};
  MATRIXD_RETURN_IF_ERROR(MATRIXD_CUDA_STATUS(asked));
  std::array<uint32_t, kHeuristicCandidates> tiles{};
  std::array<int, kHeuristicCandidates> usable{};
  int count = 0;
  for (int i = 0; i < std::min(returned, kHeuristicCandidates); ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    uint32_t tile = CUBLASLT_MATMUL_TILE_UNDEFINED;
    size_t written = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtMatmulAlgoConfigGetAttribute(
        &results[i].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &written));
    tiles[count] = tile;
    usable[count] = i;
    ++count;
  }
  const int chosen =
      ChooseLtCandidate(std::span<const uint32_t>(tiles.data(), count), kPreferredLtTile);
  if (chosen < 0) return LtChoice{};
  const cublasLtMatmulHeuristicResult_t& result = results[usable[chosen]];
  return LtChoice{.algorithm = result.algo, .workspace_bytes = result.workspaceSize};
}

absl::Status FallbackDgemm(cublasHandle_t fallback, const BatchedDgemmShape& s, double alpha,
                           const double* a, const double* b, double beta, double* c) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasDgemmStridedBatched(
      fallback, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &alpha, a, s.lda, s.stride_a, b, s.ldb,
      s.stride_b, &beta, c, s.ldc, s.stride_c, s.batch));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LtHandle> CreateLtHandle() {
  cublasLtHandle_t raw = nullptr;
  MATRIXD_CUDA_RETURN_IF_ERROR(cublasLtCreate(&raw));
  return LtHandle(raw);
}

uint32_t LtAlignment(uintptr_t address, int64_t stride) {
  constexpr uint64_t kMost = 256;
  const uint64_t bits =
      static_cast<uint64_t>(address) | static_cast<uint64_t>(stride) * sizeof(double) | kMost;
  return static_cast<uint32_t>(bits & (~bits + 1));  // the lowest set bit
}

int ChooseLtCandidate(std::span<const uint32_t> tiles, uint32_t preferred) {
  if (tiles.empty()) return -1;
  const auto it = std::find(tiles.begin(), tiles.end(), preferred);
  return it == tiles.end() ? 0 : static_cast<int>(it - tiles.begin());
}

absl::Status LtBatchedDgemm(cublasLtHandle_t lt, cublasHandle_t fallback, cudaStream_t stream,
                            int device, const BatchedDgemmShape& shape, double alpha,
                            const double* a, const double* b, double beta, double* c,
                            void* workspace, size_t workspace_bytes) {
  const ChoiceKey key{.device = device, .shape = shape};
  std::optional<LtChoice> cached = Choices().Find(key);
  if (cached.has_value() && !cached->algorithm.has_value()) {
    return FallbackDgemm(fallback, shape, alpha, a, b, beta, c);
  }
  MATRIXD_ASSIGN_OR_RETURN(LtOperation op, DescribeOperation(shape));
  if (!cached.has_value()) {
    MATRIXD_ASSIGN_OR_RETURN(LtChoice choice,
                             Choose(lt, op, shape, std::min(workspace_bytes, kLtWorkspaceBytes)));
    Choices().Put(key, choice);
    cached = choice;
    if (!choice.algorithm.has_value()) return FallbackDgemm(fallback, shape, alpha, a, b, beta, c);
  }
  // Chosen for a caller with more workspace than this one has.
  if (cached->workspace_bytes > workspace_bytes ||
      (cached->workspace_bytes > 0 && workspace == nullptr)) {
    return FallbackDgemm(fallback, shape, alpha, a, b, beta, c);
  }
  const cublasStatus_t ran = cublasLtMatmul(
      lt, op.desc.get(), &alpha, a, op.a.get(), b, op.b.get(), &beta, c, op.c.get(), c, op.c.get(),
      &*cached->algorithm, cached->workspace_bytes > 0 ? workspace : nullptr,
      cached->workspace_bytes, stream);
  if (ran == CUBLAS_STATUS_NOT_SUPPORTED) {
    // Refused before anything was queued: this shape goes through cuBLAS from here on.
    Choices().Put(key, LtChoice{});
    return FallbackDgemm(fallback, shape, alpha, a, b, beta, c);
  }
  return MATRIXD_CUDA_STATUS(ran);
}

bool LtChoiceCached(int device, const BatchedDgemmShape& shape) {
  const std::optional<LtChoice> choice =
      Choices().Find(ChoiceKey{.device = device, .shape = shape});
  return choice.has_value() && choice->algorithm.has_value();
}

}  // namespace matrixd::cuda
