#include "core/exact_certificate.h"

#include <cmath>
#include <utility>

namespace matrixd {

ExactCertificate ResidueCertificate(std::string method, uint64_t p, uint64_t residue) {
  return ExactCertificate{.method = std::move(method), .primes = {p}, .residues = {residue}};
}

ExactCertificate MultimodularCertificate(std::string method, std::vector<uint64_t> primes,
                                         std::vector<uint64_t> residues, double bound_bits) {
  double covered_bits = -1.0;  // the sign takes one bit of the product
  for (const uint64_t p : primes) covered_bits += std::log2(static_cast<double>(p));
  return ExactCertificate{.method = std::move(method),
                          .primes = std::move(primes),
                          .residues = std::move(residues),
                          .bound_bits = bound_bits,
                          .covered_bits = covered_bits};
}

ExactCertificate ZeroRowCertificate() { return ExactCertificate{.method = "zero row"}; }

}  // namespace matrixd
