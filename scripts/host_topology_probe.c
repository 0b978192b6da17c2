/* What the GPU host's virtual machine does not say about its CPUs: whether some pairs of CPUs
 * share a cache (or a core) and others sit farther apart, and whether memory is as near to every
 * CPU. The VM reports one NUMA node and one thread per core; copies with several GPUs slow down
 * in ways that neither locks nor the engine's data explain, and the same work takes up to twice
 * as long on one GPU's threads as on another's (results/notes/2026-11-28.md).
 *
 *   host_topology_probe [ROUND_TRIPS]     (default 4000; compiled by scripts/gpu-check.sh)
 *
 * Prints, for the CPUs the process may run on:
 *   pair A B NS        the median time of one round trip of a cache line between a thread on
 *                      CPU A and one on CPU B (three trials of ROUND_TRIPS round trips each)
 *   memory C OWN SHARED  ns per dependent load from CPU C over 32 MiB in random order, each line
 *                      once, after one pass: memory first touched by C itself, and memory first
 *                      touched by the first CPU. 32 MiB fits the last-level cache the VMs report,
 *                      so this is that cache's latency and address translation's from C; a CPU
 *                      far above the others sat elsewhere at that moment
 * and a histogram of the pair times. Pairs that share a core or a cache stand out as a mode of
 * their own; a host of two hidden sockets as two modes with half the pairs in each. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { kLine = 64, kTrials = 3, kMaxCpus = 1024 };
static const size_t kChaseBytes = (size_t)32 << 20;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The bounced line: the first CPU writes odd values, the second even ones; kFailed when the
 * second could not run on its CPU. */
enum { kFailed = -1 };
static _Alignas(kLine) _Atomic long flag;
static long round_trips = 4000;

struct partner {
  int cpu;
  long rounds;
};

static void* answer(void* arg) {
  const struct partner* p = arg;
  if (pin(p->cpu) != 0) {
    atomic_store(&flag, kFailed);
    return (void*)1;
  }
  for (long i = 0; i < p->rounds; ++i) {
    while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1) {
    }
    atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

/* Median ns of one round trip between `a` (this thread, pinned) and `b`; negative on failure. */
static double round_trip_ns(int a, int b) {
  double trials[kTrials];
  for (int t = 0; t < kTrials; ++t) {
    atomic_store(&flag, 0);
    struct partner p = {b, round_trips + 1};
    pthread_t thread;
    if (pin(a) != 0 || pthread_create(&thread, NULL, answer, &p) != 0) return -1;
    /* The first round trip waits for the partner to start: not timed. Only the partner can
     * have changed the flag first, so a failed partner is seen here. */
    long expected = 0;
    if (!atomic_compare_exchange_strong(&flag, &expected, 1)) {
      pthread_join(thread, NULL);
      return -1;
    }
    long seen;
    while ((seen = atomic_load_explicit(&flag, memory_order_acquire)) != 2) {
      if (seen == kFailed) {
        pthread_join(thread, NULL);
        return -1;
      }
    }
    const double start = now_ns();
    for (long i = 1; i <= round_trips; ++i) {
      atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
      while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) {
      }
    }
    trials[t] = (now_ns() - start) / (double)round_trips;
    void* failed = NULL;
    pthread_join(thread, &failed);
    if (failed != NULL) return -1;
  }
  qsort(trials, kTrials, sizeof trials[0], compare_doubles);
  return trials[kTrials / 2];
}

/* A cycle through every line of `bytes` in random order, written (first touched) by the caller. */
static void** make_chase(size_t bytes, unsigned seed) {
  void** lines = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (lines == MAP_FAILED) return NULL;
  const size_t count = bytes / kLine, stride = kLine / sizeof(void*);
  size_t* order = malloc(count * sizeof *order);
  if (order == NULL) {
    munmap(lines, bytes);
    return NULL;
  }
  for (size_t i = 0; i < count; ++i) order[i] = i;
  for (size_t i = count - 1; i > 0; --i) {
    const size_t j = (size_t)rand_r(&seed) % (i + 1);
    const size_t k = order[i];
    order[i] = order[j];
    order[j] = k;
  }
  for (size_t i = 0; i < count; ++i)
    lines[order[i] * stride] = &lines[order[(i + 1) % count] * stride];
  free(order);
  return lines;
}

/* One pass over every line of a chase from make_chase(). */
static double chase_ns(void** start) {
  const long steps = (long)(kChaseBytes / kLine);
  void** p = start;
  const double t0 = now_ns();
  for (long i = 0; i < steps; ++i) p = (void**)*p;
  const double elapsed = now_ns() - t0;
  __asm__ volatile("" : : "r"(p));
  return elapsed / (double)steps;
}

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && (round_trips = strtol(argv[1], NULL, 10)) < 100)) {
    fprintf(stderr, "usage: host_topology_probe [ROUND_TRIPS >= 100]\n");
    return 2;
  }
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    perror("host_topology_probe: sched_getaffinity");
    return 1;
  }
  int cpus[kMaxCpus], n = 0;
  for (int c = 0; c < kMaxCpus && c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[n++] = c;
  printf("cpus %d round_trips %ld\n", n, round_trips);

  enum { kBuckets = 40, kBucketNs = 25 };
  long histogram[kBuckets] = {0};
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const double ns = round_trip_ns(cpus[i], cpus[j]);
      if (ns < 0) {
        fprintf(stderr, "host_topology_probe: CPUs %d and %d could not be used\n", cpus[i],
                cpus[j]);
        return 1;
      }
      printf("pair %d %d %.1f\n", cpus[i], cpus[j], ns);
      const int bucket = (int)(ns / kBucketNs);
      ++histogram[bucket < kBuckets ? bucket : kBuckets - 1];
    }
    fflush(stdout);
  }
  printf("histogram of pair round trips (ns: pairs)\n");
  for (int b = 0; b < kBuckets; ++b) {
    if (histogram[b] == 0) continue;
    if (b == kBuckets - 1)
      printf("  >=%d: %ld\n", b * kBucketNs, histogram[b]);
    else
      printf("  %d-%d: %ld\n", b * kBucketNs, (b + 1) * kBucketNs, histogram[b]);
  }

  if (pin(cpus[0]) != 0) return 1;
  void** shared = make_chase(kChaseBytes, 1);
  if (shared == NULL) {
    perror("host_topology_probe: memory");
    return 1;
  }
  for (int i = 0; i < n; ++i) {
    if (pin(cpus[i]) != 0) return 1;
    void** own = make_chase(kChaseBytes, 2 + (unsigned)i);
    if (own == NULL) {
      perror("host_topology_probe: memory");
      return 1;
    }
    chase_ns(own); /* the pass after the first touch, to warm what can be warmed */
    const double own_ns = chase_ns(own);
    chase_ns(shared);
    const double shared_ns = chase_ns(shared);
    printf("memory %d %.1f %.1f\n", cpus[i], own_ns, shared_ns);
    fflush(stdout);
    munmap(own, kChaseBytes);
  }
  munmap(shared, kChaseBytes);
  return 0;
}
