// The binary reflected Gray code, for walks over all subsets that change one element per step
// (Ryser's and Glynn's permanent formulas).
#ifndef MATRIXD_CORE_CPU_GRAY_CODE_H_
#define MATRIXD_CORE_CPU_GRAY_CODE_H_

#include <bit>
#include <cstdint>

namespace matrixd::cpu {

// The i-th Gray code: GrayCode(i - 1) and GrayCode(i) differ in exactly one bit.
constexpr uint64_t GrayCode(uint64_t i) { return i ^ (i >> 1); }

// The bit that differs between GrayCode(i - 1) and GrayCode(i). REQUIRES: i > 0. Each step adds
// or removes one element, so the number of set bits of GrayCode(i) has the parity of i.
constexpr int GrayCodeFlipBit(uint64_t i) { return std::countr_zero(i); }

}  // namespace matrixd::cpu

#endif  // MATRIXD_CORE_CPU_GRAY_CODE_H_
