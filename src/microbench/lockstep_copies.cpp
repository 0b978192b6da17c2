// One process per GPU, every copy released at the same moment in all of them: what the host
// shares, told apart from what one process shares. BM_MultiGpuCopy releases a thread per GPU of
// one process at once; scripts/gpu-check-multi.sh's `procs` label starts a process per GPU but
// lets their copies drift apart, so its ratios also differ by how much the copies overlapped.
// Here the processes meet in shared memory before every iteration, and rank 0 draws whether every
// rank copies or one rank alone (AloneDraw: equal shares, random order): both kinds of iteration
// fall on the same processes and nearby moments of the host, and each GPU is compared with its
// own time alone (a GPU may be slower than GPU 0 by its own place on the host). Ranks that do not
// copy in an iteration spin meanwhile, as the threads of BM_MultiGpuCopy's modes 4 and 5 do.
//
//   mtc_lockstep_copies RANK RANKS SHM_NAME h2d|d2h|cpu|walk ITERATIONS OUT_JSON [RUN [PATTERN]]
//
// RUN (default 1): the kind of iteration is drawn once per run of RUN iterations. With 1 a rank's
// copies come irregularly (its workers often asleep); with tens, each kind is a steady loop for a
// few milliseconds, as a training loop's copies are. PATTERN (loop_copies.h): hot (the default),
// step-sleep or step-busy: training steps, each rank's gap starting when the iteration is
// released, its copy timed after it.
//
// `cpu` copies the CPU batch to the CPU (new containers around the same tensors, no CUDA call):
// the meeting protocol's test on machines without a GPU. `walk` is a CPU->GPU copy's walk alone on
// the rank's thread, hot (new containers, the packing plan and the output views; no CUDA call, so
// it too runs without a GPU): BM_MultiGpuParts's walk, one process per GPU, to tell whether the
// walk's growth with several GPUs in one process comes from the process or from the host.
//
// Start RANKS processes in any order (the others wait for rank 0's shared memory), each on its
// own GPU: CUDA_VISIBLE_DEVICES=g, so each copies on its device 0 as a training job would. Each
// writes {"rank", "all_us", "alone_us"} (its copy times, us: with every rank, alone) to OUT_JSON.
// Exit codes: 1 a copy failed; 2 bad arguments or setup (no CUDA device, the shared memory, the
// output file); 3 a rank waited longer than MTC_LOCKSTEP_WAIT_S seconds (default 60) for the
// others. Rank 0 removes the shared memory's name once every rank has mapped it, so a failed run
// leaves none behind past that point.
#include <c10/cuda/CUDAFunctions.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "alone_draw.h"
#include "bench_support.h"
#include "detail/worker_pool.h"
#include "loop_copies.h"
#include "reference_batch.h"

namespace {

using Clock = std::chrono::steady_clock;

// Lives in the shared memory: lock-free atomics work across processes that map it.
struct Meeting {
  std::atomic<int64_t> generation;  // the iteration released; rank 0 advances it
  std::atomic<int> who;             // the iteration's kind: -1 every rank copies, else that rank
  std::atomic<int> ready;           // ranks that finished their warm-up
  std::atomic<int> done;            // ranks done with the current iteration
};
static_assert(std::atomic<int64_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

[[noreturn]] void fail(int code, const std::string& why) {
  std::fprintf(stderr, "mtc_lockstep_copies: %s\n", why.c_str());
  std::exit(code);
}

// How long a rank waits for the others before it gives up (one of them died).
std::chrono::seconds patience() {
  const char* text = std::getenv("MTC_LOCKSTEP_WAIT_S");
  const int seconds = text != nullptr ? std::atoi(text) : 0;
  return std::chrono::seconds(seconds > 0 ? seconds : 60);
}

Meeting* meet(const std::string& name, bool create) {
  const auto deadline = Clock::now() + patience();
  int fd = -1;
  while ((fd = shm_open(name.c_str(), create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600)) < 0) {
    if (create) fail(2, "cannot create shared memory " + name + " (left from an earlier run?)");
    if (Clock::now() > deadline) fail(3, "rank 0 never made shared memory " + name);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (create && ftruncate(fd, sizeof(Meeting)) != 0) fail(2, "cannot size shared memory");
  // A rank that opens the memory before rank 0 sized it sees it empty: wait for the size.
  struct stat info {};
  while (fstat(fd, &info) == 0 && info.st_size < static_cast<off_t>(sizeof(Meeting))) {
    if (Clock::now() > deadline) fail(3, "shared memory " + name + " never got its size");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  void* at = mmap(nullptr, sizeof(Meeting), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (at == MAP_FAILED) fail(2, "cannot map shared memory " + name);
  return static_cast<Meeting*>(at);  // zero-filled by ftruncate: every count starts at 0
}

// Spins until `ok()`, giving up after patience() (a rank died). Yields the CPU now and then, so
// that ranks sharing fewer cores than they are (the 2-core CI machine) still make progress.
template <class Ok>
void wait_for(Ok ok, const char* what) {
  const auto deadline = Clock::now() + patience();
  for (int64_t spins = 1; !ok(); ++spins) {
    mtc::detail::cpu_relax();
    if (spins % 1024 == 0) {
      std::this_thread::yield();
      if (Clock::now() > deadline) fail(3, std::string("gave up waiting for ") + what);
    }
  }
}

void write_times(std::ofstream& out, const char* name, const std::vector<double>& us) {
  out << '"' << name << "\": [";
  for (size_t i = 0; i < us.size(); ++i) out << (i ? ", " : "") << us[i];
  out << ']';
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7 || argc > 9)
    fail(2, "usage: RANK RANKS SHM_NAME h2d|d2h|cpu|walk ITERATIONS OUT_JSON [RUN [PATTERN]]");
  const int rank = std::atoi(argv[1]);
  const int ranks = std::atoi(argv[2]);
  const std::string name = argv[3];
  const std::string direction = argv[4];
  const int64_t iterations = std::atoll(argv[5]);
  const int64_t run = argc >= 8 ? std::atoll(argv[7]) : 1;
  mtc::microbench::LoopPattern pattern = mtc::microbench::LoopPattern::kHot;
  try {
    if (argc == 9) pattern = mtc::microbench::loop_pattern_from_name(argv[8]);
  } catch (const std::exception& e) {
    fail(2, e.what());
  }
  if (ranks < 1 || rank < 0 || rank >= ranks || iterations < 1 || run < 1 || name.empty() ||
      name[0] != '/' ||
      (direction != "h2d" && direction != "d2h" && direction != "cpu" && direction != "walk"))
    fail(2,
         "bad arguments (RANK in [0, RANKS), ITERATIONS and RUN >= 1, SHM_NAME like /name, "
         "h2d|d2h|cpu|walk)");
  const bool walk_only = direction == "walk";
  if (walk_only && pattern != mtc::microbench::LoopPattern::kHot)
    fail(2, "the walk runs in the hot pattern only");
  try {
    c10::Device target(c10::kCPU);
    if (direction == "h2d" || direction == "d2h") {
      if (c10::cuda::device_count() < 1) fail(2, "no CUDA device");
      c10::cuda::set_device(0);
      if (direction == "h2d") target = c10::Device(c10::kCUDA, 0);
    }
    std::vector<c10::IValue> inputs;
    for (int i = 0; i < mtc::microbench::inputs_for(pattern); ++i) {
      inputs.push_back(mtc::microbench::make_reference_batch());
      if (direction == "d2h")
        inputs.back() = mtc::microbench::map_to(inputs.back(), c10::Device(c10::kCUDA, 0));
    }
    if (direction == "d2h") c10::cuda::device_synchronize();
    const c10::IValue walked = inputs.front();
    mtc::microbench::LoopCopies loop(std::move(inputs), target, pattern);
    const c10::Device walk_target(c10::kCUDA, 0);
    auto one = [&] {
      return 1e6 *
             (walk_only ? mtc::microbench::walk_seconds(walked, walk_target) : loop.copy().seconds);
    };
    // The pools, pinned memory and allocator; for steps, the pool's forecast of the next copy.
    for (int i = 0; i < (pattern == mtc::microbench::LoopPattern::kHot ? 50 : 10); ++i) one();

    Meeting* m = meet(name, rank == 0);
    m->ready.fetch_add(1);
    wait_for([&] { return m->ready.load() == ranks; }, "every rank's warm-up");
    if (rank == 0) shm_unlink(name.c_str());  // every rank has it mapped
    mtc::microbench::AloneDraw draw(ranks, std::random_device{}());
    std::vector<double> all_us, alone_us;
    for (int64_t i = 1; i <= iterations; ++i) {
      if (rank == 0) {
        m->done.store(0);
        if ((i - 1) % run == 0) m->who.store(draw.next());
        m->generation.store(i, std::memory_order_release);
      } else {
        wait_for([&] { return m->generation.load(std::memory_order_acquire) == i; }, "rank 0");
      }
      const int who = m->who.load();
      if (who < 0) {
        all_us.push_back(one());
      } else if (who == rank) {
        alone_us.push_back(one());
      }
      m->done.fetch_add(1, std::memory_order_acq_rel);
      if (rank == 0)
        wait_for([&] { return m->done.load(std::memory_order_acquire) == ranks; },
                 "the iteration's copies");
    }
    std::ofstream out(argv[6]);
    out << "{\"rank\": " << rank << ", ";
    write_times(out, "all_us", all_us);
    out << ", ";
    write_times(out, "alone_us", alone_us);
    out << "}\n";
    if (!out) fail(2, std::string("cannot write ") + argv[6]);
  } catch (const std::exception& e) {
    fail(1, e.what());
  }
  return 0;
}
