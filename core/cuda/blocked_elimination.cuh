// Condensation fused k steps per pass over the matrix: a blocked, right-looking elimination that
// keeps the condensation's pivot rule and its order-preserving column removal. The stepwise
// schedule (condensation_steps.cuh) reads and writes the whole matrix once per step; this one
// once per k steps.
//
// Why it is the same computation. Keep each column's values unsigned (y) and its sign S(c)
// (+-1, flipped whenever a pivot lies right of it) apart: the condensed matrix after s steps is
// x = S * y. A step with pivot column l_s and pivot u_s = y_s[l_s] (the signed pivot is
// p_s = S(l_s) u_s, and det(A) = prod p_s) updates every later row i by
//   y_i[c] -= f_{i,s} * y_s[c],   f_{i,s} = y_i[l_s] / u_s,
// which is Gaussian elimination with column pivoting. So a pass of k steps on an order-m matrix is
//   1. the panel (rows 0..k-1, all m columns): the k steps on those rows alone, since the pivot
//      choice of step s needs only row s after steps 0..s-1 (one kernel whose blocks meet at one
//      barrier per step, the pivot search spanning the whole row: a thread-block cluster, or a
//      cooperative grid when the panel outgrows a cluster's shared memory);
//   2. the multipliers of the trailing rows i >= k: f_{i,.} solves f_i U = y_i[l_.] with the unit
//      panel's U[s'][s] = y_s'[l_s] (a small triangular solve per row);
//   3. the trailing update y_i[c] -= sum_s f_{i,s} y_s[c], written with the signs S(c) applied
//      and the k pivot columns squeezed out: one read and one write of the matrix per pass, k
//      multiply-adds per entry held in registers (GEMM-like tiles).
// Over Z/p with the first-non-zero pivot this is blocked LU with column pivoting (row pivoting of
// A^T), the permutation's sign kept by the column signs.
#ifndef MATRIXD_CORE_CUDA_BLOCKED_ELIMINATION_CUH_
#define MATRIXD_CORE_CUDA_BLOCKED_ELIMINATION_CUH_

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/device_context.h"
#include "core/cuda/elimination_schedule.cuh"
#include "core/job_control.h"

namespace matrixd::cuda {

// Steps per pass and the trailing update's register tile (rows x columns per thread) of each
// field: enough steps that the update is not bound by memory traffic, tiles small enough to keep
// the accumulators in registers, and the panel of an order-8192 matrix within one 16-block
// cluster (48 float64 steps: 192 KB per block). Measured on an H100 at n = 8192: 48 steps beat
// 32 overall (74 ms against 81), though the update alone then reaches 60% of copy bandwidth
// instead of 74% (its multiply-adds start to count).
template <class Field>
struct BlockedShape;
template <>
struct BlockedShape<RealField> {
  static constexpr int kSteps = 48;
  static constexpr int kTileRows = 4;
  static constexpr int kTileCols = 4;
};
template <>
struct BlockedShape<ComplexField> {
  static constexpr int kSteps = 32;
  static constexpr int kTileRows = 4;
  static constexpr int kTileCols = 2;
};
template <>
struct BlockedShape<ModDoubleField> {
  static constexpr int kSteps = 32;
  static constexpr int kTileRows = 4;
  static constexpr int kTileCols = 4;
};
template <>
struct BlockedShape<ModU64Field> {
  static constexpr int kSteps = 32;
  static constexpr int kTileRows = 2;
  static constexpr int kTileCols = 4;
};

inline constexpr int kPanelThreads = 256;
// Fewest columns a panel block owns: below that, the grid barrier costs more than the work saved.
inline constexpr int kPanelMinColumns = 32;
inline constexpr int kTrailingThreads = 256;  // 16 x 16

// ---- 1. The panel ----

// A load that bypasses L1: the panel blocks exchange data through memory within one launch, and
// L1 is not coherent across multiprocessors.
template <typename T>
__device__ T LoadFromL2(const T* p) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16);
  T value;
  if constexpr (sizeof(T) == 4) {
    const unsigned int bits = __ldcg(reinterpret_cast<const unsigned int*>(p));
    memcpy(&value, &bits, sizeof(T));
  } else if constexpr (sizeof(T) == 8) {
    const unsigned long long bits = __ldcg(reinterpret_cast<const unsigned long long*>(p));
    memcpy(&value, &bits, sizeof(T));
  } else {
    const double2 bits = __ldcg(reinterpret_cast<const double2*>(p));
    memcpy(&value, &bits, sizeof(T));
  }
  return value;
}

template <class Field>
struct PanelArgs {
  using T = typename Field::Value;
  Field field;
  T* matrix;  // order m, row-major, row stride m; rows 0..k-1 are replaced by the final panel
  int m;
  int k;
  int columns_per_block;
  PivotChoice* candidates;  // [2][gridDim.x]: each block's best candidate, by step parity
  T* candidate_columns;     // [2][gridDim.x][k]: that candidate's panel column
  T* pivots;                // [k] signed pivots p_s
  T* inverse_pivots;        // [k] 1 / u_s
  int* pivot_columns;       // [k] l_s
  int* column_map;          // [m] column in the next matrix, -1 for the pivot columns
  int* column_negated;      // [m] S(c) = -1
  int* status;              // set when a step finds no non-zero pivot
};

template <typename T>
size_t PanelSharedBytes(int k, int columns_per_block) {
  // slice, multipliers, own proposed columns (2 parities); pivot list; active and negated flags.
  return (static_cast<size_t>(k) * columns_per_block + 3 * static_cast<size_t>(k)) * sizeof(T) +
         static_cast<size_t>(k) * sizeof(int) + 2 * static_cast<size_t>(columns_per_block);
}

// Block b owns columns [b*w, b*w + w) of the panel and keeps them in shared memory for the whole
// pass. Per step each block proposes its best candidate with that column's panel values, all
// blocks meet at a barrier, and each picks the same winner from the proposals of the step's
// parity (double-buffered: a proposal is rewritten two steps later, after a barrier that every
// reader of the old one has passed). kCluster: the blocks form one thread-block cluster and read
// the proposals from each other's shared memory past a cluster barrier (about a microsecond a
// step); otherwise a cooperative grid exchanges them through L2 past a grid barrier.
template <class Field, bool kCluster>
__global__ void __launch_bounds__(kPanelThreads) PanelKernel(PanelArgs<Field> args) {
  using T = typename Field::Value;
  namespace cg = cooperative_groups;
  // Uniform across the blocks: *status is only written after a barrier, which no block passes
  // before every block has read it here.
  if (*args.status != 0) return;
  const Field& field = args.field;
  const int k = args.k;
  const int m = args.m;
  const int w = args.columns_per_block;
  const int blocks = static_cast<int>(gridDim.x);
  const int block = static_cast<int>(blockIdx.x);
  const int tid = static_cast<int>(threadIdx.x);
  const int first_column = block * w;
  const int width = max(0, min(w, m - first_column));

  extern __shared__ __align__(16) unsigned char shared[];
  T* slice = reinterpret_cast<T*>(shared);                             // [k][w]
  T* multipliers = slice + static_cast<size_t>(k) * w;                 // [k]
  T* proposed_columns = multipliers + k;                               // [2][k] (cluster exchange)
  int* pivot_list = reinterpret_cast<int*>(proposed_columns + 2 * k);  // [k]
  unsigned char* active = reinterpret_cast<unsigned char*>(pivot_list + k);  // [w]
  unsigned char* negated = active + w;                                       // [w]
  __shared__ PivotChoice proposals[2];                                       // (cluster exchange)
  __shared__ PivotChoice scratch[kPanelThreads / 32];

  // The exchange: where this block publishes, and how it reads the others' proposals.
  auto my_proposal = [&](int parity) -> PivotChoice* {
    return kCluster ? &proposals[parity] : args.candidates + parity * blocks + block;
  };
  auto my_column = [&](int parity) -> T* {
    return kCluster ? proposed_columns + parity * k
                    : args.candidate_columns + static_cast<int64_t>(parity * blocks + block) * k;
  };
  auto barrier = [&] {
    if constexpr (kCluster) {
      cg::this_cluster().sync();
    } else {
      cg::this_grid().sync();
    }
  };
  auto read_proposal = [&](int parity, int g) -> PivotChoice {
    if constexpr (kCluster) {
      return *cg::this_cluster().map_shared_rank(&proposals[parity], g);
    } else {
      const PivotChoice* p = args.candidates + parity * blocks + g;
      return {LoadFromL2(&p->score), LoadFromL2(&p->column), LoadFromL2(&p->negated)};
    }
  };
  auto read_column = [&](int parity, int owner, int r) -> T {
    if constexpr (kCluster) {
      return cg::this_cluster().map_shared_rank(proposed_columns + parity * k, owner)[r];
    } else {
      return LoadFromL2(args.candidate_columns + static_cast<int64_t>(parity * blocks + owner) * k +
                        r);
    }
  };

  // Thread t owns the columns t, t + kPanelThreads, ... of the block: it alone updates them and
  // their flags, so a step needs barriers only around the exchange.
  for (int c = tid; c < width; c += kPanelThreads) {
    for (int r = 0; r < k; ++r) {
      slice[r * w + c] = args.matrix[static_cast<int64_t>(r) * m + first_column + c];
    }
    active[c] = 1;
    negated[c] = 0;
  }

  for (int s = 0; s < k; ++s) {
    const int parity = s & 1;
    PivotChoice best = NoPivot();
    for (int c = tid; c < width; c += kPanelThreads) {
      if (!active[c]) continue;
      T v = slice[s * w + c];
      if (negated[c]) v = field.Negate(v);
      if (!field.IsZero(v)) {
        const PivotChoice candidate{field.PivotScore(v), first_column + c, negated[c]};
        if (Better(candidate, best)) best = candidate;
      }
    }
    // BlockBest's barrier also orders the last step's updates before the copies below.
    best = BlockBest(best, scratch);
    if (tid == 0) *my_proposal(parity) = best;
    if (best.column != kNoColumn) {
      const int c = best.column - first_column;
      T* column = my_column(parity);
      for (int r = s + tid; r < k; r += kPanelThreads) column[r] = slice[r * w + c];
    }
    barrier();  // orders the proposals before their reads, grid- or cluster-wide

    // Every warp finds the winner itself: no block barrier needed for it.
    PivotChoice chosen = NoPivot();
    for (int g = tid % 32; g < blocks; g += 32) {
      const PivotChoice proposal = read_proposal(parity, g);
      if (Better(proposal, chosen)) chosen = proposal;
    }
    chosen = WarpBest(chosen);
    if (chosen.column == kNoColumn) {  // the same for every block
      if (block == 0 && tid == 0) *args.status = 1;
      // A cluster's shared memory must outlive the other blocks' reads of it.
      if constexpr (kCluster) cg::this_cluster().sync();
      return;
    }
    const int owner = chosen.column / w;
    // Both loads before the inverse: one exchange latency, not two.
    const int r = s + 1 + tid;
    const T below = r < k ? read_column(parity, owner, r) : T{};
    const T u = read_column(parity, owner, s);
    const T inverse = field.Inverse(u);
    if (r < k) multipliers[r] = field.Mul(below, inverse);
    for (int later = r + kPanelThreads; later < k; later += kPanelThreads) {
      multipliers[later] = field.Mul(read_column(parity, owner, later), inverse);
    }
    if (tid == 0) {
      pivot_list[s] = chosen.column;
      if (block == 0) {
        args.pivots[s] = chosen.negated ? field.Negate(u) : u;
        args.inverse_pivots[s] = inverse;
        args.pivot_columns[s] = chosen.column;
      }
    }
    __syncthreads();  // multipliers
    for (int c = tid; c < width; c += kPanelThreads) {
      if (!active[c]) continue;
      const int column = first_column + c;
      if (column == chosen.column) {
        active[c] = 0;
        continue;
      }
      // Columns left of the pivot change sign (the condensation's j < l columns).
      if (column < chosen.column) negated[c] ^= 1;
      const T top = slice[s * w + c];
      // Four rows at a time, loads before stores: the compiler cannot reorder a load past a
      // store to shared memory that might alias it.
      int row = s + 1;
      for (; row + 4 <= k; row += 4) {
        T y[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) y[i] = slice[(row + i) * w + c];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          slice[(row + i) * w + c] = field.MulSub(y[i], multipliers[row + i], top);
        }
      }
      for (; row < k; ++row) {
        slice[row * w + c] = field.MulSub(slice[row * w + c], multipliers[row], top);
      }
    }
  }

  for (int c = tid; c < width; c += kPanelThreads) {
    const int column = first_column + c;
    for (int r = 0; r < k; ++r) {
      args.matrix[static_cast<int64_t>(r) * m + column] = slice[r * w + c];
    }
    int map = -1;
    if (active[c]) {
      int before = 0;
      for (int s = 0; s < k; ++s) before += pivot_list[s] < column ? 1 : 0;
      map = column - before;
    }
    args.column_map[column] = map;
    args.column_negated[column] = negated[c];
  }
  if constexpr (kCluster) cg::this_cluster().sync();
}

// ---- 2. The multipliers ----

// Largest k the multiplier kernel takes: two unknowns per lane.
inline constexpr int kMaxStepsPerPass = 64;
inline constexpr int kMultiplierWarps = 8;
inline constexpr int kMultiplierRowsPerWarp = 2;

template <typename T>
size_t MultiplierSharedBytes(int k) {
  return (static_cast<size_t>(k) * k + k) * sizeof(T) + static_cast<size_t>(k) * sizeof(int);
}

// multipliers[s][r] = f_{k+r, s} for the trailing rows r of the order-m matrix: one warp per row
// solves f U = y[l_.] with lane j holding unknowns j and j + 32, the panel's strictly upper U and
// the inverse pivots in shared memory. REQUIRES: k <= kMaxStepsPerPass.
template <class Field>
__global__ void __launch_bounds__(kMultiplierWarps * 32)
    MultiplierKernel(Field field, const typename Field::Value* __restrict__ matrix, int m, int k,
                     const int* __restrict__ pivot_columns,
                     const typename Field::Value* __restrict__ inverse_pivots,
                     typename Field::Value* __restrict__ multipliers, const int* status) {
  using T = typename Field::Value;
  if (*status != 0) return;
  extern __shared__ __align__(16) unsigned char shared[];
  T* u = reinterpret_cast<T*>(shared);               // [k][k], strictly upper
  T* inverse = u + static_cast<size_t>(k) * k;       // [k]
  int* pivot = reinterpret_cast<int*>(inverse + k);  // [k]
  const int tid = static_cast<int>(threadIdx.x);
  for (int s = tid; s < k; s += kMultiplierWarps * 32) {
    pivot[s] = pivot_columns[s];
    inverse[s] = inverse_pivots[s];
  }
  __syncthreads();
  for (int idx = tid; idx < k * k; idx += kMultiplierWarps * 32) {
    const int row = idx / k;
    const int col = idx - row * k;
    u[idx] = row < col ? matrix[static_cast<int64_t>(row) * m + pivot[col]] : T{};
  }
  __syncthreads();
  const int rows = m - k;
  const int lane = tid % 32;
  const int first =
      (static_cast<int>(blockIdx.x) * kMultiplierWarps + tid / 32) * kMultiplierRowsPerWarp;
  for (int r = first; r < min(rows, first + kMultiplierRowsPerWarp); ++r) {
    const T* row = matrix + static_cast<int64_t>(k + r) * m;
    T low = lane < k ? row[pivot[lane]] : T{};
    T high = lane + 32 < k ? row[pivot[lane + 32]] : T{};
    // Column-oriented forward substitution: once f_s is known, lane j > s subtracts f_s U[s][j];
    // afterwards lane j holds f_j.
    for (int s = 0; s < k; ++s) {
      const T f = field.Mul(ShuffleFrom(s < 32 ? low : high, s % 32), inverse[s]);
      if (lane == s) low = f;
      if (lane + 32 == s) high = f;
      if (lane > s && lane < k) low = field.MulSub(low, f, u[s * k + lane]);
      if (lane + 32 > s && lane + 32 < k) high = field.MulSub(high, f, u[s * k + lane + 32]);
    }
    if (lane < k) multipliers[static_cast<int64_t>(lane) * rows + r] = low;
    if (lane + 32 < k) multipliers[static_cast<int64_t>(lane + 32) * rows + r] = high;
  }
}

// ---- 3. The trailing update ----

// out[r][map(c)] = S(c) * (x[k+r][c] - sum_s multipliers[s][r] * x[s][c]) for the non-pivot
// columns c. Thread (tx, ty) of a 16 x 16 block owns rows ty + 16a and columns tx + 16b of the
// block's tile, so that each warp reads and writes 16 consecutive entries of two rows; the panel
// rows and multipliers are staged in shared memory kChunk steps at a time (all k of a pass, so
// that one barrier follows the loads, which overlap with those of the tile itself).
template <class Field, int kTileRows, int kTileCols, int kChunk>
__global__ void __launch_bounds__(kTrailingThreads)
    TrailingUpdateKernel(Field field, const typename Field::Value* __restrict__ matrix, int m,
                         int k, const typename Field::Value* __restrict__ multipliers,
                         const int* __restrict__ column_map, const int* __restrict__ column_negated,
                         typename Field::Value* __restrict__ out, const int* status) {
  using T = typename Field::Value;
  using Accumulator = typename Field::Accumulator;
  constexpr int kRows = 16 * kTileRows;
  constexpr int kCols = 16 * kTileCols;
  __shared__ T staged_multipliers[kChunk][kRows];
  __shared__ T staged_panel[kChunk][kCols];
  if (*status != 0) return;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % 16;
  const int ty = tid / 16;
  const int rows = m - k;
  const int row0 = static_cast<int>(blockIdx.y) * kRows;
  const int col0 = static_cast<int>(blockIdx.x) * kCols;

  T x[kTileRows][kTileCols];
  Accumulator acc[kTileRows][kTileCols];
#pragma unroll
  for (int a = 0; a < kTileRows; ++a) {
    const int r = row0 + ty + 16 * a;
#pragma unroll
    for (int b = 0; b < kTileCols; ++b) {
      const int c = col0 + tx + 16 * b;
      x[a][b] = r < rows && c < m ? matrix[static_cast<int64_t>(k + r) * m + c] : T{};
      acc[a][b] = field.Begin(x[a][b]);
    }
  }

  int since_reduction = 0;
  for (int s0 = 0; s0 < k; s0 += kChunk) {
    const int chunk = min(kChunk, k - s0);
    for (int idx = tid; idx < kChunk * kRows; idx += kTrailingThreads) {
      const int s = idx / kRows;
      const int rr = idx - s * kRows;
      staged_multipliers[s][rr] = s < chunk && row0 + rr < rows
                                      ? multipliers[static_cast<int64_t>(s0 + s) * rows + row0 + rr]
                                      : T{};
    }
    for (int idx = tid; idx < kChunk * kCols; idx += kTrailingThreads) {
      const int s = idx / kCols;
      const int cc = idx - s * kCols;
      staged_panel[s][cc] =
          s < chunk && col0 + cc < m ? matrix[static_cast<int64_t>(s0 + s) * m + col0 + cc] : T{};
    }
    __syncthreads();
    for (int s = 0; s < chunk; ++s) {
      T f[kTileRows];
      T y[kTileCols];
#pragma unroll
      for (int a = 0; a < kTileRows; ++a) f[a] = staged_multipliers[s][ty + 16 * a];
#pragma unroll
      for (int b = 0; b < kTileCols; ++b) y[b] = staged_panel[s][tx + 16 * b];
#pragma unroll
      for (int a = 0; a < kTileRows; ++a) {
#pragma unroll
        for (int b = 0; b < kTileCols; ++b) field.Accumulate(acc[a][b], f[a], y[b]);
      }
      if constexpr (Field::kDelayedReduction) {
        if (++since_reduction == field.reduce_every) {
          since_reduction = 0;
#pragma unroll
          for (int a = 0; a < kTileRows; ++a) {
#pragma unroll
            for (int b = 0; b < kTileCols; ++b) field.Normalize(acc[a][b]);
          }
        }
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int b = 0; b < kTileCols; ++b) {
    const int c = col0 + tx + 16 * b;
    if (c >= m) continue;
    const int map = column_map[c];
    if (map < 0) continue;
    const bool negate = column_negated[c] != 0;
#pragma unroll
    for (int a = 0; a < kTileRows; ++a) {
      const int r = row0 + ty + 16 * a;
      if (r < rows)
        out[static_cast<int64_t>(r) * rows + map] = field.Finish(acc[a][b], x[a][b], negate);
    }
  }
}

// ---- The schedule ----

// How one pass's panel runs: `blocks` blocks of `columns_per_block` columns, as one cluster or as
// a cooperative grid, with `steps` (k) steps.
struct PanelLaunch {
  bool cluster = false;
  int blocks = 0;
  int columns_per_block = 0;
  int steps = 0;
  size_t shared_bytes = 0;
};

// Prefers one cluster of up to kPanelMaxClusterBlocks blocks of at most kPanelClusterColumns
// columns each (fast barrier, exchange through shared memory) when its panel fits with all k
// steps; otherwise a cooperative grid of up to one block per multiprocessor (fewer steps only if
// even that does not fit, for orders far beyond the 2^28-entry limit).
inline constexpr int kPanelMaxClusterBlocks = 16;
inline constexpr int kPanelClusterColumns = 512;

template <class Field>
absl::StatusOr<PanelLaunch> PlanPanel(const cudaDeviceProp& properties, size_t shared_limit,
                                      int64_t m, int steps) {
  using T = typename Field::Value;
  PanelLaunch plan;
  plan.steps = static_cast<int>(std::min<int64_t>(steps, m));
  int cluster = 1;
  while (cluster < kPanelMaxClusterBlocks && (m + cluster - 1) / cluster > kPanelClusterColumns) {
    cluster *= 2;
  }
  plan.columns_per_block = static_cast<int>((m + cluster - 1) / cluster);
  plan.shared_bytes = PanelSharedBytes<T>(plan.steps, plan.columns_per_block);
  if (plan.shared_bytes <= shared_limit) {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute = {};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(static_cast<unsigned>(cluster));
    config.blockDim = dim3(kPanelThreads);
    config.dynamicSmemBytes = plan.shared_bytes;
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(
        cudaOccupancyMaxActiveClusters(&clusters, &PanelKernel<Field, true>, &config));
    if (clusters > 0) {
      plan.cluster = true;
      plan.blocks = cluster;
      return plan;
    }
  }
  const int sms = properties.multiProcessorCount;
  plan.blocks =
      static_cast<int>(std::min<int64_t>(sms, (m + kPanelMinColumns - 1) / kPanelMinColumns));
  plan.columns_per_block = static_cast<int>((m + plan.blocks - 1) / plan.blocks);
  plan.blocks = static_cast<int>((m + plan.columns_per_block - 1) / plan.columns_per_block);
  plan.shared_bytes = PanelSharedBytes<T>(plan.steps, plan.columns_per_block);
  while (plan.shared_bytes > shared_limit && plan.steps > 1) {
    plan.steps = (plan.steps + 1) / 2;
    plan.shared_bytes = PanelSharedBytes<T>(plan.steps, plan.columns_per_block);
  }
  int resident = 0;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &resident, &PanelKernel<Field, false>, kPanelThreads, plan.shared_bytes));
  if (plan.shared_bytes > shared_limit || resident * sms < plan.blocks) {
    return absl::ResourceExhaustedError(
        absl::StrCat("condensation panel of order ", m, " does not fit on the device (",
                     plan.blocks, " blocks of ", plan.shared_bytes, " bytes of shared memory)"));
  }
  return plan;
}

// Condenses the n x n row-major matrix in `matrix` (overwritten) down to its n pivots, up to
// max_steps k per pass. Adds the work to *stats.
template <class Field>
absl::StatusOr<EliminationOutcome<typename Field::Value>> BlockedElimination(
    DeviceContext& context, DeviceBuffer& matrix, int64_t n, const Field& field,
    JobControl* control, EliminationWork* stats, int max_steps = BlockedShape<Field>::kSteps) {
  using T = typename Field::Value;
  using Shape = BlockedShape<Field>;
  constexpr int kRows = 16 * Shape::kTileRows;
  constexpr int kCols = 16 * Shape::kTileCols;
  const auto cluster_panel_kernel = &PanelKernel<Field, true>;
  const auto grid_panel_kernel = &PanelKernel<Field, false>;
  const auto multiplier_kernel = &MultiplierKernel<Field>;
  const auto trailing_kernel =
      &TrailingUpdateKernel<Field, Shape::kTileRows, Shape::kTileCols, Shape::kSteps>;

  const cudaStream_t stream = context.stream();
  const int sms = context.properties().multiProcessorCount;
  // Dynamic shared memory the panel may use: the opt-in limit less room for its static arrays.
  const size_t shared_limit = context.properties().sharedMemPerBlockOptin - 1024;
  const int steps = std::clamp(max_steps, 1, kMaxStepsPerPass);
  for (const auto kernel : {cluster_panel_kernel, grid_panel_kernel}) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_limit)));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      cluster_panel_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(multiplier_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(MultiplierSharedBytes<T>(steps))));

  const size_t order = static_cast<size_t>(n - 1);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer other,
                           context.Allocate(std::max<size_t>(order * order, 1) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(
      DeviceBuffer multipliers,
      context.Allocate(static_cast<size_t>(steps) * static_cast<size_t>(n) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer columns,
                           context.Allocate(2 * static_cast<size_t>(n) * sizeof(int)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer candidates,
                           context.Allocate(2 * static_cast<size_t>(sms) * sizeof(PivotChoice)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer candidate_columns,
                           context.Allocate(2 * static_cast<size_t>(sms) * steps * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivots,
                           context.Allocate(static_cast<size_t>(n) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer inverse_pivots,
                           context.Allocate(static_cast<size_t>(steps) * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pivot_columns,
                           context.Allocate(static_cast<size_t>(steps) * sizeof(int)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer status, context.Allocate(sizeof(int)));
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(status.data(), 0, sizeof(int), stream));
  MATRIXD_ASSIGN_OR_RETURN(CheckInPacer pacer, CheckInPacer::Create());

  T* current = matrix.as<T>();
  T* next = other.as<T>();
  int* column_map = columns.as<int>();
  int* column_negated = column_map + n;
  int64_t done = 0;
  int64_t checked = 0;
  for (int64_t m = n; m > 0;) {
    MATRIXD_ASSIGN_OR_RETURN(PanelLaunch plan,
                             PlanPanel<Field>(context.properties(), shared_limit, m, steps));
    const int k = plan.steps;
    PanelArgs<Field> args{field,
                          current,
                          static_cast<int>(m),
                          k,
                          plan.columns_per_block,
                          candidates.as<PivotChoice>(),
                          candidate_columns.as<T>(),
                          pivots.as<T>() + done,
                          inverse_pivots.as<T>(),
                          pivot_columns.as<int>(),
                          column_map,
                          column_negated,
                          status.as<int>()};
    if (plan.cluster) {
      cudaLaunchConfig_t config = {};
      cudaLaunchAttribute attribute = {};
      attribute.id = cudaLaunchAttributeClusterDimension;
      attribute.val.clusterDim.x = static_cast<unsigned>(plan.blocks);
      attribute.val.clusterDim.y = 1;
      attribute.val.clusterDim.z = 1;
      config.gridDim = dim3(static_cast<unsigned>(plan.blocks));
      config.blockDim = dim3(kPanelThreads);
      config.dynamicSmemBytes = plan.shared_bytes;
      config.stream = stream;
      config.attrs = &attribute;
      config.numAttrs = 1;
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaLaunchKernelEx(&config, cluster_panel_kernel, args));
    } else {
      void* kernel_args[] = {&args};
      MATRIXD_CUDA_RETURN_IF_ERROR(
          cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(grid_panel_kernel),
                                      dim3(static_cast<unsigned>(plan.blocks)), dim3(kPanelThreads),
                                      kernel_args, plan.shared_bytes, stream));
    }
    stats->bytes_moved += 2 * static_cast<uint64_t>(k) * m * sizeof(T);

    const int64_t rows = m - k;
    if (rows > 0) {
      constexpr int kRowsPerBlock = kMultiplierWarps * kMultiplierRowsPerWarp;
      multiplier_kernel<<<static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock),
                          kMultiplierWarps * 32, MultiplierSharedBytes<T>(k), stream>>>(
          field, current, static_cast<int>(m), k, pivot_columns.as<int>(), inverse_pivots.as<T>(),
          multipliers.as<T>(), status.as<int>());
      MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(multiplier_kernel);
      const dim3 grid(static_cast<unsigned>((m + kCols - 1) / kCols),
                      static_cast<unsigned>((rows + kRows - 1) / kRows));
      trailing_kernel<<<grid, kTrailingThreads, 0, stream>>>(
          field, current, static_cast<int>(m), k, multipliers.as<T>(), column_map, column_negated,
          next, status.as<int>());
      MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(trailing_kernel);
      std::swap(current, next);
      // The trailing rows read and the next matrix written; the multipliers, written and read.
      stats->bytes_moved +=
          static_cast<uint64_t>(rows * m + rows * rows + 3 * rows * k) * sizeof(T);
    }
    stats->flops += Field::kFlopsPerUpdate * CondensedEntries(m, rows);
    done += k;
    m = rows;
    if (m > 0 && done - checked >= kStepsPerCheckIn) {
      checked = done;
      MATRIXD_RETURN_IF_ERROR(pacer.CheckIn(stream, control, EliminationProgress(m, n)));
    }
  }
  return CollectOutcome<T>(context, status, pivots, n);
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_BLOCKED_ELIMINATION_CUH_
