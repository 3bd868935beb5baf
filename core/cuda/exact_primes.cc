#include "core/cuda/exact_primes.h"

#include <random>
#include <system_error>

#include "core/cuda/exact_determinant.h"

namespace matrixd::cuda {

ExactPrimes::ExactPrimes(int ahead)
    : source_(kExactPrimeLow, kExactPrimeHigh, std::random_device{}()) {
  ahead_.reserve(static_cast<size_t>(ahead > 0 ? ahead : 0));
  // Only this thread touches source_ and ahead_ until Join(). Where no thread can be had, every
  // prime is drawn on demand instead.
  try {
    drawing_ = std::thread([this, ahead] {
      for (int i = 0; i < ahead; ++i) ahead_.push_back(source_.Next());
    });
  } catch (const std::system_error&) {
  }
}

ExactPrimes::~ExactPrimes() { Join(); }

void ExactPrimes::Join() {
  if (drawing_.joinable()) drawing_.join();
}

uint64_t ExactPrimes::Next() {
  Join();
  const uint64_t prime = taken_ < ahead_.size() ? ahead_[taken_] : source_.Next();
  ++taken_;
  return prime;
}

}  // namespace matrixd::cuda
