// The server's resident matrices (core/resident_matrix.h): each named by an unguessable handle
// (128 random bits as 32 hex digits), made by an upload or kept from a result, used by any number
// of later operations, released explicitly or after `ttl` of idleness.
//
// Memory: every matrix counts against `limit_bytes` (all resident bytes, spilled or not). On a
// device it also holds a reservation in that device's MemoryAdmission, so jobs are admitted
// against what resident matrices leave free; a distributed matrix (ResidentLayout::kDistributed,
// core/distributed_resident_matrix.h) holds one on every device, its part's bytes, and is never
// spilled. When a matrix or a job does not fit on a device,
// the least recently used idle matrices there are spilled to host memory (SpillForRoom) and come
// back on their next use.
//
// Ownership: every matrix belongs to the client that made it (ResidentOwner; "" is the anonymous
// client of a server without tokens). Acquire, BeginPart and Release of another client's handle
// answer NOT_FOUND exactly as for an unknown handle, and List(owner) shows only the owner's. An
// owner's max_bytes caps its matrices together (RESOURCE_EXHAUSTED naming max_resident_bytes).
//
// Thread-safe. Lock order: the registry's lock, then a MemoryAdmission's. A matrix in use by an
// operation (a live ResidentLease) is never spilled or freed; Release of such a matrix forgets its
// handle at once and frees it when the last lease ends.
#ifndef MATRIXD_SERVER_RESIDENT_REGISTRY_H_
#define MATRIXD_SERVER_RESIDENT_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/backend.h"
#include "core/device_factorization.h"
#include "core/resident_matrix.h"
#include "server/memory_admission.h"

namespace matrixd::server {

// What a handle of a kept factorization (core/factorization.h) names besides its matrix, the
// factor (lu, l or q): its kind and the first column of a zero pivot (-1: none). Its other
// matrices are the entry's parts ("r", "permutation", "input").
struct ResidentFactorization {
  FactorizationKind kind = FactorizationKind::kLu;
  int64_t singular_column = -1;
  bool input_kept = false;
  int64_t batch_count = 0;       // FactorizationView's: the members of a batch, 0 for one matrix
  int64_t singular_member = -1;  // of a batch: the member of singular_column
};

// A matrix kept under another's handle (ResidentRegistry::KeepFactorization), by name.
struct ResidentPart {
  std::string name;
  MatrixView matrix;  // host bytes
};

// Who makes a matrix, and its quota.
struct ResidentOwner {
  std::string name = {};   // "" for the anonymous client
  uint64_t max_bytes = 0;  // all of its resident matrices together; 0 = no quota
};

// A resident matrix as ListMatrices reports it.
struct ResidentInfo {
  std::string handle;
  std::string owner;  // ResidentOwner::name of its maker
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kFloat64;
  uint64_t bytes = 0;
  std::string device;
  bool spilled = false;
  // Every floating-point entry finite (always true for integer dtypes). A result written in place
  // on the device is not inspected and counts as finite: an operation on it that meets a NaN or
  // Inf reports OUT_OF_RANGE as it would for an overflow.
  bool finite = true;
  std::string label;
  // Bytes that the parts of a parallel upload (ResidentRegistry::CreateFilling) have still to
  // deliver; the matrix can be used once this is 0.
  uint64_t missing_bytes = 0;
  ResidentLayout layout = ResidentLayout::kSingleDevice;
  // Set when the handle names a kept factorization; `bytes` then counts its parts too.
  std::optional<ResidentFactorization> factorization;
  absl::Time created;
  absl::Time last_used;
};

// Totals for metrics, per device ("cpu" for host-resident matrices).
struct ResidentUsage {
  std::string device;
  int matrices = 0;
  uint64_t bytes = 0;          // resident on the device (or host, for "cpu")
  uint64_t spilled_bytes = 0;  // belonging to the device but spilled to host memory
};

class ResidentRegistry;

// One operation's use of a resident matrix: while it lives, the matrix stays where it is (not
// spilled, not freed). Move-only.
class ResidentLease {
 public:
  ResidentLease(ResidentLease&& other) noexcept;
  ResidentLease& operator=(ResidentLease&& other) noexcept;
  ResidentLease(const ResidentLease&) = delete;
  ResidentLease& operator=(const ResidentLease&) = delete;
  ~ResidentLease();

  const ResidentInfo& info() const { return info_; }
  // The operand: a device view on a device, host bytes otherwise.
  MatrixView view() const;
  // The backend device index (ResidentMatrix::device_index) the matrix lives on (the first part's
  // for a distributed one).
  int device_index() const;
  // The parts of a distributed matrix (layout kDistributed), else null.
  const DistributedResidentMatrix* distributed() const;
  // The factorization when the handle names one kept on the GPUs (KeepOnDevices), else null.
  DeviceFactorization* device_factorization() const;
  // The view of the part kept with it as `name` (KeepFactorization), or nullopt.
  std::optional<MatrixView> part(absl::string_view name) const;
  // Copies bytes out (host memory).
  absl::Status Read(uint64_t offset, std::span<std::byte> out) const;

 private:
  friend class ResidentRegistry;
  friend class PendingResident;
  friend class FillingPart;
  struct Entry;
  ResidentLease(ResidentRegistry* registry, std::shared_ptr<Entry> entry, ResidentInfo info);

  ResidentRegistry* registry_ = nullptr;
  std::shared_ptr<Entry> entry_;
  ResidentInfo info_;
};

// A matrix being filled (by an upload or from a result); nothing of it is visible or named until
// ResidentRegistry::Commit. Destroying it uncommitted frees it.
class PendingResident {
 public:
  ~PendingResident();
  ResidentMatrix& matrix();
  // The registry that made it, where it is committed.
  ResidentRegistry& registry() { return registry_; }

 private:
  friend class ResidentRegistry;
  PendingResident(ResidentRegistry& registry, std::shared_ptr<ResidentLease::Entry> entry)
      : registry_(registry), entry_(std::move(entry)) {}

  ResidentRegistry& registry_;
  std::shared_ptr<ResidentLease::Entry> entry_;
};

// One stream's share of a parallel upload into a matrix made by ResidentRegistry::CreateFilling:
// a contiguous byte range, claimed as it is written, that no other part may overlap. Until
// ResidentRegistry::CompletePart takes it, the matrix stays pinned where it is; destroyed
// unfinished, it gives its range back, so that the range can be sent again. Move-only.
class FillingPart {
 public:
  ~FillingPart();
  FillingPart(const FillingPart&) = delete;
  FillingPart& operator=(const FillingPart&) = delete;

  // Shape, dtype and handle of the matrix being filled.
  const ResidentInfo& info() const { return info_; }
  // Writes `bytes` at `offset`: the part's first write may start anywhere, later ones must follow
  // on (offset == end()). INVALID_ARGUMENT naming the ranges when another part has claimed any of
  // these bytes or they run past the matrix's end.
  absl::Status Write(uint64_t offset, std::span<const std::byte> bytes);
  uint64_t begin() const { return begin_; }
  uint64_t end() const { return end_; }

 private:
  friend class ResidentRegistry;
  FillingPart(ResidentRegistry& registry, std::shared_ptr<ResidentLease::Entry> entry,
              ResidentInfo info)
      : registry_(registry), entry_(std::move(entry)), info_(std::move(info)) {}

  ResidentRegistry& registry_;
  std::shared_ptr<ResidentLease::Entry> entry_;
  ResidentInfo info_;
  bool claimed_ = false;  // [begin_, end_) is in the entry's claimed ranges
  bool completed_ = false;
  uint64_t begin_ = 0;
  uint64_t end_ = 0;
};

class ResidentRegistry {
 public:
  struct Options {
    uint64_t limit_bytes = uint64_t{1} << 34;  // all resident matrices together
    absl::Duration ttl = absl::Hours(1);       // idle time after which a matrix is released
    absl::Duration sweep_interval = absl::Seconds(1);
  };

  // `admissions[i]` is the MemoryAdmission of the backend's device i (empty for the CPU backend);
  // the backend and the admissions must outlive the registry.
  ResidentRegistry(Backend& backend, std::vector<MemoryAdmission*> admissions,
                   const Options& options);
  // Frees every matrix. REQUIRES: no lease or pending matrix is alive.
  ~ResidentRegistry();
  ResidentRegistry(const ResidentRegistry&) = delete;
  ResidentRegistry& operator=(const ResidentRegistry&) = delete;

  // Room for a new rows x cols matrix (shape already checked). RESOURCE_EXHAUSTED, saying how
  // much is free, when it does not fit under the limit or on any device even after spilling idle
  // matrices. `device_index` as for Backend::AllocateResident.
  // RESOURCE_EXHAUSTED naming max_resident_bytes past the owner's quota.
  // With `layout` kDistributed (device_index then unused): parts over every device of the
  // backend, each reserved on its own device (RESOURCE_EXHAUSTED naming the device that has no
  // room); INVALID_ARGUMENT naming `layout` when the backend has fewer than 2 devices.
  absl::StatusOr<std::unique_ptr<PendingResident>> Create(
      int64_t rows, int64_t cols, DType dtype, std::string label, int device_index = -1,
      const ResidentOwner& owner = {}, ResidentLayout layout = ResidentLayout::kSingleDevice);
  // Flushes the pending matrix's writes and names it. `finite` says whether every entry is finite.
  absl::StatusOr<ResidentInfo> Commit(std::unique_ptr<PendingResident> pending, bool finite);
  // A named matrix to be filled by several upload streams at once (FillingParts), each sending
  // its own byte range; operations on it are FAILED_PRECONDITION until every byte has arrived.
  // Errors as for Create. It expires after the TTL like any idle matrix.
  absl::StatusOr<ResidentInfo> CreateFilling(int64_t rows, int64_t cols, DType dtype,
                                             std::string label, const ResidentOwner& owner = {},
                                             ResidentLayout layout = ResidentLayout::kSingleDevice);
  // A new part of the filling matrix `handle`. NOT_FOUND as for Acquire; FAILED_PRECONDITION
  // when the matrix is complete already.
  absl::StatusOr<std::unique_ptr<FillingPart>> BeginPart(absl::string_view handle,
                                                         absl::string_view owner = {});
  // Counts the part's bytes as delivered (`finite`: all its entries are finite); when they were
  // the last ones missing, flushes the matrix so that operations can use it. Returns the matrix.
  absl::StatusOr<ResidentInfo> CompletePart(std::unique_ptr<FillingPart> part, bool finite);
  // Create + Write + Commit of a host matrix (a result to keep).
  absl::StatusOr<ResidentInfo> Keep(const Matrix& matrix, std::string label, int device_index = -1,
                                    const ResidentOwner& owner = {});
  // Keeps a factorization under one handle: `factor` is the matrix the handle names (what
  // operations and Download see) and `parts` the matrices kept with it, on the same device, which
  // count, spill, restore and go with it. Errors as for Create, for all the bytes together.
  absl::StatusOr<ResidentInfo> KeepFactorization(const MatrixView& factor,
                                                 const std::vector<ResidentPart>& parts,
                                                 const ResidentFactorization& factorization,
                                                 std::string label, int device_index = -1,
                                                 const ResidentOwner& owner = {});

  // Keeps a factorization left on the GPUs that computed it (core/device_factorization.h) under
  // one handle, as a distributed matrix (one single-device matrix when it has one part): counted
  // against the limit and the owner's quota (errors as for Create, which then free it), and each
  // device's bytes (DeviceFactorization::Parts) reserved in that device's admission without waiting
  // (MemoryAdmission::ReserveHeld: they are allocated already, under the reservation of the job
  // that made them, which ends after it). Never spilled; Release frees it on every device.
  absl::StatusOr<ResidentInfo> KeepOnDevices(std::unique_ptr<DeviceFactorization> kept,
                                             const ResidentFactorization& factorization,
                                             std::string label, const ResidentOwner& owner = {});

  // The matrix for an operation, restored to its device first if it was spilled. NOT_FOUND naming
  // `field` for an unknown, released or expired handle; RESOURCE_EXHAUSTED if it cannot be
  // restored.
  // Only `owner`'s matrices are found.
  absl::StatusOr<ResidentLease> Acquire(absl::string_view handle, absl::string_view field,
                                        absl::string_view owner = {});
  // Forgets the handle; the memory is freed once no operation uses it. Returns its bytes.
  // NOT_FOUND for an unknown handle or one of another owner.
  absl::StatusOr<uint64_t> Release(absl::string_view handle, absl::string_view owner = {});
  // Every matrix, oldest first.
  std::vector<ResidentInfo> List() const;
  // `owner`'s matrices, oldest first.
  std::vector<ResidentInfo> List(absl::string_view owner) const;
  // The bytes of `owner`'s matrices (committed and pending).
  uint64_t owner_bytes(absl::string_view owner) const;

  // Spills least recently used idle matrices of `device` until `bytes` more are free in its
  // admission (or none is left to spill). Returns the bytes spilled.
  uint64_t SpillForRoom(int device, uint64_t bytes);
  // Releases the matrices idle for longer than the TTL at `now`; returns how many.
  int ExpireIdle(absl::Time now);

  uint64_t limit_bytes() const { return options_.limit_bytes; }
  uint64_t resident_bytes() const;
  std::vector<ResidentUsage> Usage() const;
  uint64_t spills() const;
  uint64_t restores() const;

 private:
  friend class ResidentLease;
  friend class FillingPart;
  using Entry = ResidentLease::Entry;

  // Create with `parts` allocated beside the matrix (shapes and dtypes only; none when
  // distributed).
  absl::StatusOr<std::unique_ptr<PendingResident>> CreateWithParts(
      int64_t rows, int64_t cols, DType dtype, std::string label, int device_index,
      const std::vector<ResidentPart>& parts, const ResidentOwner& owner, ResidentLayout layout);
  // A new entry charged `bytes` for a rows x cols matrix against the limit and `owner`'s quota
  // (given back when it is destroyed). RESOURCE_EXHAUSTED as Create says.
  absl::StatusOr<std::shared_ptr<Entry>> ChargedEntry(int64_t rows, int64_t cols, DType dtype,
                                                      uint64_t bytes, const ResidentOwner& owner);
  // Reserves each device's part of a distributed matrix in `entry`'s accounting and allocates
  // the parts.
  absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateDistributed(int64_t rows, int64_t cols,
                                                                      DType dtype, Entry& entry);
  // The entry `handle` names if `owner` owns it, else null.
  std::shared_ptr<Entry>* FindOwnedLocked(absl::string_view handle, absl::string_view owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // `owner`'s running byte count (made on first use).
  std::shared_ptr<std::atomic<uint64_t>> OwnerTotalLocked(const std::string& owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Reserves `bytes` on `device`'s admission, spilling others there if needed. Caller holds mutex_.
  bool ReserveOnDevice(int device, uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  uint64_t SpillForRoomLocked(int device, uint64_t bytes, const Entry* keep)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void Unpin(Entry& entry);
  ResidentInfo Snapshot(const Entry& entry) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Names `entry` (flushed) and lists it.
  ResidentInfo Register(std::shared_ptr<Entry> entry, bool finite);
  // Adds [begin, end) to the entry's claimed ranges (`extends`: as the end of the range that
  // ends at `begin`), or says which claimed range it overlaps.
  absl::Status Claim(Entry& entry, uint64_t begin, uint64_t end, bool extends);
  void Unclaim(Entry& entry, uint64_t begin);
  std::string NewHandle();
  void SweepLoop();

  Backend& backend_;
  const std::vector<MemoryAdmission*> admissions_;
  const Options options_;

  // Committed and pending bytes; atomic because a matrix's last lease may end (and give its bytes
  // back) outside the lock.
  std::atomic<uint64_t> total_bytes_{0};
  mutable absl::Mutex mutex_;
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mutex_);
  std::list<std::string> order_ ABSL_GUARDED_BY(mutex_);  // handles, oldest first
  // Bytes by owner; an entry's accounting holds its owner's counter.
  absl::flat_hash_map<std::string, std::shared_ptr<std::atomic<uint64_t>>> owner_bytes_
      ABSL_GUARDED_BY(mutex_);
  uint64_t spills_ ABSL_GUARDED_BY(mutex_) = 0;
  uint64_t restores_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::thread sweeper_;
};

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_RESIDENT_REGISTRY_H_
