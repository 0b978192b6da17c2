/* Keeps some of the host's CPUs busy, to see what busy neighbours cost a copy: the GPU host's
 * VM shows its CPUs as cores, but the probe (scripts/host_topology_probe.c) finds pairs of them
 * sharing a core now and then, so a thread's speed can depend on what runs beside it. The kinds
 * of work are those of a copy's neighbours:
 *   pause   spin-waits of pause instructions, as the engine's idle workers wait for a task
 *   tpause  the same wait in TPAUSE's light sleep (x86 WAITPKG), when the CPU has it
 *   alu     arithmetic in registers (a thread that computes)
 *   memory  writes over 32 MiB of its own (a thread that streams memory)
 *
 *   busy_cpus THREADS SECONDS KIND      (compiled with -mwaitpkg where the compiler takes it)
 *
 * Exits 0 after SECONDS, 2 on bad arguments, 3 when KIND is tpause and the CPU lacks it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

static atomic_int stop;
static const size_t kMemoryBytes = (size_t)32 << 20;

static int has_waitpkg(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 5)) != 0;
#else
  return 0;
#endif
}

/* One step of a spin-wait, as the engine's cpu_relax(). */
static inline void relax(void) {
#if defined(__x86_64__)
  _mm_pause();
#else
  __asm__ volatile("" ::: "memory");
#endif
}

static void* work(void* kind_name) {
  const char* kind = kind_name;
  if (strcmp(kind, "pause") == 0) {
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
      for (int i = 0; i < 32; ++i) relax();
  } else if (strcmp(kind, "tpause") == 0) {
#ifdef __WAITPKG__
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
      _tpause(0 /* C0.2, the deeper light sleep */, __rdtsc() + 2000);
#endif
  } else if (strcmp(kind, "alu") == 0) {
    uint64_t x = 88172645463325252ull;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
      for (int i = 0; i < 4096; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
      }
      __asm__ volatile("" : "+r"(x));
    }
  } else {
    char* buffer = malloc(kMemoryBytes);
    if (buffer == NULL) return NULL;
    for (unsigned char value = 0; !atomic_load_explicit(&stop, memory_order_relaxed); ++value)
      memset(buffer, value, kMemoryBytes);
    free(buffer);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const char* kinds[] = {"pause", "tpause", "alu", "memory"};
  const int threads = argc == 4 ? atoi(argv[1]) : 0;
  const int seconds = argc == 4 ? atoi(argv[2]) : 0;
  int known = 0;
  for (size_t i = 0; argc == 4 && i < sizeof kinds / sizeof kinds[0]; ++i)
    known |= strcmp(argv[3], kinds[i]) == 0;
  if (threads < 1 || threads > 1024 || seconds < 1 || !known) {
    fprintf(stderr, "usage: busy_cpus THREADS(1-1024) SECONDS(>=1) pause|tpause|alu|memory\n");
    return 2;
  }
  if (strcmp(argv[3], "tpause") == 0) {
#ifdef __WAITPKG__
    const int compiled = 1;
#else
    const int compiled = 0;
#endif
    if (!has_waitpkg() || !compiled) {
      fprintf(stderr, "busy_cpus: tpause: %s\n",
              compiled ? "this CPU has no WAITPKG" : "compiled without -mwaitpkg");
      return 3;
    }
  }
  pthread_t* ids = calloc((size_t)threads, sizeof *ids);
  if (ids == NULL) return 1;
  int started = 0;
  while (started < threads && pthread_create(&ids[started], NULL, work, argv[3]) == 0) ++started;
  sleep((unsigned)seconds);
  atomic_store(&stop, 1);
  for (int i = 0; i < started; ++i) pthread_join(ids[i], NULL);
  free(ids);
  if (started < threads) {
    fprintf(stderr, "busy_cpus: started %d of %d threads\n", started, threads);
    return 1;
  }
  return 0;
}
