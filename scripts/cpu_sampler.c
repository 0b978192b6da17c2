/* A sampling CPU profiler to preload (LD_PRELOAD) into a program on a host without perf, as the
 * GPU hosts are (scripts/profile.sh runs it; its summary is scripts/cpu_profile_summary.py).
 *
 * Every MTC_SAMPLE_US microseconds of the process's CPU time (ITIMER_PROF: the kernel checks it
 * on its tick, so samples come less often than a short period asks; the second header line lets
 * the summary say how often they came) the thread that used the CPU stops in a signal handler that
 * records its thread id and its stack (backtrace(), up to kMaxFrames return addresses). Sampling
 * starts after MTC_SAMPLE_DELAY_S seconds of CPU time, to leave out a program's start (importing
 * torch takes seconds).
 *
 * MTC_SAMPLE_CLOCK=perf samples each thread every MTC_SAMPLE_US of its own CPU time instead, by a
 * software task clock of perf_event_open whose overflow signals that thread: a high-resolution
 * timer, not the tick: one sample per 53-58 us of CPU time asked every 50 us (H100 host,
 * 2026-12-06), where ITIMER_PROF gave one per 5.6 ms (H200 host, 2026-12-03). Threads started
 * later (pthread_create, which this library wraps) get a clock of their own as they start, closed
 * as they end. Where the kernel refuses the clock (a perf_event_paranoid above 2, a seccomp
 * policy), it says so on stderr and samples with ITIMER_PROF; a header line names the clock used.
 *
 * At exit, the samples and, for every distinct address in them, its
 * object, offset and dynamic symbol (dladdr1; "-" outside every one) are written to the file MTC_SAMPLE_OUT.<pid>
 * (the pid, as a program's children inherit the preload and the variable):
 *
 *   # cpu_sampler: asked every <us> us, <seconds> s of CPU time sampled   (after the first line)
 *   A <address> <object> <offset> <symbol or ->     one per distinct address
 *   S <thread id> <is the main thread: 0/1> <address> <address> ...   innermost first
 *
 * Nothing is sampled without MTC_SAMPLE_OUT. Why backtrace() in a signal handler: it is not
 * async-signal-safe (its first call loads libgcc, done here at start; it may take a lock of
 * libgcc's that the interrupted thread holds while a C++ exception unwinds through frames a JIT
 * registered, and then hang), but it reads only unwind tables, and the programs profiled here
 * (the engine's benchmarks, Python with torch) throw rarely on their hot paths. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* kMaxSamples: 2^19 samples of 392 bytes, 200 MB of address space, touched only as samples come
 * (a 20 us per-thread clock fills 2^17 in under 3 s of four busy threads). */
enum { kMaxFrames = 48, kMaxSamples = 1 << 19 };

struct Sample {
  int32_t thread;
  int32_t frames;
  void* pc[kMaxFrames];
};

static struct Sample* samples;
static atomic_size_t taken;
static atomic_size_t dropped;
static char out_path[4096];
static pid_t main_thread;
static long asked_period_us;
static double delay_cpu_s;
static int per_thread_clock;        /* 1: each thread's perf task clock; 0: ITIMER_PROF */
static atomic_int user_time_only;   /* a thread's clock counts its user time alone */
static const char* perf_refusal;    /* why perf_event_open was refused, when it was asked for */
static atomic_int stopped;          /* set as the profile is written: no sample after it */
static pthread_key_t thread_clock;  /* a started thread's clock descriptor + 1, closed at its end */

/* The process's CPU seconds so far (async-signal-safe). */
static double process_cpu_s(void) {
  struct timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return (double)now.tv_sec + now.tv_nsec * 1e-9;
}

static void on_sample(int signal_number, siginfo_t* info, void* context) {
  (void)signal_number, (void)info, (void)context;
  if (atomic_load_explicit(&stopped, memory_order_relaxed)) return;
  const int saved_errno = errno;
  /* ITIMER_PROF starts after the delay itself; the per-thread clocks run from the start. */
  if (per_thread_clock && delay_cpu_s > 0 && process_cpu_s() < delay_cpu_s) {
    errno = saved_errno;
    return;
  }
  const size_t i = atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
  if (i < kMaxSamples) {
    struct Sample* s = &samples[i];
    s->thread = (int32_t)syscall(SYS_gettid);
    s->frames = backtrace(s->pc, kMaxFrames);
  } else {
    atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
  }
  errno = saved_errno;
}

static int compare_pointers(const void* a, const void* b) {
  const uintptr_t x = *(const uintptr_t*)a, y = *(const uintptr_t*)b;
  return (x > y) - (x < y);
}

static void write_profile(void) {
  /* A child forked without exec inherits this handler and the parent's samples: only the
   * process that started sampling writes them. */
  if (getpid() != main_thread) return;
  atomic_store(&stopped, 1);
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_PROF, &off, NULL);
  signal(SIGPROF, SIG_IGN);
  size_t count = atomic_load(&taken);
  if (count > kMaxSamples) count = kMaxSamples;
  /* A temporary name first: a run that dies while writing leaves no half-written profile. */
  char temporary[sizeof out_path + 16];
  snprintf(temporary, sizeof temporary, "%s.partial", out_path);
  FILE* out = fopen(temporary, "w");
  if (out == NULL) {
    fprintf(stderr, "cpu_sampler: cannot write %s: %s\n", temporary, strerror(errno));
    return;
  }
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += (size_t)samples[i].frames;
  uintptr_t* addresses = malloc((total ? total : 1) * sizeof *addresses);
  size_t n = 0;
  for (size_t i = 0; i < count; ++i)
    for (int k = 0; k < samples[i].frames; ++k) addresses[n++] = (uintptr_t)samples[i].pc[k];
  qsort(addresses, n, sizeof *addresses, compare_pointers);
  fprintf(out, "# cpu_sampler: %zu samples, %zu dropped (buffer full), main thread %d\n", count,
          (size_t)atomic_load(&dropped), (int)main_thread);
  /* What the samples cover: the process's CPU time after the delay, and the period asked for. The
   * kernel checks ITIMER_PROF on its tick, so a period shorter than the tick gives fewer samples
   * than asked; the summary says how many per CPU second there were. */
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    const double cpu_s = (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 +
                         (double)usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
    const double sampled_s = cpu_s > delay_cpu_s ? cpu_s - delay_cpu_s : 0.0;
    fprintf(out, "# cpu_sampler: asked every %ld us, %.6f s of CPU time sampled\n", asked_period_us,
            sampled_s);
  }
  if (per_thread_clock)
    fprintf(out, "# cpu_sampler: clock perf task-clock per thread%s\n",
            atomic_load(&user_time_only) ? ", user time only" : "");
  else
    fprintf(out, "# cpu_sampler: clock ITIMER_PROF, the process's CPU time%s%s%s\n",
            perf_refusal ? " (perf refused: " : "", perf_refusal ? perf_refusal : "",
            perf_refusal ? ")" : "");
  char program[4096];
  const ssize_t program_length = readlink("/proc/self/exe", program, sizeof program - 1);
  program[program_length > 0 ? program_length : 0] = '\0';
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && addresses[i] == addresses[i - 1]) continue;
    Dl_info where;
    const ElfW(Sym)* symbol = NULL;
    struct link_map* object = NULL;
    /* A return address points after its call: look up the byte before it, which is in the
     * calling function even when the call was its last instruction. (The innermost frame is the
     * interrupted instruction itself; one that was a function's first is charged to the function
     * before it, a rare error.) */
    const uintptr_t looked_up = addresses[i] - 1;
    if (dladdr1((void*)looked_up, &where, (void**)&symbol, RTLD_DL_SYMENT) != 0 &&
        dladdr1((void*)looked_up, &where, (void**)&object, RTLD_DL_LINKMAP) != 0 && object != NULL) {
      /* Named only when the address lies inside the symbol: a C library whose dladdr gives the
       * nearest exported symbol below would name a static function after an unrelated one. */
      const int inside = where.dli_sname != NULL && symbol != NULL &&
                         looked_up - (uintptr_t)where.dli_saddr < (uintptr_t)symbol->st_size;
      /* The main program is named as it was started ("python3"): its path instead. */
      const char* path = where.dli_fname;
      if ((path == NULL || strchr(path, '/') == NULL) && program[0] != '\0') path = program;
      char field[4096];
      snprintf(field, sizeof field, "%s", path != NULL && path[0] ? path : "-");
      for (char* c = field; *c; ++c)
        if (*c == ' ' || *c == '\t' || *c == '\n') *c = '?'; /* one field per column */
      /* The offset as addr2line wants it (the object's own addresses): less the load bias. */
      fprintf(out, "A %#lx %s %#lx %s\n", (unsigned long)addresses[i], field,
              (unsigned long)(addresses[i] - (uintptr_t)object->l_addr),
              inside ? where.dli_sname : "-");
    } else {
      fprintf(out, "A %#lx - 0 -\n", (unsigned long)addresses[i]);
    }
  }
  free(addresses);
  for (size_t i = 0; i < count; ++i) {
    /* A thread still in the handler as the process exits leaves a sample half written. */
    if (samples[i].thread == 0 || samples[i].frames <= 0) continue;
    fprintf(out, "S %d %d", samples[i].thread, samples[i].thread == main_thread);
    for (int k = 0; k < samples[i].frames; ++k) fprintf(out, " %#lx", (unsigned long)samples[i].pc[k]);
    fputc('\n', out);
  }
  if (fclose(out) != 0 || rename(temporary, out_path) != 0)
    fprintf(stderr, "cpu_sampler: cannot write %s: %s\n", out_path, strerror(errno));
}

/* This thread's own task clock, its every `asked_period_us` of CPU time a SIGPROF to this thread.
 * Kernel time counts too where the kernel allows it (a thread in the GPU driver's ioctl is busy).
 * Returns 0, or the errno of the refusal, and the descriptor in `*descriptor`. */
static int open_thread_clock(int* descriptor) {
  struct perf_event_attr clock;
  memset(&clock, 0, sizeof clock);
  clock.size = sizeof clock;
  clock.type = PERF_TYPE_SOFTWARE;
  clock.config = PERF_COUNT_SW_TASK_CLOCK;
  clock.sample_period = (unsigned long long)asked_period_us * 1000;
  clock.exclude_hv = 1;
  int fd = (int)syscall(SYS_perf_event_open, &clock, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    clock.exclude_kernel = 1; /* user time only: what a perf_event_paranoid of 2 allows */
    fd = (int)syscall(SYS_perf_event_open, &clock, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  }
  if (fd < 0) return errno;
  struct f_owner_ex owner = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
  if (fcntl(fd, F_SETSIG, SIGPROF) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
      fcntl(fd, F_SETFL, O_ASYNC) != 0) {
    const int error = errno;
    close(fd);
    return error;
  }
  if (clock.exclude_kernel) atomic_store(&user_time_only, 1);
  *descriptor = fd;
  return 0;
}

static void close_thread_clock(void* descriptor_plus_one) {
  close((int)((intptr_t)descriptor_plus_one - 1));
}

struct ThreadStart {
  void* (*routine)(void*);
  void* argument;
};

static void* start_sampled_thread(void* opaque) {
  const struct ThreadStart start = *(struct ThreadStart*)opaque;
  free(opaque);
  /* A refusal here, after the main thread's clock opened, leaves this thread unsampled. */
  int fd = -1;
  if (open_thread_clock(&fd) == 0) pthread_setspecific(thread_clock, (void*)(intptr_t)(fd + 1));
  return start.routine(start.argument);
}

/* Every thread the program starts gets a clock of its own before its own code runs. */
int pthread_create(pthread_t* thread, const pthread_attr_t* attributes, void* (*routine)(void*),
                   void* argument) {
  static int (*real_create)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  if (real_create == NULL) *(void**)&real_create = dlsym(RTLD_NEXT, "pthread_create");
  if (real_create == NULL) return EAGAIN;
  struct ThreadStart* start = per_thread_clock ? malloc(sizeof *start) : NULL;
  if (start == NULL) return real_create(thread, attributes, routine, argument);
  start->routine = routine;
  start->argument = argument;
  const int result = real_create(thread, attributes, start_sampled_thread, start);
  if (result != 0) free(start);
  return result;
}

__attribute__((constructor)) static void start(void) {
  const char* out_prefix = getenv("MTC_SAMPLE_OUT");
  if (out_prefix == NULL || out_prefix[0] == '\0') return;
  snprintf(out_path, sizeof out_path, "%s.%d", out_prefix, (int)getpid());
  const char* period_text = getenv("MTC_SAMPLE_US");
  const char* delay_text = getenv("MTC_SAMPLE_DELAY_S");
  const long period_us = period_text ? strtol(period_text, NULL, 10) : 1000;
  const double delay_s = delay_text ? strtod(delay_text, NULL) : 0.0;
  if (period_us <= 0 || delay_s < 0) {
    fprintf(stderr, "cpu_sampler: MTC_SAMPLE_US must be > 0 and MTC_SAMPLE_DELAY_S >= 0\n");
    return;
  }
  samples = calloc(kMaxSamples, sizeof *samples);
  if (samples == NULL) return;
  asked_period_us = period_us;
  delay_cpu_s = delay_s;
  main_thread = getpid();
  void* frame[1];
  backtrace(frame, 1); /* loads libgcc now, not in the first signal */
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_sample;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGPROF, &action, NULL);
  atexit(write_profile);
  const char* clock_text = getenv("MTC_SAMPLE_CLOCK");
  if (clock_text != NULL && strcmp(clock_text, "perf") == 0) {
    int fd = -1; /* the main thread's: open for the process's life */
    int refused = open_thread_clock(&fd);
    if (refused == 0 && (refused = pthread_key_create(&thread_clock, close_thread_clock)) != 0)
      close(fd);
    if (refused == 0) {
      per_thread_clock = 1;
      return;
    }
    fprintf(stderr,
            "cpu_sampler: MTC_SAMPLE_CLOCK=perf: perf_event_open refused (%s): ITIMER_PROF instead\n",
            strerror(refused));
    perf_refusal = strerror(refused);
  } else if (clock_text != NULL && clock_text[0] != '\0' && strcmp(clock_text, "itimer") != 0) {
    fprintf(stderr, "cpu_sampler: MTC_SAMPLE_CLOCK must be perf or itimer, not %s: ITIMER_PROF\n",
            clock_text);
  }
  struct itimerval timer;
  timer.it_interval.tv_sec = period_us / 1000000;
  timer.it_interval.tv_usec = period_us % 1000000;
  const long delay_us = (long)(delay_s * 1e6);
  timer.it_value.tv_sec = delay_us / 1000000;
  timer.it_value.tv_usec = delay_us % 1000000;
  if (delay_us == 0) timer.it_value = timer.it_interval;
  setitimer(ITIMER_PROF, &timer, NULL);
}
