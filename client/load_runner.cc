#include "client/load_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/load_requests.h"
#include "client/queued_call.h"

namespace matrixd {
namespace {

// The requests still to send, shared by the workers: a counter, and the time from which no new
// request starts.
class RequestBudget {
 public:
  RequestBudget(int64_t requests, std::chrono::steady_clock::time_point stop_at)
      : requests_(requests), stop_at_(stop_at) {}

  // The index of the next request to send, or -1 when the run is over.
  int64_t Take() {
    if (std::chrono::steady_clock::now() >= stop_at_) return -1;
    const int64_t index = next_.fetch_add(1, std::memory_order_relaxed);
    return requests_ > 0 && index >= requests_ ? -1 : index;
  }

 private:
  const int64_t requests_;  // 0: no limit
  const std::chrono::steady_clock::time_point stop_at_;
  std::atomic<int64_t> next_{0};
};

// Blocking calls: one thread per request in flight.
void Work(Client& client, const std::vector<v1::JobRequest>& requests, int64_t matrices,
          RequestBudget& budget, LoadTally& tally) {
  for (int64_t index = budget.Take(); index >= 0; index = budget.Take()) {
    const v1::JobRequest& request = requests[static_cast<size_t>(index) % requests.size()];
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = SendLoadRequest(client, request);
    const auto end = std::chrono::steady_clock::now();
    tally.Record(status, matrices, absl::FromChrono(end - start), absl::Now());
  }
}

// The request slots of callback calls and their tally, shared by the sender and the completions:
// each completion holds it until it has unlocked the mutex, so it outlives the last of them.
struct CallbackSlots {
  explicit CallbackSlots(int concurrency) : all(static_cast<size_t>(concurrency)) {
    for (int k = concurrency - 1; k >= 0; --k) free.push_back(k);
  }
  const size_t all;
  absl::Mutex mutex;
  std::vector<int> free ABSL_GUARDED_BY(mutex);
  LoadTally tally ABSL_GUARDED_BY(mutex);
};

// Callback calls: this thread keeps `concurrency` requests in flight (a slot each; slot k on
// clients[k mod clients.size()]), taking a free slot, starting the call and going on; each
// completion records into the tally and frees its slot. Returns the tally once every slot is
// free again after the budget ran out.
LoadTally SendWithCallbacks(std::vector<std::unique_ptr<Client>>& clients, int concurrency,
                            const std::vector<v1::JobRequest>& requests, int64_t matrices,
                            RequestBudget& budget) {
  auto slots = std::make_shared<CallbackSlots>(concurrency);
  for (int64_t index = budget.Take(); index >= 0; index = budget.Take()) {
    int slot = 0;
    {
      absl::MutexLock lock(&slots->mutex);
      slots->mutex.Await(absl::Condition(
          +[](std::vector<int>* free) { return !free->empty(); }, &slots->free));
      slot = slots->free.back();
      slots->free.pop_back();
    }
    const v1::JobRequest& request = requests[static_cast<size_t>(index) % requests.size()];
    const auto start = std::chrono::steady_clock::now();
    clients[static_cast<size_t>(slot) % clients.size()]->StartJobRequest(
        request, [slots, slot, start, matrices](absl::Status status) {
          const auto end = std::chrono::steady_clock::now();
          absl::MutexLock lock(&slots->mutex);
          slots->tally.Record(status, matrices, absl::FromChrono(end - start), absl::Now());
          slots->free.push_back(slot);
        });
  }
  absl::MutexLock lock(&slots->mutex);
  slots->mutex.Await(absl::Condition(
      +[](CallbackSlots* s) { return s->free.size() == s->all; }, slots.get()));
  return std::move(slots->tally);
}

// Completion-queue calls: one thread per queue, `queues` of them; slot k goes on connection
// k mod clients.size() and that connection's queue (connection mod queues), so each thread keeps
// its slots in flight alone: it starts them, and on each answer records it and starts the slot's
// next request, until the budget runs out and its last call is in.
LoadTally SendOnQueues(std::vector<std::unique_ptr<Client>>& clients, int concurrency, int queues,
                       const std::vector<SerializedJobRequest>& requests, int64_t matrices,
                       RequestBudget& budget) {
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  for (const std::unique_ptr<Client>& client : clients) {
    stubs.push_back(std::make_unique<grpc::GenericStub>(client->channel()));
  }
  std::vector<LoadTally> tallies(static_cast<size_t>(queues));
  auto drive = [&](int queue) {
    struct Slot {
      size_t connection = 0;
      std::chrono::steady_clock::time_point start;
      QueuedCall call;
    };
    std::vector<size_t> connections;  // of this queue's slots
    for (int k = 0; k < concurrency; ++k) {
      const size_t connection = static_cast<size_t>(k) % clients.size();
      if (connection % static_cast<size_t>(queues) == static_cast<size_t>(queue)) {
        connections.push_back(connection);
      }
    }
    std::vector<Slot> slots(connections.size());  // not moved: the calls point into them
    for (size_t k = 0; k < slots.size(); ++k) slots[k].connection = connections[k];
    grpc::CompletionQueue cq;
    auto start_next = [&](Slot& slot) {
      const int64_t index = budget.Take();
      if (index < 0) return false;
      slot.start = std::chrono::steady_clock::now();
      slot.call.Start(*clients[slot.connection], *stubs[slot.connection],
                      requests[static_cast<size_t>(index) % requests.size()], &cq, &slot);
      return true;
    };
    size_t in_flight = 0;
    for (Slot& slot : slots) in_flight += start_next(slot) ? 1 : 0;
    LoadTally& tally = tallies[static_cast<size_t>(queue)];
    void* tag = nullptr;
    bool ok = false;
    while (in_flight > 0 && cq.Next(&tag, &ok)) {
      Slot& slot = *static_cast<Slot*>(tag);
      const auto end = std::chrono::steady_clock::now();
      tally.Record(slot.call.status(), matrices, absl::FromChrono(end - slot.start), absl::Now());
      if (!start_next(slot)) --in_flight;
    }
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  };
  {
    std::vector<std::jthread> threads;
    for (int queue = 0; queue < queues; ++queue) threads.emplace_back(drive, queue);
  }  // joins them
  LoadTally merged;
  for (const LoadTally& tally : tallies) merged.Merge(tally);
  return merged;
}

}  // namespace

absl::StatusOr<LoadReport> RunLoad(const std::string& target, const ClientOptions& client_options,
                                   const LoadOptions& options) {
  absl::StatusOr<std::vector<v1::JobRequest>> requests = MakeLoadRequests(options);
  if (!requests.ok()) return requests.status();

  // One client per blocking worker (per connection for callback calls), each connected before
  // the clock starts, so that the first requests do not pay for connecting; worker k on
  // connection k mod options.connections.
  const int client_count =
      options.api == LoadApi::kBlocking ? options.concurrency : options.connections;
  const int queues =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, options.connections);
  std::vector<std::unique_ptr<Client>> clients;
  for (int k = 0; k < client_count; ++k) {
    ClientOptions worker_options = client_options;
    if (options.connections > 1) worker_options.connection = k % options.connections + 1;
    clients.push_back(std::make_unique<Client>(target, worker_options));
    if (absl::StatusOr<bool> healthy = clients.back()->Healthy(); !healthy.ok()) {
      return absl::Status(healthy.status().code(),
                          absl::StrCat("health check of ", target,
                                       " before the run: ", healthy.status().message()));
    }
  }

  std::vector<SerializedJobRequest> serialized;
  if (options.api == LoadApi::kQueue) {
    for (const v1::JobRequest& request : *requests) {
      absl::StatusOr<SerializedJobRequest> one = clients.front()->SerializeJobRequest(request);
      if (!one.ok()) return one.status();
      serialized.push_back(*std::move(one));
    }
  }

  const auto start = std::chrono::steady_clock::now();
  const auto stop_at = options.duration > absl::ZeroDuration()
                           ? start + absl::ToChronoNanoseconds(options.duration)
                           : std::chrono::steady_clock::time_point::max();
  RequestBudget budget(options.requests, stop_at);
  const int64_t matrices = MatricesPerRequest(options);
  std::vector<LoadTally> tallies(clients.size());
  if (options.api == LoadApi::kCallback) {
    tallies.front() = SendWithCallbacks(clients, options.concurrency, *requests, matrices, budget);
  } else if (options.api == LoadApi::kQueue) {
    tallies.front() =
        SendOnQueues(clients, options.concurrency, queues, serialized, matrices, budget);
  } else {
    std::vector<std::jthread> workers;
    for (size_t k = 0; k < clients.size(); ++k) {
      workers.emplace_back(Work, std::ref(*clients[k]), std::cref(*requests), matrices,
                           std::ref(budget), std::ref(tallies[k]));
    }
  }  // joins the workers
  const auto end = std::chrono::steady_clock::now();

  LoadReport report;
  report.options = options;
  report.wall = absl::FromChrono(end - start);
  report.distinct_requests = static_cast<int64_t>(requests->size());
  for (const LoadTally& tally : tallies) report.tally.Merge(tally);
  return report;
}

}  // namespace matrixd
