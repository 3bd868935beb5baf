#include "client/load_runner.h"

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

  const auto start = std::chrono::steady_clock::now();
  const auto stop_at = options.duration > absl::ZeroDuration()
                           ? start + absl::ToChronoNanoseconds(options.duration)
                           : std::chrono::steady_clock::time_point::max();
  RequestBudget budget(options.requests, stop_at);
  const int64_t matrices = MatricesPerRequest(options);
  std::vector<LoadTally> tallies(clients.size());
  if (options.api == LoadApi::kCallback) {
    tallies.front() = SendWithCallbacks(clients, options.concurrency, *requests, matrices, budget);
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
