#!/usr/bin/env python3
"""Summarizes a profile written by scripts/cpu_sampler.c: for the main thread and for the other
threads, the functions the samples stopped in (self) and the functions on their stacks
(inclusive), as shares of that group's samples, in markdown.

A sample is one stop every few milliseconds of CPU time, so a share is of the CPU time the
group used while sampling, not of wall time; with N samples, a share p is uncertain by about
sqrt(p (1 - p) / N) when the stops fall independently of what the program does; a program that
repeats something at about the kernel's tick can bias them far more (tests/scripts/
cpu_profile_test.py saw 88-91 % for a true 75 % until its loop's period was made short).

Below each section's sample count, a line says how often the samples came: one per how many
microseconds of the process's CPU time, against the period asked for (MTC_SAMPLE_US), and that
they came less often than asked when the kernel's tick bounded them.

Names come from the sampler's dladdr1 (an exported symbol the address lies in), else from
`addr2line -f -C` on objects that keep their full symbol table (static functions), else
"[object]" (libc's and the CUDA driver's internals); C++ names
are demangled with c++filt where it is installed, and shortened (template and argument lists
elided) unless --full-names.

    python scripts/cpu_profile_summary.py PROFILE [--top 25] [--focus REGEX]... [--title TEXT]

Each --focus gives a section of its own ("TITLE: samples with `REGEX` on the stack") that keeps
only the samples whose stack holds a function matching REGEX (e.g. 'mtc::'); the profile is read
and named once for all of them.

Each --callers-of REGEX adds, per group, a table of who calls the functions matching REGEX: for
every sample with one on its stack, the first function above the innermost run of matching ones
that has a name (frames of unnamed objects, "[libc.so.6]", are passed over). With the allocator
('^(malloc|operator new\\(\\))$') it says which code allocates, which the self and inclusive
tables cannot: malloc's own callers are all operator new.
"""

import argparse
import collections
import gzip
import os
import re
import shutil
import struct
import subprocess
import sys


COVERAGE = re.compile(r"^# cpu_sampler: asked every (\d+) us, ([0-9.]+) s of CPU time sampled$")
DROPPED = re.compile(r"^# cpu_sampler: \d+ samples, (\d+) dropped")
CLOCK = re.compile(r"^# cpu_sampler: clock (.+)$")


def read_profile(path):
    """(addresses {address: (object, offset, symbol)}, samples [(thread, is_main, [address])],
    coverage): coverage is (the period asked for in us, the CPU seconds sampled, the samples
    dropped for a full buffer, the sampling clock or None) from the sampler's header, or None for
    a profile written before the sampler recorded them."""
    addresses, samples = {}, []
    asked, dropped, clock = None, 0, None
    opener = gzip.open if str(path).endswith(".gz") else open  # profile.sh --raw keeps them gzipped
    with opener(path, "rt") as f:
        for number, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0] == "#":
                if match := DROPPED.match(line):
                    dropped = int(match.group(1))
                if match := COVERAGE.match(line.strip()):
                    asked = int(match.group(1)), float(match.group(2))
                if match := CLOCK.match(line.strip()):
                    clock = match.group(1)
                continue
            try:
                if parts[0] == "A" and len(parts) == 5:
                    addresses[int(parts[1], 16)] = (parts[2], int(parts[3], 16), parts[4])
                    continue
                if parts[0] == "S" and len(parts) >= 3:
                    samples.append((int(parts[1]), parts[2] == "1", [int(a, 16) for a in parts[3:]]))
                    continue
            except ValueError:
                pass
            raise ValueError(f"{path}:{number}: not a cpu_sampler line: {line.strip()[:60]!r}")
    return addresses, samples, (asked + (dropped, clock) if asked else None)


def coverage_line(coverage, count):
    """How often the samples came (the `count` kept and those dropped), against how often they were
    asked for, and by which clock: the kernel checks ITIMER_PROF on its tick, so a period shorter
    than the tick gives fewer samples than asked; a per-thread perf clock is a high-resolution
    timer, held back only by the kernel's cap on samples a second and the handler's own time."""
    asked_us, cpu_s, dropped, clock = coverage
    count += dropped
    said = f"\nSampling clock: {clock}." if clock else ""
    if count == 0 or cpu_s <= 0:
        return f"No samples over {cpu_s:.2f} s of CPU time (asked every {asked_us} us).{said}"
    every_us = cpu_s * 1e6 / count
    line = (f"One sample per {every_us:,.0f} us of the process's CPU time ({cpu_s:.2f} s sampled), "
            f"asked every {asked_us} us")
    if every_us > 1.5 * asked_us:
        why = ("the kernel's cap on samples a second and the handler's own time bound the clock's period"
               if clock and clock.startswith("perf") else "the kernel's tick bounds the sampler's period")
        return line + f": fewer than asked ({why}).{said}"
    return line + "." + said


def demangle(names):
    """{mangled: readable} through c++filt, or the names as they are without it."""
    mangled = sorted({n for n in names if n.startswith("_Z")})
    if not mangled or shutil.which("c++filt") is None:
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True).stdout
    readable = dict(zip(mangled, out.splitlines()))
    return {n: readable.get(n, n) for n in names}


def has_symbol_table(path):
    """Whether an ELF object keeps its full symbol table (.symtab). Without one, addr2line names
    an address after the nearest exported symbol below it, which for a static function is some
    unrelated one (libc's and the CUDA driver's internals came out as their neighbours)."""
    try:
        with open(path, "rb") as f:
            header = f.read(64)
            if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only
                return False
            order = "<" if header[5] == 1 else ">"
            (shoff,) = struct.unpack_from(order + "Q", header, 0x28)
            shentsize, shnum = struct.unpack_from(order + "HH", header, 0x3A)
            f.seek(shoff)
            table = f.read(shentsize * shnum)
    except OSError:
        return False
    SHT_SYMTAB = 2
    return any(struct.unpack_from(order + "I", table, i * shentsize + 4)[0] == SHT_SYMTAB
               for i in range(len(table) // shentsize if shentsize else 0))


def addr2line_names(wanted):
    """{(object, offset): name} for addresses without a dynamic symbol, where addr2line knows one
    from the object's full symbol table."""
    found = {}
    if shutil.which("addr2line") is None:
        return found
    by_object = collections.defaultdict(set)
    for obj, offset in wanted:
        if obj != "-" and os.path.exists(obj) and has_symbol_table(obj):
            by_object[obj].add(offset)
    for obj, offsets in by_object.items():
        offsets = sorted(offsets)
        # The byte before a return address is in the calling function.
        args = ["addr2line", "-f", "-C", "-e", obj] + [hex(max(o - 1, 0)) for o in offsets]
        result = subprocess.run(args, capture_output=True, text=True)
        lines = result.stdout.splitlines()
        for i, offset in enumerate(offsets):
            name = lines[2 * i] if 2 * i < len(lines) else "??"
            if name and name != "??":
                found[(obj, offset)] = name
    return found


def shorten(name):
    """A C++ name without its template and argument lists, which can run to kilobytes."""
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            if depth == 0:
                out.append("<>" if ch == "<" else "()")
            depth += 1
        elif ch in ">)" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    text = "".join(out)
    return text if len(text) <= 110 else text[:107] + "..."


def namer(addresses, full_names):
    """A function that names an address."""
    symbols = {sym for _, _, sym in addresses.values() if sym != "-"}
    readable = demangle(symbols)
    missing = {(obj, off) for obj, off, sym in addresses.values() if sym == "-"}
    from_lines = addr2line_names(missing)
    cache = {}

    def name(address):
        if address not in cache:
            obj, offset, sym = addresses.get(address, ("-", 0, "-"))
            text = readable.get(sym) if sym != "-" else from_lines.get((obj, offset))
            text = (text if full_names else shorten(text)) if text else f"[{os.path.basename(obj)}]"
            cache[address] = text
        return cache[address]
    return name


def own_frames(stack, addresses):
    """The program's frames of a sample: the sampler's handler and the signal trampoline above
    them (the frame after the handler's; libc's __restore_rt, which dladdr may name after a
    neighbour) are dropped."""
    for i, address in enumerate(stack):
        if "cpu_sampler" in os.path.basename(addresses.get(address, ("-",))[0]):
            rest = stack[i + 1:]
            while rest and "cpu_sampler" in os.path.basename(addresses.get(rest[0], ("-",))[0]):
                rest = rest[1:]
            return rest[1:]
    return stack


def table(title, counts, total, top, callers=None):
    """Rows of the `top` functions by count; with `callers` ({function: Counter of the functions
    that called it}), the two most frequent callers of each, with their counts."""
    head = "| share | samples | function |" + (" called from |" if callers else "")
    lines = [f"**{title}**", "", head, "|---|---|---|" + ("---|" if callers else "")]
    for name, n in counts.most_common(top):
        row = f"| {100.0 * n / total:.1f} % | {n} | `{name}` |"
        if callers:
            row += " " + ", ".join(f"`{c}` ({k})" for c, k in callers[name].most_common(2)) + " |"
        lines.append(row)
    return lines + [""]


def named(addresses, samples, full_names=False):
    """The samples as (thread, is main, the program's frames by name), innermost first."""
    name = namer(addresses, full_names)
    return [(thread, is_main, [name(a) for a in own_frames(stack, addresses)])
            for thread, is_main, stack in samples]


def sections(samples, top, focuses, title, callers_of=(), coverage=None):
    """A section of markdown for each focus (None: every sample); `coverage` from read_profile."""
    return "\n\n".join(section(samples, top, focus, title, callers_of, coverage) for focus in focuses)


def callers_table(stacks, regex, top):
    """Rows of who calls the functions matching `regex` (see --callers-of), as shares of the
    samples that hold one; none when no sample does."""
    pattern = re.compile(regex)
    who = collections.Counter()
    for frames in stacks:
        i = next((k for k, f in enumerate(frames) if pattern.search(f)), None)
        if i is None:
            continue
        while i < len(frames) and (pattern.search(frames[i]) or frames[i].startswith("[")):
            i += 1
        who[frames[i] if i < len(frames) else "-"] += 1
    holding = sum(who.values())
    if not holding:
        return []
    return table(f"Who calls `{regex}` ({holding} samples with it on the stack)", who, holding, top)


def section(samples, top, focus, title, callers_of=(), coverage=None):
    pattern = re.compile(focus) if focus else None
    groups = {"main thread": [], "other threads": []}
    for _, is_main, frames in samples:
        if not frames or (pattern and not any(pattern.search(f) for f in frames)):
            continue
        groups["main thread" if is_main else "other threads"].append(frames)
    heading = title or "CPU profile"
    if focus:
        heading += f": samples with `{focus}` on the stack"
    lines = [f"## {heading}", ""]
    kept = sum(len(g) for g in groups.values())
    threads = len({t for t, _, _ in samples})
    lines.append(f"{len(samples)} samples from {threads} threads"
                 + (f"; {kept} with `{focus}` on their stack" if focus else "") + ".")
    if coverage:
        lines.append(coverage_line(coverage, len(samples)))
    lines.append("")
    for group, stacks in groups.items():
        if not stacks:
            continue
        own = collections.Counter(frames[0] for frames in stacks)
        callers = collections.defaultdict(collections.Counter)
        for frames in stacks:
            # The first frame above that is another function (a recursive one calls itself).
            caller = next((f for f in frames[1:] if f != frames[0]), "-")
            callers[frames[0]][caller] += 1
        inclusive = collections.Counter(f for frames in stacks for f in set(frames))
        # A function on every stack (main, the thread's start, the focus's caller) says nothing.
        everywhere = [f for f, n in inclusive.items() if n == len(stacks)]
        for f in everywhere:
            del inclusive[f]
        lines.append(f"### {group}: {len(stacks)} samples")
        lines.append("")
        lines += table("Where the samples stopped (self)", own, len(stacks), top, callers)
        lines += table(f"On the stack (inclusive; {len(everywhere)} functions on every stack left out)",
                       inclusive, len(stacks), top)
        for regex in callers_of:
            lines += callers_table(stacks, regex, top)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--focus", action="append",
                        help="a section of the samples with a function matching this on their stack")
    parser.add_argument("--callers-of", action="append", default=[],
                        help="a table of who calls the functions matching this, per group")
    parser.add_argument("--title")
    parser.add_argument("--full-names", action="store_true")
    args = parser.parse_args(argv)
    for regex in args.callers_of + (args.focus or []):
        try:
            re.compile(regex)
        except re.error as error:
            print(f"cpu_profile_summary: bad regular expression '{regex}': {error}", file=sys.stderr)
            return 2
    try:
        addresses, samples, coverage = read_profile(args.profile)
    except (OSError, ValueError) as error:
        print(f"cpu_profile_summary: {error}", file=sys.stderr)
        return 2
    print(sections(named(addresses, samples, args.full_names), args.top, args.focus or [None], args.title,
                   args.callers_of, coverage))
    return 0


if __name__ == "__main__":
    sys.exit(main())
