#include "server/resident_registry.h"

#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/distributed_resident_matrix.h"
#include "core/status_macros.h"
#include "core/validation.h"

namespace matrixd::server {

// Gives a matrix's bytes back to the registry's limit and, while they are reserved there, to its
// device's admission, when the matrix is destroyed (after it, being declared first).
struct ResidentAccounting {
  std::atomic<uint64_t>* total = nullptr;
  std::shared_ptr<std::atomic<uint64_t>> owner_total;  // the owner's bytes
  uint64_t bytes = 0;
  MemoryAdmission* admission = nullptr;  // null on the host and for a distributed matrix
  bool device_reserved = false;          // guarded by the registry's lock while it is reachable
  // A distributed matrix's parts: each device's admission and the bytes reserved there.
  std::vector<std::pair<MemoryAdmission*, uint64_t>> part_reservations;

  ~ResidentAccounting() {
    if (device_reserved && admission != nullptr) admission->Unreserve(bytes);
    for (const auto& [part_admission, part_bytes] : part_reservations) {
      part_admission->Unreserve(part_bytes);
    }
    if (total != nullptr) total->fetch_sub(bytes);
    if (owner_total != nullptr) owner_total->fetch_sub(bytes);
  }
};

struct ResidentLease::Entry {
  ResidentAccounting accounting;
  std::unique_ptr<ResidentMatrix> matrix;
  // Matrices kept under the same handle (a factorization's), by name; on the matrix's device.
  std::vector<std::pair<std::string, std::unique_ptr<ResidentMatrix>>> parts;
  // The matrix itself when it is a factorization kept on the GPUs (KeepOnDevices), else null.
  DeviceFactorization* device_factorization = nullptr;
  ResidentInfo info;  // handle, label, created, last_used and finite are the registry's
  int pins = 0;       // live leases and unfinished FillingParts
  // A parallel upload's byte ranges taken by parts, begin -> end (registry's lock).
  std::map<uint64_t, uint64_t> claimed;

  // Spills (to_host) or restores the matrix and its parts; on a failure, moves back the ones
  // already moved, so that they stay in one place.
  absl::Status MoveAll(bool to_host) {
    std::vector<ResidentMatrix*> matrices = {matrix.get()};
    for (auto& [name, part] : parts) matrices.push_back(part.get());
    for (size_t i = 0; i < matrices.size(); ++i) {
      absl::Status moved = to_host ? matrices[i]->Spill() : matrices[i]->Restore();
      if (moved.ok()) continue;
      for (size_t j = 0; j < i; ++j) {
        static_cast<void>(to_host ? matrices[j]->Restore() : matrices[j]->Spill());
      }
      return moved;
    }
    return absl::OkStatus();
  }
};

// ---- ResidentLease ----

ResidentLease::ResidentLease(ResidentRegistry* registry, std::shared_ptr<Entry> entry,
                             ResidentInfo info)
    : registry_(registry), entry_(std::move(entry)), info_(std::move(info)) {}

ResidentLease::ResidentLease(ResidentLease&& other) noexcept
    : registry_(std::exchange(other.registry_, nullptr)),
      entry_(std::move(other.entry_)),
      info_(std::move(other.info_)) {}

ResidentLease& ResidentLease::operator=(ResidentLease&& other) noexcept {
  if (this != &other) {
    if (registry_ != nullptr && entry_ != nullptr) registry_->Unpin(*entry_);
    registry_ = std::exchange(other.registry_, nullptr);
    entry_ = std::move(other.entry_);
    info_ = std::move(other.info_);
  }
  return *this;
}

ResidentLease::~ResidentLease() {
  if (registry_ != nullptr && entry_ != nullptr) registry_->Unpin(*entry_);
}

MatrixView ResidentLease::view() const { return entry_->matrix->view(); }

int ResidentLease::device_index() const { return entry_->matrix->device_index(); }

const DistributedResidentMatrix* ResidentLease::distributed() const {
  return entry_->matrix->distributed();
}

DeviceFactorization* ResidentLease::device_factorization() const {
  return entry_->device_factorization;
}

std::optional<MatrixView> ResidentLease::part(absl::string_view name) const {
  for (const auto& [part_name, part] : entry_->parts) {
    if (part_name == name) return part->view();
  }
  return std::nullopt;
}

absl::Status ResidentLease::Read(uint64_t offset, std::span<std::byte> out) const {
  return entry_->matrix->Read(offset, out);
}

// ---- PendingResident ----

PendingResident::~PendingResident() = default;

ResidentMatrix& PendingResident::matrix() { return *entry_->matrix; }

// ---- FillingPart ----

FillingPart::~FillingPart() {
  if (claimed_ && !completed_) registry_.Unclaim(*entry_, begin_);
  registry_.Unpin(*entry_);
}

absl::Status FillingPart::Write(uint64_t offset, std::span<const std::byte> bytes) {
  if (claimed_ && offset != end_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload chunk at offset ", offset, " leaves ",
                     offset > end_ ? "a gap" : "an overlap", ": this part has sent bytes [", begin_,
                     ", ", end_, "), so its next chunk must start at offset ", end_));
  }
  const uint64_t end = offset + bytes.size();
  if (end > info_.bytes || end < offset) {
    return absl::InvalidArgumentError(absl::StrCat("upload chunk at offset ", offset, " has ",
                                                   bytes.size(), " bytes, past the end of the ",
                                                   info_.bytes, "-byte matrix"));
  }
  if (bytes.empty()) return absl::OkStatus();
  MATRIXD_RETURN_IF_ERROR(registry_.Claim(*entry_, offset, end, claimed_));
  if (!claimed_) begin_ = offset;
  claimed_ = true;
  end_ = end;
  return entry_->matrix->Write(offset, bytes);
}

// ---- ResidentRegistry ----

ResidentRegistry::ResidentRegistry(Backend& backend, std::vector<MemoryAdmission*> admissions,
                                   const Options& options)
    : backend_(backend), admissions_(std::move(admissions)), options_(options) {
  sweeper_ = std::thread([this] { SweepLoop(); });
}

ResidentRegistry::~ResidentRegistry() {
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
  }
  sweeper_.join();
  absl::MutexLock lock(&mutex_);
  entries_.clear();
  order_.clear();
}

std::string ResidentRegistry::NewHandle() {
  std::array<char, 16> bits{};
  size_t filled = 0;
  while (filled < bits.size()) {
    const ssize_t got = getrandom(bits.data() + filled, bits.size() - filled, 0);
    if (got > 0) filled += static_cast<size_t>(got);
  }
  return absl::BytesToHexString(absl::string_view(bits.data(), bits.size()));
}

ResidentInfo ResidentRegistry::Snapshot(const Entry& entry) const {
  ResidentInfo info = entry.info;
  info.spilled = entry.matrix->spilled();
  return info;
}

bool ResidentRegistry::ReserveOnDevice(int device, uint64_t bytes) {
  MemoryAdmission* admission = admissions_[device];
  if (admission->TryReserve(bytes)) return true;
  SpillForRoomLocked(device, bytes, nullptr);
  return admission->TryReserve(bytes);
}

uint64_t ResidentRegistry::SpillForRoomLocked(int device, uint64_t bytes, const Entry* keep) {
  MemoryAdmission* admission = admissions_[device];
  const auto free_bytes = [&] {
    return admission->capacity() - std::min(admission->reserved(), admission->capacity());
  };
  // Idle matrices on this device, least recently used first.
  std::vector<Entry*> idle;
  for (auto& [handle, entry] : entries_) {
    if (entry.get() != keep && entry->pins == 0 && entry->accounting.device_reserved &&
        entry->matrix->device_index() == device) {
      idle.push_back(entry.get());
    }
  }
  std::sort(idle.begin(), idle.end(),
            [](const Entry* a, const Entry* b) { return a->info.last_used < b->info.last_used; });
  uint64_t spilled = 0;
  for (Entry* entry : idle) {
    if (free_bytes() >= bytes) break;
    if (!entry->MoveAll(/*to_host=*/true).ok()) continue;  // stays on the device; try the next
    admission->Unreserve(entry->accounting.bytes);
    entry->accounting.device_reserved = false;
    spilled += entry->accounting.bytes;
    ++spills_;
  }
  return spilled;
}

uint64_t ResidentRegistry::SpillForRoom(int device, uint64_t bytes) {
  if (device < 0 || device >= static_cast<int>(admissions_.size())) return 0;
  absl::MutexLock lock(&mutex_);
  return SpillForRoomLocked(device, bytes, nullptr);
}

absl::StatusOr<std::unique_ptr<PendingResident>> ResidentRegistry::Create(
    int64_t rows, int64_t cols, DType dtype, std::string label, int device_index,
    const ResidentOwner& owner, ResidentLayout layout) {
  return CreateWithParts(rows, cols, dtype, std::move(label), device_index, {}, owner, layout);
}

absl::StatusOr<std::unique_ptr<ResidentMatrix>> ResidentRegistry::AllocateDistributed(
    int64_t rows, int64_t cols, DType dtype, Entry& entry) {
  const RowCyclicLayout layout{.rows = rows,
                               .cols = cols,
                               .block = kDistributedRowBlock,
                               .parts = static_cast<int>(admissions_.size())};
  const uint64_t row_bytes = static_cast<uint64_t>(cols) * ElementSize(dtype);
  std::vector<std::unique_ptr<ResidentMatrix>> parts(admissions_.size());
  for (int g = 0; g < layout.parts; ++g) {
    const int64_t local_rows = layout.LocalRows(g);
    if (local_rows == 0) continue;
    const uint64_t bytes = static_cast<uint64_t>(local_rows) * row_bytes;
    {
      absl::MutexLock lock(&mutex_);
      MemoryAdmission* admission = admissions_[static_cast<size_t>(g)];
      if (!ReserveOnDevice(g, bytes)) {
        const uint64_t free_bytes =
            admission->capacity() - std::min(admission->reserved(), admission->capacity());
        return absl::ResourceExhaustedError(absl::StrCat(
            "layout DISTRIBUTED: device ", g, "'s part of a resident ", rows, "x", cols, " ",
            DTypeName(dtype), " matrix (", local_rows, " rows) needs ", bytes, " bytes; ",
            free_bytes, " of its ", admission->capacity(), " bytes of device memory are free"));
      }
      entry.accounting.part_reservations.emplace_back(admission, bytes);
    }
    MATRIXD_ASSIGN_OR_RETURN(parts[static_cast<size_t>(g)],
                             backend_.AllocateResident(local_rows, cols, dtype, g));
  }
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<DistributedResidentMatrix> matrix,
                           DistributedResidentMatrix::Make(layout, dtype, std::move(parts)));
  return std::unique_ptr<ResidentMatrix>(std::move(matrix));
}

std::shared_ptr<std::atomic<uint64_t>> ResidentRegistry::OwnerTotalLocked(
    const std::string& owner) {
  std::shared_ptr<std::atomic<uint64_t>>& total = owner_bytes_[owner];
  if (total == nullptr) total = std::make_shared<std::atomic<uint64_t>>(0);
  return total;
}

std::shared_ptr<ResidentLease::Entry>* ResidentRegistry::FindOwnedLocked(absl::string_view handle,
                                                                         absl::string_view owner) {
  const auto it = entries_.find(handle);
  if (it == entries_.end() || it->second->info.owner != owner) return nullptr;
  return &it->second;
}

uint64_t ResidentRegistry::owner_bytes(absl::string_view owner) const {
  absl::MutexLock lock(&mutex_);
  const auto it = owner_bytes_.find(owner);
  return it == owner_bytes_.end() ? 0 : it->second->load();
}

absl::StatusOr<std::shared_ptr<ResidentLease::Entry>> ResidentRegistry::ChargedEntry(
    int64_t rows, int64_t cols, DType dtype, uint64_t bytes, const ResidentOwner& owner) {
  // Take the bytes from the limit first; ResidentAccounting gives them back on every failure.
  const uint64_t before = total_bytes_.fetch_add(bytes);
  auto entry = std::make_shared<Entry>();
  entry->accounting.total = &total_bytes_;
  entry->accounting.bytes = bytes;
  {
    absl::MutexLock lock(&mutex_);
    entry->accounting.owner_total = OwnerTotalLocked(owner.name);
  }
  const uint64_t owner_before = entry->accounting.owner_total->fetch_add(bytes);
  if (owner.max_bytes > 0 && owner_before + bytes > owner.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "quota max_resident_bytes: a resident ", rows, "x", cols, " ", DTypeName(dtype),
        " matrix needs ", bytes, " bytes and ", owner.name.empty() ? "this client" : owner.name,
        " holds ", owner_before, " of its ", owner.max_bytes,
        " (release matrices with Release / matrixctl rm)"));
  }
  if (before + bytes > options_.limit_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "a resident ", rows, "x", cols, " ", DTypeName(dtype), " matrix needs ", bytes, " bytes; ",
        options_.limit_bytes - std::min(before, options_.limit_bytes), " of the ",
        options_.limit_bytes, " bytes of --resident_memory_limit are free"));
  }
  return entry;
}

absl::StatusOr<std::unique_ptr<PendingResident>> ResidentRegistry::CreateWithParts(
    int64_t rows, int64_t cols, DType dtype, std::string label, int device_index,
    const std::vector<ResidentPart>& parts, const ResidentOwner& owner, ResidentLayout layout) {
  if (layout == ResidentLayout::kDistributed && admissions_.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout is RESIDENT_LAYOUT_DISTRIBUTED, which needs a server with at least 2 GPUs; this "
        "one has ",
        admissions_.size(), admissions_.empty() ? " (it computes on the host)" : "",
        ": use RESIDENT_LAYOUT_SINGLE_DEVICE"));
  }
  if (layout == ResidentLayout::kDistributed && !parts.empty()) {
    return absl::InternalError("a distributed resident matrix keeps no parts beside it");
  }
  uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * ElementSize(dtype);
  for (const ResidentPart& part : parts) bytes += part.matrix.byte_size();
  MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           ChargedEntry(rows, cols, dtype, bytes, owner));
  if (layout == ResidentLayout::kDistributed) {
    MATRIXD_ASSIGN_OR_RETURN(entry->matrix, AllocateDistributed(rows, cols, dtype, *entry));
  } else if (!admissions_.empty()) {
    absl::MutexLock lock(&mutex_);
    // The device with the most room in admission, unless one is named.
    if (device_index < 0 || device_index >= static_cast<int>(admissions_.size())) {
      device_index = 0;
      uint64_t most = 0;
      for (size_t i = 0; i < admissions_.size(); ++i) {
        const uint64_t room = admissions_[i]->capacity() -
                              std::min(admissions_[i]->reserved(), admissions_[i]->capacity());
        if (room > most) {
          most = room;
          device_index = static_cast<int>(i);
        }
      }
    }
    MemoryAdmission* admission = admissions_[device_index];
    if (!ReserveOnDevice(device_index, bytes)) {
      const uint64_t free_bytes =
          admission->capacity() - std::min(admission->reserved(), admission->capacity());
      return absl::ResourceExhaustedError(
          absl::StrCat("a resident ", rows, "x", cols, " ", DTypeName(dtype), " matrix needs ",
                       bytes, " bytes; ", free_bytes, " of the ", admission->capacity(),
                       " bytes of device memory are free on device ", device_index,
                       " (running jobs and resident matrices in use hold the rest)"));
    }
    entry->accounting.admission = admission;
    entry->accounting.device_reserved = true;
  }
  if (entry->matrix == nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(entry->matrix,
                             backend_.AllocateResident(rows, cols, dtype, device_index));
  }
  for (const ResidentPart& part : parts) {
    MATRIXD_ASSIGN_OR_RETURN(
        std::unique_ptr<ResidentMatrix> allocated,
        backend_.AllocateResident(part.matrix.rows, part.matrix.cols, part.matrix.dtype,
                                  entry->matrix->device_index()));
    entry->parts.emplace_back(part.name, std::move(allocated));
  }
  entry->info.rows = rows;
  entry->info.cols = cols;
  entry->info.dtype = dtype;
  entry->info.bytes = bytes;
  entry->info.device = entry->matrix->device();
  entry->info.layout = layout;
  entry->info.label = std::move(label);
  entry->info.owner = owner.name;
  return std::unique_ptr<PendingResident>(new PendingResident(*this, std::move(entry)));
}

absl::StatusOr<ResidentInfo> ResidentRegistry::Commit(std::unique_ptr<PendingResident> pending,
                                                      bool finite) {
  std::shared_ptr<Entry> entry = std::move(pending->entry_);
  MATRIXD_RETURN_IF_ERROR(entry->matrix->Flush());
  return Register(std::move(entry), finite);
}

ResidentInfo ResidentRegistry::Register(std::shared_ptr<Entry> entry, bool finite) {
  const absl::Time now = absl::Now();
  entry->info.finite = finite;
  entry->info.created = now;
  entry->info.last_used = now;
  absl::MutexLock lock(&mutex_);
  std::string handle = NewHandle();
  entry->info.handle = handle;
  ResidentInfo info = Snapshot(*entry);
  entries_.emplace(handle, std::move(entry));
  order_.push_back(std::move(handle));
  return info;
}

absl::StatusOr<ResidentInfo> ResidentRegistry::Keep(const Matrix& matrix, std::string label,
                                                    int device_index, const ResidentOwner& owner) {
  MATRIXD_ASSIGN_OR_RETURN(
      std::unique_ptr<PendingResident> pending,
      Create(matrix.rows(), matrix.cols(), matrix.dtype(), std::move(label), device_index, owner));
  MATRIXD_RETURN_IF_ERROR(
      pending->matrix().Write(0, std::span<const std::byte>(matrix.bytes(), matrix.byte_size())));
  return Commit(std::move(pending), AllFinite(matrix.view()));
}

absl::StatusOr<ResidentInfo> ResidentRegistry::KeepFactorization(
    const MatrixView& factor, const std::vector<ResidentPart>& parts,
    const ResidentFactorization& factorization, std::string label, int device_index,
    const ResidentOwner& owner) {
  MATRIXD_ASSIGN_OR_RETURN(
      std::unique_ptr<PendingResident> pending,
      CreateWithParts(factor.rows, factor.cols, factor.dtype, std::move(label), device_index, parts,
                      owner, ResidentLayout::kSingleDevice));
  std::shared_ptr<Entry> entry = std::move(pending->entry_);
  bool finite = AllFinite(factor);
  MATRIXD_RETURN_IF_ERROR(entry->matrix->Write(0, std::span(factor.data, factor.byte_size())));
  for (size_t i = 0; i < parts.size(); ++i) {
    const MatrixView& part = parts[i].matrix;
    finite = finite && AllFinite(part);
    ResidentMatrix& kept = *entry->parts[i].second;
    MATRIXD_RETURN_IF_ERROR(kept.Write(0, std::span(part.data, part.byte_size())));
    MATRIXD_RETURN_IF_ERROR(kept.Flush());
  }
  MATRIXD_RETURN_IF_ERROR(entry->matrix->Flush());
  entry->info.factorization = factorization;
  return Register(std::move(entry), finite);
}

absl::StatusOr<ResidentInfo> ResidentRegistry::KeepOnDevices(
    std::unique_ptr<DeviceFactorization> kept, const ResidentFactorization& factorization,
    std::string label, const ResidentOwner& owner) {
  const std::vector<DevicePart> parts = kept->Parts();
  uint64_t bytes = 0;
  for (const DevicePart& part : parts) {
    if (part.device_index < 0 || part.device_index >= static_cast<int>(admissions_.size())) {
      return absl::InternalError(absl::StrCat("a factorization kept on the GPUs names device ",
                                              part.device_index, "; this server has ",
                                              admissions_.size()));
    }
    bytes += part.bytes;
  }
  MATRIXD_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           ChargedEntry(kept->rows(), kept->cols(), kept->dtype(), bytes, owner));
  {
    absl::MutexLock lock(&mutex_);
    for (const DevicePart& part : parts) {
      MemoryAdmission* admission = admissions_[static_cast<size_t>(part.device_index)];
      admission->ReserveHeld(part.bytes);
      entry->accounting.part_reservations.emplace_back(admission, part.bytes);
    }
  }
  entry->info.rows = kept->rows();
  entry->info.cols = kept->cols();
  entry->info.dtype = kept->dtype();
  entry->info.bytes = bytes;
  entry->info.device = kept->device();
  entry->info.layout =
      parts.size() > 1 ? ResidentLayout::kDistributed : ResidentLayout::kSingleDevice;
  entry->info.label = std::move(label);
  entry->info.owner = owner.name;
  entry->info.factorization = factorization;
  entry->device_factorization = kept.get();
  entry->matrix = std::move(kept);
  // Written in place on the GPUs: not inspected (see ResidentInfo::finite).
  return Register(std::move(entry), /*finite=*/true);
}

absl::StatusOr<ResidentLease> ResidentRegistry::Acquire(absl::string_view handle,
                                                        absl::string_view field,
                                                        absl::string_view owner) {
  absl::MutexLock lock(&mutex_);
  std::shared_ptr<Entry>* found = FindOwnedLocked(handle, owner);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat(field, ".handle \"", handle,
                                            "\" names no resident matrix (never uploaded, "
                                            "released or expired)"));
  }
  Entry& entry = **found;
  if (entry.info.missing_bytes > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": resident matrix ", handle, " is still being uploaded (", entry.info.missing_bytes,
        " of its ", entry.info.bytes, " bytes have not arrived)"));
  }
  if (entry.matrix->spilled()) {
    const int device = entry.matrix->device_index();
    if (!ReserveOnDevice(device, entry.accounting.bytes)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(field, ": resident matrix ", handle, " is spilled to host memory and its ",
                       entry.accounting.bytes, " bytes do not fit on device ", device, " now"));
    }
    if (absl::Status restored = entry.MoveAll(/*to_host=*/false); !restored.ok()) {
      admissions_[device]->Unreserve(entry.accounting.bytes);
      return restored;
    }
    entry.accounting.device_reserved = true;
    ++restores_;
  }
  ++entry.pins;
  entry.info.last_used = absl::Now();
  return ResidentLease(this, *found, Snapshot(entry));
}

absl::StatusOr<ResidentInfo> ResidentRegistry::CreateFilling(int64_t rows, int64_t cols,
                                                             DType dtype, std::string label,
                                                             const ResidentOwner& owner,
                                                             ResidentLayout layout) {
  MATRIXD_ASSIGN_OR_RETURN(std::unique_ptr<PendingResident> pending,
                           Create(rows, cols, dtype, std::move(label), -1, owner, layout));
  std::shared_ptr<Entry> entry = std::move(pending->entry_);
  entry->info.missing_bytes = entry->info.bytes;
  return Register(std::move(entry), /*finite=*/true);
}

absl::StatusOr<std::unique_ptr<FillingPart>> ResidentRegistry::BeginPart(absl::string_view handle,
                                                                         absl::string_view owner) {
  absl::MutexLock lock(&mutex_);
  std::shared_ptr<Entry>* found = FindOwnedLocked(handle, owner);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("upload.handle \"", handle,
                                            "\" names no resident matrix (never created with "
                                            "CreateMatrix, released or expired)"));
  }
  Entry& entry = **found;
  if (entry.info.missing_bytes == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("upload.handle: resident matrix ", handle,
                     " has all its bytes already; it is not filling"));
  }
  ++entry.pins;
  entry.info.last_used = absl::Now();
  return std::unique_ptr<FillingPart>(new FillingPart(*this, *found, Snapshot(entry)));
}

absl::Status ResidentRegistry::Claim(Entry& entry, uint64_t begin, uint64_t end, bool extends) {
  absl::MutexLock lock(&mutex_);
  const auto overlap = [&](uint64_t other_begin, uint64_t other_end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "upload part bytes [", begin, ", ", end, ") overlap bytes [", other_begin, ", ", other_end,
        ") that another part of matrix ", entry.info.handle, " sends"));
  };
  // A new part starts at `begin`; an extended one owns the range ending at `begin` (the last one
  // starting before it), and a range starting exactly at `begin` is someone else's.
  auto next = extends ? entry.claimed.lower_bound(begin) : entry.claimed.upper_bound(begin);
  if (!extends && next != entry.claimed.begin()) {
    const auto previous = std::prev(next);
    if (previous->second > begin) return overlap(previous->first, previous->second);
  }
  if (next != entry.claimed.end() && next->first < end) return overlap(next->first, next->second);
  if (extends) {
    std::prev(next)->second = end;
  } else {
    entry.claimed.emplace(begin, end);
  }
  entry.info.last_used = absl::Now();
  return absl::OkStatus();
}

void ResidentRegistry::Unclaim(Entry& entry, uint64_t begin) {
  absl::MutexLock lock(&mutex_);
  entry.claimed.erase(begin);
}

absl::StatusOr<ResidentInfo> ResidentRegistry::CompletePart(std::unique_ptr<FillingPart> part,
                                                            bool finite) {
  Entry& entry = *part->entry_;
  bool last = false;
  {
    absl::MutexLock lock(&mutex_);
    const uint64_t delivered = part->end_ - part->begin_;
    entry.info.missing_bytes -= std::min(delivered, entry.info.missing_bytes);
    entry.info.finite = entry.info.finite && finite;
    entry.info.last_used = absl::Now();
    last = entry.info.missing_bytes == 0;
    part->completed_ = true;
  }
  if (last) {
    MATRIXD_RETURN_IF_ERROR(entry.matrix->Flush());
  }
  absl::MutexLock lock(&mutex_);
  return Snapshot(entry);
}

void ResidentRegistry::Unpin(Entry& entry) {
  absl::MutexLock lock(&mutex_);
  --entry.pins;
  entry.info.last_used = absl::Now();
}

absl::StatusOr<uint64_t> ResidentRegistry::Release(absl::string_view handle,
                                                   absl::string_view owner) {
  std::shared_ptr<Entry> released;  // destroyed (if last) after the lock is dropped
  {
    absl::MutexLock lock(&mutex_);
    const auto it = entries_.find(handle);
    if (it == entries_.end() || it->second->info.owner != owner) {
      return absl::NotFoundError(absl::StrCat("handle \"", handle,
                                              "\" names no resident matrix (never uploaded, "
                                              "released or expired)"));
    }
    released = std::move(it->second);
    entries_.erase(it);
    order_.remove(std::string(handle));
  }
  return released->accounting.bytes;
}

std::vector<ResidentInfo> ResidentRegistry::List() const {
  absl::MutexLock lock(&mutex_);
  std::vector<ResidentInfo> infos;
  infos.reserve(order_.size());
  for (const std::string& handle : order_) infos.push_back(Snapshot(*entries_.at(handle)));
  return infos;
}

std::vector<ResidentInfo> ResidentRegistry::List(absl::string_view owner) const {
  absl::MutexLock lock(&mutex_);
  std::vector<ResidentInfo> infos;
  for (const std::string& handle : order_) {
    const Entry& entry = *entries_.at(handle);
    if (entry.info.owner == owner) infos.push_back(Snapshot(entry));
  }
  return infos;
}

int ResidentRegistry::ExpireIdle(absl::Time now) {
  std::vector<std::shared_ptr<Entry>> expired;
  {
    absl::MutexLock lock(&mutex_);
    for (auto it = order_.begin(); it != order_.end();) {
      const auto entry = entries_.find(*it);
      if (entry->second->pins == 0 && now - entry->second->info.last_used > options_.ttl) {
        expired.push_back(std::move(entry->second));
        entries_.erase(entry);
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return static_cast<int>(expired.size());
}

void ResidentRegistry::SweepLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mutex_);
      if (mutex_.AwaitWithTimeout(absl::Condition(&stopping_), options_.sweep_interval)) return;
    }
    ExpireIdle(absl::Now());
  }
}

uint64_t ResidentRegistry::resident_bytes() const { return total_bytes_.load(); }

std::vector<ResidentUsage> ResidentRegistry::Usage() const {
  absl::MutexLock lock(&mutex_);
  std::vector<ResidentUsage> usages;
  for (const auto& [handle, entry] : entries_) {
    const std::string& device = entry->info.device;
    auto it = std::find_if(usages.begin(), usages.end(),
                           [&](const ResidentUsage& u) { return u.device == device; });
    if (it == usages.end()) {
      usages.push_back({.device = device});
      it = usages.end() - 1;
    }
    ++it->matrices;
    (entry->matrix->spilled() ? it->spilled_bytes : it->bytes) += entry->accounting.bytes;
  }
  return usages;
}

uint64_t ResidentRegistry::spills() const {
  absl::MutexLock lock(&mutex_);
  return spills_;
}

uint64_t ResidentRegistry::restores() const {
  absl::MutexLock lock(&mutex_);
  return restores_;
}

}  // namespace matrixd::server
