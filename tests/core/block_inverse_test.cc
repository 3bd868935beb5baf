// The inverse of a factored diagonal block mod p (core/cuda/block_inverse.h), the arithmetic the
// GPU's modular LU applies as matrix products instead of triangular solves, run on the host
// against 128-bit integer arithmetic: the same per-entry code the kernel runs (no GPU needed).
// Also the block forward substitution of core/cuda/modular_lu.cc (ApplyInverse) on a panel of two
// leaves, modelled with the same inverses.
#include "core/cuda/block_inverse.h"

#include <cstdint>
#include <random>
#include <vector>

#include "core/cuda/balanced_residue.h"
#include "gtest/gtest.h"

namespace matrixd::cuda {
namespace {

__extension__ typedef __int128 Int128;

int64_t Balanced(Int128 x, uint64_t p) {
  Int128 r = x % static_cast<Int128>(p);
  if (r < 0) r += p;
  if (r > static_cast<Int128>(p / 2)) r -= p;
  return static_cast<int64_t>(r);
}

// A square matrix of balanced residues, row-major.
struct Square {
  int order = 0;
  std::vector<double> at;
  double& operator()(int i, int j) { return at[i * order + j]; }
  double operator()(int i, int j) const { return at[i * order + j]; }
};

// a (r x k) times b (k x c), row-major, reduced exactly.
std::vector<double> Multiply(const std::vector<double>& a, const std::vector<double>& b, int r,
                             int k, int c, uint64_t p) {
  std::vector<double> out(static_cast<size_t>(r) * c);
  for (int i = 0; i < r; ++i) {
    for (int j = 0; j < c; ++j) {
      Int128 sum = 0;
      for (int t = 0; t < k; ++t) {
        sum += static_cast<Int128>(a[i * k + t]) * static_cast<Int128>(b[t * c + j]);
      }
      out[i * c + j] = static_cast<double>(Balanced(sum, p));
    }
  }
  return out;
}

// Random factors of a w x w block: L unit lower and U upper with an invertible diagonal, packed
// as the leaf kernel leaves them; `extreme` takes every entry at +-p/2 (the largest sums).
struct Factors {
  std::vector<double> lu;
  std::vector<double> inverse_diagonal;
  std::vector<double> l;  // unpacked, for the reference product
  std::vector<double> u;
};

Factors RandomFactors(int w, uint64_t p, bool extreme, std::mt19937_64& rng) {
  const BalancedModulus f = BalancedModulus::Of(p);
  const double half = static_cast<double>(p / 2);
  auto entry = [&]() {
    const double x = extreme ? (rng() % 2 == 0 ? half : -half)
                             : static_cast<double>(Balanced(static_cast<Int128>(rng() % p), p));
    return x;
  };
  Factors out;
  out.lu.assign(static_cast<size_t>(w) * w, 0.0);
  out.l.assign(out.lu.size(), 0.0);
  out.u.assign(out.lu.size(), 0.0);
  out.inverse_diagonal.assign(w, 0.0);
  for (int i = 0; i < w; ++i) {
    for (int j = 0; j < w; ++j) {
      double x = entry();
      if (i == j && x == 0.0) x = 1.0;
      out.lu[i * w + j] = x;
      if (i > j) out.l[i * w + j] = x;
      if (i <= j) out.u[i * w + j] = x;
    }
    out.l[i * w + i] = 1.0;
    out.inverse_diagonal[i] = f.Inverse(out.lu[i * w + i]);
  }
  return out;
}

std::vector<double> Inverse(const Factors& factors, int w, uint64_t p) {
  std::vector<double> work(static_cast<size_t>(w) * w);
  std::vector<double> out(static_cast<size_t>(w) * w);
  InvertFactoredBlock(BalancedModulus::Of(p), factors.lu.data(), w, factors.inverse_diagonal.data(),
                      w, work.data(), out.data(), w);
  return out;
}

std::vector<uint64_t> Primes() { return {2, 3, 65521, 16777259, 2147483629, 4294967291}; }

TEST(BlockInverse, InverseOfLuIsTheInverseModP) {
  std::mt19937_64 rng(11);
  for (const uint64_t p : Primes()) {
    for (const int w : {1, 2, 7, 33, 64}) {
      for (const bool extreme : {false, true}) {
        const Factors factors = RandomFactors(w, p, extreme, rng);
        const std::vector<double> d = Multiply(factors.l, factors.u, w, w, w, p);
        const std::vector<double> inverse = Inverse(factors, w, p);
        const std::vector<double> identity = Multiply(d, inverse, w, w, w, p);
        for (int i = 0; i < w; ++i) {
          for (int j = 0; j < w; ++j) {
            ASSERT_LE(std::abs(inverse[i * w + j]), static_cast<double>(p / 2));
            ASSERT_EQ(Balanced(static_cast<Int128>(identity[i * w + j]), p), i == j ? 1 : 0)
                << "p=" << p << " w=" << w << " extreme=" << extreme << " at " << i << "," << j;
          }
        }
      }
    }
  }
}

// The leaf kernel's blocked inverse (8 x 8 diagonal blocks, then three levels of products, the
// kernel's steps in its order) equals the row sweeps' entry for entry mod p, at every order (those
// below 64 padded with the identity) and at the extreme entries (the largest piece sums).
TEST(BlockInverse, BlockedInverseEqualsTheSweeps) {
  std::mt19937_64 rng(13);
  for (const uint64_t p : Primes()) {
    const BalancedModulus f = BalancedModulus::Of(p);
    for (const int w : {1, 2, 7, 8, 9, 16, 17, 33, 63, 64}) {
      for (const bool extreme : {false, true}) {
        const Factors factors = RandomFactors(w, p, extreme, rng);
        const std::vector<double> sweeps = Inverse(factors, w, p);
        std::vector<double> blocked(static_cast<size_t>(w) * w, 7.0);
        InvertFactoredBlockBlocked(f, factors.lu.data(), w, factors.inverse_diagonal.data(), w,
                                   blocked.data(), w);
        for (int e = 0; e < w * w; ++e) {
          // Equal mod p (for p = 2 both 1 and -1 are balanced).
          ASSERT_LE(std::abs(blocked[e]), static_cast<double>(p / 2));
          ASSERT_EQ(Balanced(static_cast<Int128>(blocked[e]), p),
                    Balanced(static_cast<Int128>(sweeps[e]), p))
              << "p=" << p << " w=" << w << " extreme=" << extreme << " entry " << e;
        }
      }
    }
  }
}

// The base blocks' forward substitution and the levels' products on a unit lower triangular
// matrix read through either triangle (the kernel inverts L and the transposed unit upper
// factor side by side in one array): both give the inverse mod p.
TEST(BlockInverse, TriangleViewsReadBothTriangles) {
  const uint64_t p = 2147483629;
  const BalancedModulus f = BalancedModulus::Of(p);
  std::mt19937_64 rng(14);
  constexpr int n = kBlockedInverseOrder;
  std::vector<double> lower(n * n, 0.0);
  std::vector<double> upper(n * n, 0.0);  // lower's transpose
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      lower[i * n + j] = static_cast<double>(Balanced(static_cast<Int128>(rng() % p), p));
      upper[j * n + i] = lower[i * n + j];
    }
  }
  for (const bool transposed : {false, true}) {
    std::vector<double> x = transposed ? upper : lower;
    std::vector<double> y(n * n, 0.0);
    const StrictLowerView xv =
        transposed ? UpperTriangleOf(x.data(), n) : LowerTriangleOf(x.data(), n);
    const StrictLowerView yv =
        transposed ? UpperTriangleOf(y.data(), n) : LowerTriangleOf(y.data(), n);
    for (int col = 0; col < n; ++col) {
      InvertBaseBlockColumn(f, xv, yv, col - col % kTriangularBaseOrder,
                            col % kTriangularBaseOrder);
    }
    std::vector<double> coupling(kCouplingWords);
    for (int level = 0; level < kBlockedLevels; ++level) {
      const int s = LevelOrder(level);
      for (int first = 0; first < n; first += 2 * s) {
        for (int e = 0; e < s * s; ++e) {
          coupling[e] = CouplingTimesInverse(f, xv, yv, first, s, e / s, e % s);
        }
        for (int e = 0; e < s * s; ++e) {
          yv(first + s + e / s, first + e % s) =
              LowerLeftOfInverse(f, yv, coupling.data(), first, s, e / s, e % s);
        }
      }
    }
    // Unpacked: L (unit diagonal) times its inverse is the identity.
    std::vector<double> l(n * n, 0.0);
    std::vector<double> inverse(n * n, 0.0);
    for (int i = 0; i < n; ++i) {
      l[i * n + i] = 1.0;
      inverse[i * n + i] = 1.0;
      for (int j = 0; j < i; ++j) {
        l[i * n + j] = lower[i * n + j];
        inverse[i * n + j] = yv(i, j);
        ASSERT_LE(std::abs(yv(i, j)), static_cast<double>(p / 2));
      }
    }
    const std::vector<double> identity = Multiply(l, inverse, n, n, n, p);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        ASSERT_EQ(Balanced(static_cast<Int128>(identity[i * n + j]), p), i == j ? 1 : 0)
            << "transposed=" << transposed << " at " << i << "," << j;
      }
    }
  }
}

// ApplyInverse and the trailing update for a panel of two leaves: with D = [D11 D12; D21 D22],
// D11 = L1 U1 and the Schur complement S = D22 - D21 D11^-1 D12 = L2 U2 factored, the block forward
// substitution gives Y1 = D11^-1 B1 and Y2 = S^-1 (B2 - D21 Y1), and the rows below, whose second
// block column was updated in the panel (C2' = C2 - C1 D11^-1 D12), take C1 Y1 + C2' Y2 = C D^-1 B,
// the Schur complement's term: D^-1 B = [Y1 - D11^-1 D12 Y2; Y2].
TEST(BlockInverse, PanelUpdateIsTheSchurComplement) {
  std::mt19937_64 rng(12);
  const int w = 64;
  const int h = 2 * w;
  const int cols = 5;
  for (const uint64_t p : {uint64_t{65521}, uint64_t{2147483629}, uint64_t{4294967291}}) {
    auto random = [&](int count) {
      std::vector<double> v(count);
      for (double& x : v) x = static_cast<double>(Balanced(static_cast<Int128>(rng() % p), p));
      return v;
    };
    const Factors first = RandomFactors(w, p, false, rng);
    const Factors second = RandomFactors(w, p, false, rng);
    const std::vector<double> d11 = Multiply(first.l, first.u, w, w, w, p);
    const std::vector<double> s = Multiply(second.l, second.u, w, w, w, p);
    const std::vector<double> d12 = random(w * w);
    const std::vector<double> d21 = random(w * w);
    const std::vector<double> inverse1 = Inverse(first, w, p);
    const std::vector<double> inverse2 = Inverse(second, w, p);
    // D22 = S + D21 D11^-1 D12.
    const std::vector<double> correction =
        Multiply(d21, Multiply(inverse1, d12, w, w, w, p), w, w, w, p);
    Square d{h, std::vector<double>(static_cast<size_t>(h) * h)};
    for (int i = 0; i < w; ++i) {
      for (int j = 0; j < w; ++j) {
        d(i, j) = d11[i * w + j];
        d(i, w + j) = d12[i * w + j];
        d(w + i, j) = d21[i * w + j];
        d(w + i, w + j) = static_cast<double>(Balanced(
            static_cast<Int128>(s[i * w + j]) + static_cast<Int128>(correction[i * w + j]), p));
      }
    }
    const std::vector<double> b = random(h * cols);
    const std::vector<double> b1(b.begin(), b.begin() + w * cols);
    const std::vector<double> b2(b.begin() + w * cols, b.end());
    const std::vector<double> y1 = Multiply(inverse1, b1, w, w, cols, p);
    const std::vector<double> t = Multiply(d21, y1, w, w, cols, p);
    std::vector<double> rest(b2.size());
    for (size_t e = 0; e < rest.size(); ++e) {
      rest[e] =
          static_cast<double>(Balanced(static_cast<Int128>(b2[e]) - static_cast<Int128>(t[e]), p));
    }
    const std::vector<double> y2 = Multiply(inverse2, rest, w, w, cols, p);
    // Z = D^-1 B solves D Z = B.
    const std::vector<double> v = Multiply(Multiply(inverse1, d12, w, w, w, p), y2, w, w, cols, p);
    std::vector<double> z(y1);
    for (size_t e = 0; e < z.size(); ++e) {
      z[e] =
          static_cast<double>(Balanced(static_cast<Int128>(y1[e]) - static_cast<Int128>(v[e]), p));
    }
    z.insert(z.end(), y2.begin(), y2.end());
    const std::vector<double> back = Multiply(d.at, z, h, h, cols, p);
    for (size_t e = 0; e < b.size(); ++e) {
      ASSERT_EQ(Balanced(static_cast<Int128>(back[e]), p), Balanced(static_cast<Int128>(b[e]), p))
          << "p=" << p << " entry " << e;
    }
  }
}

// The kernel splits each dot product over threads: the parts' exact sums add up to the whole.
TEST(BlockInverse, PartsOfAPieceDotAddUpExactly) {
  const uint64_t p = 4294967291;
  const double half = static_cast<double>(p / 2);
  std::vector<double> row(kMaxPieceDotLength, half);
  std::vector<double> column(kMaxPieceDotLength, -half);
  const PieceSums whole = PieceDot(row.data(), column.data(), 1, 0, kMaxPieceDotLength, 1);
  for (const int step : {2, 4, 8}) {
    PieceSums sum;
    for (int part = 0; part < step; ++part) {
      const PieceSums s = PieceDot(row.data(), column.data(), 1, part, kMaxPieceDotLength, step);
      sum.low += s.low;
      sum.high += s.high;
    }
    EXPECT_EQ(sum.low, whole.low);
    EXPECT_EQ(sum.high, whole.high);
  }
  const BalancedModulus f = BalancedModulus::Of(p);
  const Int128 exact = static_cast<Int128>(kMaxPieceDotLength) * static_cast<Int128>(half) *
                       static_cast<Int128>(-half);
  EXPECT_EQ(static_cast<int64_t>(CombinePieces(f, whole, 0.0)), Balanced(exact, p));
}

}  // namespace
}  // namespace matrixd::cuda
