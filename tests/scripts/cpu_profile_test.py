#!/usr/bin/env python3
"""The sampling profiler without a GPU: scripts/profile.sh end to end on a small C program whose
truth is known (on the main thread, one function burns three times the CPU of another; a second
thread runs only the smaller one; the program exits with 3 and prints a few lines), then
scripts/cpu_profile_summary.py on synthetic profiles in scripts/cpu_sampler.c's format (the
sampler's frames and the signal trampoline dropped, --focus, --top, the functions on every
stack left out, malformed lines refused, a static function named only from a full symbol
table, --callers-of), profile.sh's sections for several --focus and its --raw copy, and its usage errors.

    python3 tests/scripts/cpu_profile_test.py
"""
import gzip
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUMMARY = ROOT / "scripts" / "cpu_profile_summary.py"
PROFILE = ROOT / "scripts" / "profile.sh"

# burn_three's rounds are three of burn_one's: a multiply-add chain, bound by its latency, costs
# the same per step wherever the loop lands (a loop through a volatile on the stack does not: on
# a CPU that renames memory its cost depends on alignment, and the shares came out 85:15). Rounds
# are short (10,000 steps, tens of microseconds) against the kernel's tick, so a tick falls at any
# point of the loop: with rounds of 100,000 steps the clock, read every ten rounds, was read about
# once a tick, and on a loaded machine burn_three took 88-91 % of the samples in 3 runs of 8. The
# clock is read every ten rounds, and the worker makes no call but burn_one until it is told to
# stop, keeps its count in a register (its output is main's) and reads only `done`, alone on its
# cache line: a system call, a thread's first printf or a load or store that waits for a line
# the other thread writes shows in the samples (a count kept on main's stack, beside where main's
# calls push, put a sample in 250 in the worker's own loop).
PROGRAM = r"""
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { kRound = 10000 };
static _Alignas(64) atomic_int done;

__attribute__((noinline)) unsigned long burn_one(unsigned long x) {
  for (long i = 0; i < kRound; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

__attribute__((noinline)) unsigned long burn_three(unsigned long x) {
  for (long i = 0; i < 3L * kRound; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

static double thread_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void* worker(void* rounds) {
  long n = 0;
  unsigned long x = 2;
  while (!atomic_load_explicit(&done, memory_order_relaxed)) x = burn_one(x), ++n;
  *(long*)rounds = x == 0 ? -n : n;  /* x used */
  return NULL;
}

int main(void) {
  pthread_t thread;
  long rounds = 0, worker_rounds = 0;
  unsigned long x = 1;
  if (pthread_create(&thread, NULL, worker, &worker_rounds) != 0) return 1;
  while (thread_cpu_s() < MAIN_CPU_S)
    for (int i = 0; i < 10; ++i) x = burn_three(x), x = burn_one(x), ++rounds;
  atomic_store(&done, 1);
  pthread_join(thread, NULL);
  printf("main: %ld rounds of burn_three and burn_one, the worker %ld of burn_one (%lx)\n", rounds,
         worker_rounds, x);
  fprintf(stderr, "main: a line on stderr\n");
  printf("main: exiting with 3\n");
  return 3;
}
"""
# At least ~150 main-thread samples where the kernel's tick, which ITIMER_PROF rounds up to, is
# 4 ms (1 ms on the GPU hosts), even when the kernel hands most of the process timer's signals
# to the other thread: with 1.2 s, a CI machine once gave the main thread 122 samples of 368
# (2 CPUs, 2026-11-29), where the ticks alone would have given about 300.
MAIN_CPU_S = 2.4
THREE_SHARE = 0.75

GROUP = re.compile(r"^### (.+): (\d+) samples$")
ROW = re.compile(r"^\| (\d+\.\d) % \| (\d+) \| `([^`]*)` \|")  # then, it may be, more columns
LEFT_OUT = re.compile(r"^\*\*On the stack \(inclusive; (\d+) functions on every stack left out\)\*\*$")


def groups(markdown):
    """{group: {"samples": n, "self": {function: n}, "inclusive": {function: n}, "everywhere": k}}
    from a summary's markdown; every row's share must be its count over the group's."""
    found, group, table = {}, None, None
    for line in markdown.splitlines():
        if m := GROUP.match(line):
            group = found.setdefault(m[1], {"samples": int(m[2]), "self": {}, "inclusive": {}, "everywhere": None})
            table = None
        elif line.startswith("**Where the samples stopped (self)**"):
            table = "self"
        elif m := LEFT_OUT.match(line):
            table = "inclusive"
            group["everywhere"] = int(m[1])
        elif line.startswith("Command (exit"):
            group = table = None
        elif (m := ROW.match(line)) and group is not None and table is not None:
            share, n = float(m[1]), int(m[2])
            assert m[3] not in group[table], (m[3], line)
            assert abs(share - 100.0 * n / group["samples"]) < 0.051, line
            group[table][m[3]] = n
    return found


def check_end_to_end(tmp, clock="itimer"):
    """scripts/profile.sh on the program: the shares, the threads, the exit status, the output;
    with MTC_SAMPLE_CLOCK=`clock`."""
    source, program = tmp / "burn.c", tmp / "burn"
    if not program.exists():
        source.write_text(PROGRAM)
        subprocess.run(["cc", "-O1", "-rdynamic", "-pthread", f"-DMAIN_CPU_S={MAIN_CPU_S}", "-o", str(program),
                        str(source)], check=True)
    out = tmp / f"profile-{clock}.md"
    out.write_text("# written before\n")
    # Absolute paths: profile.sh runs from the repository's root.
    env = dict(os.environ, MTC_SAMPLE_CLOCK=clock, MTC_SAMPLE_US="1000")
    result = subprocess.run(["bash", str(PROFILE), str(out), "--title", "two burners", "--", str(program)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 3, (result.returncode, result.stdout + result.stderr)
    assert "main: exiting with 3" in result.stdout, result.stdout  # the output's last lines
    text = out.read_text()
    assert text.startswith("# written before\n## two burners\n"), text  # appended
    assert re.search(r"^\d+ samples from 2 threads\.$", text, re.M), text
    assert f"Command (exit 3): `{program}`; the last lines of its output:" in text, text
    block = text.split("```")[1].splitlines()
    for line in ("main: exiting with 3", "main: a line on stderr"):
        assert line in block, (line, text)
    assert any(line.startswith("main: ") and "rounds" in line for line in block), text

    found = groups(text)
    assert set(found) == {"main thread", "other threads"}, text
    main = found["main thread"]
    n = main["samples"]
    assert n >= 150, f"only {n} main-thread samples in {MAIN_CPU_S} s of CPU: a tick over 8 ms?\n{text}"
    three, one = main["self"].get("burn_three", 0), main["self"].get("burn_one", 0)
    assert three + one >= 0.95 * n, text  # not the trampoline's, nor another frame's
    sigma = math.sqrt(THREE_SHARE * (1 - THREE_SHARE) / n)
    tolerance = max(0.10, 4 * sigma)
    share = three / n
    assert abs(share - THREE_SHARE) <= tolerance, (
        f"burn_three: {share:.3f} of {n} main-thread samples, not {THREE_SHARE} +- {tolerance:.3f}\n{text}")
    # The worker never runs burn_three; a rare sample may stop in its own loop or its thread's
    # start or end instead of in burn_one.
    other = found["other threads"]
    assert other["samples"] >= 20 and other["self"].get("burn_one", 0) >= 0.95 * other["samples"], text
    assert "burn_three" not in other["self"] and "burn_three" not in other["inclusive"], text
    clock_line = re.search(r"^Sampling clock: (.+)\.$", text, re.M)
    assert clock_line, text
    if clock == "perf" and "refused" not in clock_line[1]:
        # Each thread on a clock of its own, the worker's set up as it started: about one sample
        # per ms of each thread's CPU time, where the tick gave a few hundred in all.
        assert clock_line[1].startswith("perf task-clock per thread"), text
        assert n >= 0.5 * MAIN_CPU_S * 1000 and other["samples"] >= 0.5 * MAIN_CPU_S * 1000, text
    elif clock == "perf":
        # Refused here: sampled by ITIMER_PROF all the same, saying why on the program's stderr.
        assert clock_line[1].startswith("ITIMER_PROF") and "MTC_SAMPLE_CLOCK=perf: perf_event_open refused" \
            in result.stdout + result.stderr + text, text
    else:
        assert clock_line[1] == "ITIMER_PROF, the process's CPU time", text
    return share, n, tolerance, clock_line[1]


# Synthetic profiles: the sampler's frames (in an object named cpu_sampler) come first, then the
# signal trampoline (named after a neighbour, as dladdr does), then the program's frames.
FRAMES = {
    "handler": ("/tmp/tmp.x/cpu_sampler.so", "-"),
    "handler_inner": ("/tmp/tmp.x/cpu_sampler.so", "-"),
    "trampoline": ("/lib/x86_64-linux-gnu/libc.so.6", "sigaction_neighbour"),
    "leaf_a": ("/opt/prog", "leaf_a"),
    "leaf_b": ("/opt/prog", "leaf_b"),
    "leaf_c": ("/opt/prog", "leaf_c"),
    "mid": ("/opt/prog", "mid"),
    "main": ("/opt/prog", "main"),
    "libc_start": ("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main"),
    "worker": ("/opt/prog", "worker"),
    "start_thread": ("/lib/x86_64-linux-gnu/libc.so.6", "start_thread"),
}
ADDRESS = {name: 0x7f0000001000 + 0x1000 * i for i, name in enumerate(FRAMES)}
SIGNAL = ["handler", "trampoline"]
SAMPLES = (  # (thread, is main, stack innermost first, how many)
    [(100, 1, SIGNAL + ["leaf_a", "mid", "main", "libc_start"], 6),
     (100, 1, ["handler", "handler_inner", "trampoline", "leaf_b", "mid", "main", "libc_start"], 2),
     (100, 1, SIGNAL + ["leaf_b", "main", "libc_start"], 2),
     (101, 0, SIGNAL + ["leaf_c", "worker", "start_thread"], 4),
     (101, 0, SIGNAL + ["leaf_a", "mid", "worker", "start_thread"], 1)])


def profile_lines():
    lines = ["# cpu_sampler: 15 samples, 0 dropped (buffer full), main thread 100"]
    for i, (name, (obj, symbol)) in enumerate(FRAMES.items()):
        lines.append(f"A {ADDRESS[name]:#x} {obj} {0x100 * (i + 1):#x} {symbol}")
    for thread, is_main, stack, count in SAMPLES:
        lines += [f"S {thread} {is_main} " + " ".join(f"{ADDRESS[f]:#x}" for f in stack)] * count
    return lines


def summarize(path, *args):
    return subprocess.run([sys.executable, str(SUMMARY), str(path), *args], capture_output=True, text=True)


def check_summary(tmp):
    path = tmp / "raw.123"
    path.write_text("\n".join(profile_lines()) + "\n")
    result = summarize(path, "--title", "synthetic")
    assert result.returncode == 0 and result.stderr == "", result
    text = result.stdout
    assert text.startswith("## synthetic\n\n15 samples from 2 threads.\n"), text
    for dropped in ("cpu_sampler", "sigaction_neighbour"):
        assert dropped not in text, (dropped, text)
    assert groups(text) == {
        "main thread": {"samples": 10, "self": {"leaf_a": 6, "leaf_b": 4},
                        "inclusive": {"mid": 8, "leaf_a": 6, "leaf_b": 4}, "everywhere": 2},
        "other threads": {"samples": 5, "self": {"leaf_c": 4, "leaf_a": 1},
                          "inclusive": {"leaf_c": 4, "leaf_a": 1, "mid": 1}, "everywhere": 2}}, text
    for row in ("| 60.0 % | 6 | `leaf_a` |", "| 80.0 % | 8 | `mid` |", "| 20.0 % | 1 | `leaf_a` |"):
        assert row in text, (row, text)
    # Who called the functions the samples stopped in, the most frequent first.
    for row in ("| 60.0 % | 6 | `leaf_a` | `mid` (6) |", "| 40.0 % | 4 | `leaf_b` | `mid` (2), `main` (2) |",
                "| 80.0 % | 4 | `leaf_c` | `worker` (4) |"):
        assert row in text, (row, text)

    # --focus: the samples with mid on their stack, 8 of the main thread's and 1 of the other's;
    # mid is then on every stack and leaves the inclusive table.
    result = summarize(path, "--focus", "^mid$")
    assert result.returncode == 0, result
    assert "15 samples from 2 threads; 9 with `^mid$` on their stack." in result.stdout, result.stdout
    assert groups(result.stdout) == {
        "main thread": {"samples": 8, "self": {"leaf_a": 6, "leaf_b": 2},
                        "inclusive": {"leaf_a": 6, "leaf_b": 2}, "everywhere": 3},
        "other threads": {"samples": 1, "self": {"leaf_a": 1}, "inclusive": {}, "everywhere": 4}}, result.stdout
    assert "| 75.0 % | 6 | `leaf_a` |" in result.stdout, result.stdout
    result = summarize(path, "--focus", "no_such_function")
    assert result.returncode == 0 and "; 0 with" in result.stdout and groups(result.stdout) == {}, result

    # --top 1: one row a table.
    top = groups(summarize(path, "--top", "1").stdout)
    assert top["main thread"]["self"] == {"leaf_a": 6} and top["main thread"]["inclusive"] == {"mid": 8}, top

    # Malformed lines: exit 2 and one line on stderr that names the file and the line.
    good = profile_lines()
    bad_lines = ["X 0x1000", "S 100", "A 0x1000 /opt/prog 0x10",
                 "A 0x1000 /opt/a folder/prog 0x10 f"]  # an object path with a space
    for where in (1, len(good)):
        for bad in bad_lines:
            lines = good[:where] + [bad] + good[where:]
            path.write_text("\n".join(lines) + "\n")
            result = summarize(path)
            assert result.returncode == 2 and result.stdout == "", (bad, result)
            assert len(result.stderr.splitlines()) == 1 and f"{path}:{where + 1}:" in result.stderr, (bad, result)
    # A number that is not one: exit 2 and one line too.
    path.write_text("\n".join(good + ["S 100 1 0xzz"]) + "\n")
    result = summarize(path)
    assert result.returncode == 2 and result.stdout == "" and len(result.stderr.splitlines()) == 1, result
    result = summarize(tmp / "no_such_profile")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result


def check_usage(tmp):
    """profile.sh's usage errors exit 2 before they build or run anything; a command that writes
    no profile (it leaves through _exit) exits 2 as well."""
    out = tmp / "usage.md"
    for args in (["true"], ["--"], ["--title", "t"], ["--title"], ["--top", "3", "true"],
                 ["--bogus", "x", "--", "true"]):
        result = subprocess.run(["bash", str(PROFILE), str(out), *args], capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and "usage" in result.stderr, (args, result)
    assert not out.exists()
    result = subprocess.run(["bash", str(PROFILE), str(out), "--", sys.executable, "-c", "import os; os._exit(5)"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "wrote no profile" in result.stderr, result
    assert not out.exists()


SPIN_PROGRAM = r"""
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void spin(void) { for (int i = 0; i < 20000; ++i) sink = sink * 3 + 1; }
int main(void) {
  struct timespec t;
  do {
    for (int i = 0; i < 10; ++i) spin();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  } while (t.tv_sec == 0 && t.tv_nsec < 300000000);
  return 0;
}
"""


def check_focuses_and_raw(tmp):
    """Each --focus gives a section of its own; --raw keeps the busiest process's raw profile."""
    source = tmp / "spin.c"
    source.write_text(SPIN_PROGRAM)
    program = tmp / "spin"
    subprocess.run(["cc", "-O1", "-rdynamic", "-o", str(program), str(source)], check=True)
    out, raw = tmp / "focus.md", tmp / "spin.raw.gz"
    result = subprocess.run(["bash", str(PROFILE), str(out), "--title", "spin", "--focus", "^spin$", "--focus",
                             "^nothing$", "--raw", str(raw), "--", str(program)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result
    text = out.read_text()
    sections = re.findall(r"^## (.*)$", text, re.M)
    assert sections == ["spin: samples with `^spin$` on the stack", "spin: samples with `^nothing$` on the stack"], text
    spinning = re.search(r"^(\d+) samples from 1 threads; (\d+) with `\^spin\$` on their stack\.$", text, re.M)
    assert spinning and int(spinning.group(2)) >= 0.8 * int(spinning.group(1)) > 0, text
    assert re.search(r"; 0 with `\^nothing\$` on their stack\.$", text, re.M), text
    lines = gzip.decompress(raw.read_bytes()).decode().splitlines()
    assert lines[0].startswith("# cpu_sampler: ") and any(line.startswith("S ") for line in lines), lines[:3]
    again = summarize(raw, "--focus", "^spin$")  # the summary reads the kept file as it is
    assert again.returncode == 0 and "with `^spin$` on their stack" in again.stdout, again


STATIC_PROGRAM = r"""
static int __attribute__((noinline)) hidden_helper(int x) { return x * 3 + 1; }
int exported_neighbour(int x) { return x + 1; }
int main(int argc, char** argv) { (void)argv; return hidden_helper(argc) + exported_neighbour(argc); }
"""


def check_static_names(tmp):
    """A static function is named from the object's full symbol table; once the object is stripped
    it is "[object]", not the exported symbol below it (addr2line's guess there)."""
    source = tmp / "static.c"
    source.write_text(STATIC_PROGRAM)
    program = tmp / "static_prog"
    subprocess.run(["cc", "-O1", "-rdynamic", "-o", str(program), str(source)], check=True)
    nm = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    address = next(int(line.split()[0], 16) for line in nm.splitlines() if line.endswith(" hidden_helper"))
    stripped = tmp / "static_prog_stripped"
    subprocess.run(["strip", "-o", str(stripped), str(program)], check=True)
    for obj, expected in ((program, "hidden_helper"), (stripped, f"[{stripped.name}]")):
        # A return address two bytes into the function: the summary looks up the byte before it.
        path = tmp / f"raw.{obj.name}"
        path.write_text(f"A {0x5000:#x} {obj} {address + 2:#x} -\nS 7 1 {0x5000:#x}\n")
        result = summarize(path)
        assert result.returncode == 0, result
        assert f"| 100.0 % | 1 | `{expected}` |" in result.stdout, (obj, result.stdout)


def check_callers_of(tmp):
    """--callers-of: the first named function above the innermost run of matching ones, frames of
    unnamed objects passed over; a bad regular expression is a usage error."""
    frames = {"handler": ("/tmp/tmp.x/cpu_sampler.so", "-"), "trampoline": ("/opt/libfake.so", "-"),
              "inner": ("/opt/libfake.so", "-"), "malloc": ("/opt/libfake.so", "malloc"),
              "operator_new": ("/opt/prog", "operator_new"), "build_dict": ("/opt/prog", "build_dict"),
              "make_list": ("/opt/prog", "make_list"), "leaf_x": ("/opt/prog", "leaf_x"),
              "main": ("/opt/prog", "main"), "worker": ("/opt/prog", "worker")}
    address = {name: 0x7f0000001000 + 0x1000 * i for i, name in enumerate(frames)}
    samples = [(100, 1, ["inner", "malloc", "operator_new", "inner", "build_dict", "main"], 3),
               (100, 1, ["malloc", "operator_new", "make_list", "main"], 1),
               (100, 1, ["leaf_x", "main"], 2),
               (101, 0, ["malloc", "worker"], 2)]
    lines = ["# cpu_sampler: 8 samples, 0 dropped (buffer full), main thread 100"]
    lines += [f"A {address[n]:#x} {obj} {0x100 * (i + 1):#x} {sym}" for i, (n, (obj, sym)) in enumerate(frames.items())]
    for thread, is_main, stack, count in samples:
        stack = ["handler", "trampoline"] + stack
        lines += [f"S {thread} {is_main} " + " ".join(f"{address[f]:#x}" for f in stack)] * count
    path = tmp / "raw.alloc"
    path.write_text("\n".join(lines) + "\n")
    result = summarize(path, "--callers-of", "^(malloc|operator_new)$")
    assert result.returncode == 0 and result.stderr == "", result
    main_part, other_part = result.stdout.split("### other threads")
    for row in ("**Who calls `^(malloc|operator_new)$` (4 samples with it on the stack)**",
                "| 75.0 % | 3 | `build_dict` |", "| 25.0 % | 1 | `make_list` |"):
        assert row in main_part, (row, result.stdout)
    for row in ("(2 samples with it on the stack)", "| 100.0 % | 2 | `worker` |"):
        assert row in other_part, (row, result.stdout)
    assert "Who calls" not in summarize(path, "--callers-of", "^nothing$").stdout
    result = summarize(path, "--callers-of", "(")
    assert result.returncode == 2 and result.stdout == "" and "bad regular expression" in result.stderr, result


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        check_summary(tmp)
        check_callers_of(tmp)
        check_static_names(tmp)
        check_focuses_and_raw(tmp)
        check_usage(tmp)
        share, n, tolerance, _ = check_end_to_end(tmp)
        perf_share, perf_n, perf_tolerance, perf_clock = check_end_to_end(tmp, "perf")
    print(f"cpu profile: burn_three {100 * share:.1f} % of {n} main-thread samples ({100 * THREE_SHARE:.0f} % "
          f"+- {100 * tolerance:.1f} %); by MTC_SAMPLE_CLOCK=perf ({perf_clock}) {100 * perf_share:.1f} % of "
          f"{perf_n} (+- {100 * perf_tolerance:.1f} %); the summary on synthetic profiles and profile.sh's usage "
          "as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
