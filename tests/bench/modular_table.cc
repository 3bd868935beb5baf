// det mod p of one random INT64 matrix: our GPU backend (blocked modular LU,
// core/cuda/modular_lu.h) and our CPU backend next to NTL's zz_p determinant on one core, with the
// residues checked against each other.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/resident_matrix.h"
#include "tests/bench/bench_format.h"
#include "tests/bench/bench_inputs.h"
#include "tests/bench/bench_tables.h"
#include "tests/bench/bench_timing.h"
#include "tests/bench/ntl_determinant.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/modular_lu.h"
#include "core/cuda/pinned_staging.h"
#endif

namespace matrixd::bench {
namespace {

constexpr int64_t kEntryBound = 1000000000;  // entries in [-10^9, 10^9]

// Our backend's det mod p: the timing, and the residue and device phases of the last run.
struct OurResidue {
  Timing timing;
  std::optional<uint64_t> residue;
  std::vector<KernelRecord> phases;
};

OurResidue OursModP(Backend& backend, const MatrixView& a, uint64_t p, int warm_up, int runs) {
  DeterminantOptions options;
  options.modulus = p;  // method AUTO: the GPU takes the blocked modular LU
  OurResidue ours;
  ours.timing = TimeRuns(warm_up, runs, [&] {
    absl::StatusOr<DeterminantResult> result = backend.Determinant(a, options, nullptr);
    if (result.ok()) {
      ours.residue = result->residue;
      ours.phases = result->stats.kernels;
    }
    return result;
  });
  return ours;
}

// det mod p of `a` copied first into a resident matrix on the backend's device (as a matrix kept
// on the server and named by its handle): the operation reads it there, no host pass or upload.
// An error in timing.error where the backend keeps no resident matrices or would read it on the
// host.
OurResidue OursModPResident(Backend& backend, const Matrix& a, uint64_t p, int runs) {
  OurResidue ours;
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> resident =
      backend.AllocateResident(a.rows(), a.cols(), a.dtype(), 0);
  absl::Status status = resident.status();
  if (status.ok()) status = (*resident)->Write(0, {a.bytes(), a.byte_size()});
  if (status.ok()) status = (*resident)->Flush();
  if (status.ok() && !backend.DeterminantReadsOnDevice((*resident)->view(), {.modulus = p})) {
    status = absl::FailedPreconditionError("the backend reads such an operand on the host");
  }
  if (!status.ok()) {
    ours.timing.error = std::string(status.ToString());
    return ours;
  }
  return OursModP(backend, (*resident)->view(), p, 1, runs);
}

// The host threads of the pinned staging from here on (--staging_threads; 0: the default);
// nothing in a build without CUDA.
void SetStagingThreads([[maybe_unused]] int threads) {
#ifdef MATRIXD_HAVE_CUDA
  cuda::PinnedStaging::SetHostThreads(threads > 0 ? threads
                                                  : cuda::PinnedStaging::DefaultHostThreads());
#endif
}

// One GPU row's settings: look-ahead (--modp_look_ahead), the host threads of the pinned staging
// (--staging_threads; 0: the default), the overlap of the upload with the factorization and its
// rows per piece (--modp_overlap, --modp_piece_rows; 0: the default).
struct GpuSetting {
  bool look_ahead = true;
  int threads = 0;
  bool overlap = true;
  int piece_rows = 0;
};

// Every combination of the flags' GPU settings (one default row without a GPU).
std::vector<GpuSetting> GpuSettings(const Flags& flags, bool gpu) {
  if (!gpu) return {GpuSetting{}};
  const std::vector<int> thread_counts =
      flags.staging_threads.empty() ? std::vector<int>{0} : flags.staging_threads;
  std::vector<GpuSetting> settings;
  for (const int look_ahead : flags.modp_look_ahead) {
    for (const int threads : thread_counts) {
      for (const int overlap : flags.modp_overlap) {
        for (const int piece_rows : flags.modp_piece_rows) {
          settings.push_back({look_ahead != 0, threads, overlap != 0, piece_rows});
        }
      }
    }
  }
  return settings;
}

// The GPU's factorizations from here on take `setting`'s look-ahead and overlap; nothing in a
// build without CUDA.
void SetModularTuning([[maybe_unused]] const GpuSetting& setting) {
#ifdef MATRIXD_HAVE_CUDA
  cuda::SetModularLuTuning({.look_ahead = setting.look_ahead,
                            .overlap = setting.overlap,
                            .piece_rows = setting.piece_rows});
#endif
}

// "match" when every residue present agrees, else all of them.
std::string Agreement(const std::vector<std::pair<const char*, std::optional<uint64_t>>>& all) {
  std::optional<uint64_t> first;
  bool agree = true;
  int present = 0;
  std::string listing;
  for (const auto& [who, residue] : all) {
    if (!residue) continue;
    ++present;
    if (first && *first != *residue) agree = false;
    if (!first) first = residue;
    absl::StrAppend(&listing, listing.empty() ? "" : " ", who, "=", *residue);
  }
  if (present < 2) return "- (nothing to compare)";
  return agree ? "match" : "MISMATCH: " + listing;
}

}  // namespace

void BenchModularDeterminant(const Flags& flags, Backend* gpu, Backend* cpu) {
  const bool ntl = flags.ntl && NtlAvailable();
  // The CPU backend's blocked LU takes several seconds at n = 4096 for primes above 2^26.
  std::vector<int> sizes = {flags.ntl_n};
  if (cpu != nullptr && flags.cpu_modular_n > 0 && flags.cpu_modular_n < flags.ntl_n) {
    sizes.insert(sizes.begin(), flags.cpu_modular_n);
  }
  PrintHeader(
      "Determinant mod p, int64: ours vs NTL on one core",
      "n      p            ours GPU(s)  NTL(s)     NTL/GPU   ours CPU(s)  NTL/CPU   residues",
      {"ours GPU: backend call, method AUTO (upload + residues + blocked modular LU: balanced "
       "float64 residues and DGEMM trailing updates for p < 2^32, on two 16-bit pieces from "
       "~2^24; uint64 Barrett elimination above 2^32); median of --repeats after a warm-up",
       "GPU phases (p < 2^32): device time of the last run's upload + residues, panels (leaves, "
       "row moves, products with the leaf inverses), trailing DGEMMs (with the split into pieces), "
       "reductions, and the whole factorization (factor); with look-ahead the panels run beside "
       "the trailing updates on a second stream, so those phases overlap (--modp_look_ahead=1,0 "
       "gives a row each); total: the whole call's device time (upload included); with the "
       "overlap (--modp_overlap=1,0) the factorization runs while the matrix arrives in pieces of "
       "--modp_piece_rows rows (0: a pinned chunk's worth), so residues and factor overlap",
       cpu == nullptr ? std::string("ours CPU: not run (--no_cpu)")
                      : absl::StrCat("ours CPU: the CPU backend (blocked LU, panels of 128: "
                                     "float64 residues and OpenBLAS dgemm for p < 2^32, two "
                                     "products on 16-bit halves from 2^25; uint64 with 128-bit "
                                     "accumulators above 2^32; all ",
                                     std::thread::hardware_concurrency(),
                                     " hardware threads), one run, only for n <= "
                                     "--cpu_modular_n = ",
                                     flags.cpu_modular_n),
       absl::StrCat(
           "NTL: zz_p::init(p) + mat_zz_p + determinant(), ",
           ntl ? NtlDescription() : "not run (" + (flags.ntl ? NtlDescription() : "--no_ntl") + ")",
           ", one run, conversion not timed"),
       "resident operand: the same call on the matrix already in device memory (a resident "
       "matrix's view, as the server passes a kept matrix named by its handle): no host pass "
       "over the int64 entries and no upload",
       absl::StrCat("entries uniform in [-", kEntryBound, ", ", kEntryBound,
                    "]; target: NTL/GPU >= 1000 at n = 4096, p < 2^31")});
  for (const int n : sizes) {
    const Matrix a = RandomInt64Matrix(n, kEntryBound, 400 + n);
    for (const uint64_t p : flags.primes) {
      OurResidue on_cpu;
      if (cpu != nullptr && n <= flags.cpu_modular_n) on_cpu = OursModP(*cpu, a.view(), p, 0, 1);
      std::optional<uint64_t> ntl_residue;
      double ntl_seconds = NAN;
      std::string ntl_error;
      if (ntl) {
        absl::StatusOr<NtlDeterminant> reference = NtlDeterminantModP(a.view(), p);
        if (reference.ok()) {
          ntl_residue = reference->residue;
          ntl_seconds = reference->seconds;
        } else {
          ntl_error = std::string(reference.status().ToString());
        }
      }
      // One row per combination of the GPU settings (the first one's is the table's usual row).
      for (const GpuSetting& setting : GpuSettings(flags, gpu != nullptr)) {
        OurResidue on_gpu;
        if (gpu != nullptr) {
          SetModularTuning(setting);
          SetStagingThreads(setting.threads);
          on_gpu = OursModP(*gpu, a.view(), p, 1, flags.repeats);
        }
        std::printf(
            "%-6d %-12llu %-12s %-10s %-9s %-12s %-9s %s\n", n, static_cast<unsigned long long>(p),
            Seconds(on_gpu.timing.seconds).c_str(), Seconds(ntl_seconds).c_str(),
            Ratio(ntl_seconds, on_gpu.timing.seconds).c_str(),
            Seconds(on_cpu.timing.seconds).c_str(),
            Ratio(ntl_seconds, on_cpu.timing.seconds).c_str(),
            Agreement({{"gpu", on_gpu.residue}, {"ntl", ntl_residue}, {"cpu", on_cpu.residue}})
                .c_str());
        if (!on_gpu.phases.empty()) {
          std::string phases;
          for (const KernelRecord& phase : on_gpu.phases) {
            absl::StrAppend(&phases, phases.empty() ? "" : ", ", phase.kernel, " ",
                            Seconds(phase.seconds));
          }
          std::printf(
              "  GPU phases (look-ahead %s, staging threads %s, overlap %s, piece rows %s): %s\n",
              setting.look_ahead ? "on" : "off",
              setting.threads > 0 ? std::to_string(setting.threads).c_str() : "default",
              setting.overlap ? "on" : "off",
              setting.piece_rows > 0 ? std::to_string(setting.piece_rows).c_str() : "default",
              phases.c_str());
        }
        if (!on_gpu.timing.error.empty()) {
          std::printf("  GPU failed: %s\n", on_gpu.timing.error.c_str());
        }
      }
      SetModularTuning(GpuSetting{});
      SetStagingThreads(0);
      if (gpu != nullptr) {
        const OurResidue resident = OursModPResident(*gpu, a, p, flags.repeats);
        std::printf(
            "  resident operand (the int64 matrix already on the GPU, as a kept matrix's "
            "handle): GPU %s, NTL/GPU %s, %s\n",
            Seconds(resident.timing.seconds).c_str(),
            Ratio(ntl_seconds, resident.timing.seconds).c_str(),
            resident.timing.error.empty() ? Agreement({{"resident", resident.residue},
                                                       {"ntl", ntl_residue},
                                                       {"cpu", on_cpu.residue}})
                                                .c_str()
                                          : ("failed: " + resident.timing.error).c_str());
      }
      if (!on_cpu.timing.error.empty()) {
        std::printf("  CPU failed: %s\n", on_cpu.timing.error.c_str());
      }
      if (!ntl_error.empty()) std::printf("  NTL failed: %s\n", ntl_error.c_str());
    }
  }
}

}  // namespace matrixd::bench
