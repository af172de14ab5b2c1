# SPDX-License-Identifier: MIT
"""`perf stat` for the bench: which counters this machine offers, and what a
run printed.  No knowledge of perftest or of the sweeps (bench/sweep_costs.py
turns the counts into per-message figures); tested by tests/bench_perfstat.py
with canned outputs of perf.

Events, counted over the whole wrapped process (every thread, and forked
children: perf stat inherits by default):
    raw_syscalls:sys_enter  system calls entered (a tracepoint: needs
                            tracefs and, unless root, a low perf_event_paranoid)
    task-clock              CPU time, in milliseconds (a software event: a VM
                            without a PMU still has it)
    instructions, cycles    hardware events: only where the PMU is exposed.
                            Without one perf prints "<not supported>" in place
                            of the count, or refuses the event (non-zero exit).

The rule: a figure is printed only when perf counted it; an event that is
missing, refused, "<not supported>" or "<not counted>" gives None and a
sentence saying why, never a guess.
"""

import os
import shutil
import subprocess

SYSCALLS = "raw_syscalls:sys_enter"
TASK_CLOCK = "task-clock"
INSTRUCTIONS = "instructions"
CYCLES = "cycles"
SOFTWARE = (SYSCALLS, TASK_CLOCK)
HARDWARE = (INSTRUCTIONS, CYCLES)
# Raw-row column (bench/sweep.py's raw.csv) of each event.
COLUMN = {SYSCALLS: "syscalls", TASK_CLOCK: "task_clock_ms",
          INSTRUCTIONS: "instructions", CYCLES: "cycles"}
NOT_COUNTED = ("<not supported>", "<not counted>")
# Modifiers perf may append to an event's name (instructions:u when the
# paranoia level keeps the kernel out); the tracepoint's own colon is not one.
MODIFIERS = set("ukhGHpPSD")


def _canonical(name, wanted):
    """The event of wanted that perf's name denotes, or None.  Accepts a
    hybrid CPU's PMU prefix (cpu_core/instructions/) and modifiers
    (instructions:u)."""
    name = name.strip()
    if "/" in name:  # cpu_core/instructions/ or cpu/cycles/u
        parts = [p for p in name.split("/") if p]
        name = parts[1] if len(parts) >= 2 else name
    if name in wanted:
        return name
    base, sep, mod = name.rpartition(":")
    if sep and mod and set(mod) <= MODIFIERS and base in wanted:
        return base
    return None


def parse(text, events=SOFTWARE + HARDWARE):
    """The counts of `perf stat -x,` in text (perf's lines may be mixed with
    the program's own stderr): {event: int or float, or None when perf
    printed "<not supported>" / "<not counted>"}.  Events not printed at all
    are absent.  A hybrid CPU prints one line per PMU (cpu_core/cycles/,
    cpu_atom/cycles/): the counted lines add up (a PMU the task never ran on
    prints "<not counted>"), and the event is None only when no line counted."""
    out = {}
    for line in (text or "").splitlines():
        f = line.split(",")
        if len(f) < 3:
            continue
        ev = _canonical(f[2], events)
        if ev is None:
            continue
        raw = f[0].strip()
        if raw in NOT_COUNTED:
            val = None
        else:
            try:
                val = float(raw) if ev == TASK_CLOCK or "." in raw else int(raw)
            except ValueError:
                continue  # not one of perf's lines
        if out.get(ev) is None:
            out[ev] = val
        elif val is not None:
            out[ev] += val
    return out


def _paranoid():
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def in_vm(cpuinfo="/proc/cpuinfo"):
    """True when the CPU flags say a hypervisor runs us (x86's "hypervisor"
    flag), False when they do not, None when unknown."""
    try:
        with open(cpuinfo) as f:
            for ln in f:
                if ln.startswith("flags"):
                    return "hypervisor" in ln.split(":", 1)[1].split()
    except OSError:
        pass
    return None


class Probe:
    """What perf can count here.  cmd: the command prefix to wrap a program
    with (None when nothing can be counted); events: the events in cmd;
    error: why nothing is counted (None when cmd is set); hw_note: why
    instructions and cycles are not counted (None when they are)."""

    def __init__(self, cmd, events, error, hw_note):
        self.cmd, self.events, self.error, self.hw_note = cmd, events, error, hw_note

    @property
    def hardware(self):
        return self.cmd is not None and self.hw_note is None


def _why(p):
    lines = [ln.strip() for ln in (p.stderr or "").splitlines() if ln.strip()]
    return lines[0] if lines else f"exit status {p.returncode}, nothing printed"


def hw_reason(rc, text, vm):
    """The sentence for the report when perf stat -e instructions,cycles
    exited rc printing text, or None when both were counted.  vm: in_vm()."""
    got = parse(text, HARDWARE)
    if rc == 0 and all(got.get(e) is not None for e in HARDWARE):
        return None
    where = "no PMU in the VM" if vm else "no PMU exposed to perf"
    if rc == 0 and any(e in got for e in HARDWARE):
        return f"instructions and cycles: not available on this machine ({where})"
    first = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()),
                 f"exit status {rc}")
    return (f"instructions and cycles: not available on this machine (perf refused the "
            f"events: {first}; {where if vm else 'kernel.perf_event_paranoid ' + _paranoid()})")


def probe(run=subprocess.run, which=shutil.which, vm=None):
    """Probe once what `perf stat` counts here (run and which are
    subprocess.run and shutil.which, replaceable by a test)."""
    perf = which("perf")
    if not perf:
        return Probe(None, (), "perf(1) is not installed (Debian: apt-get install linux-perf)",
                     "instructions and cycles: not measured (perf(1) is not installed)")
    base = [perf, "stat", "-x,"]

    def try_events(evs):
        try:
            return run(base + ["-e", ",".join(evs), "--", "true"], capture_output=True,
                       text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return subprocess.CompletedProcess([], 255, "", f"`perf stat` could not run: {e}")

    p = try_events(SOFTWARE)
    got = parse(p.stderr, SOFTWARE)
    if p.returncode != 0 or any(got.get(e) is None for e in SOFTWARE):
        err = (f"`perf stat -e {','.join(SOFTWARE)}` did not count: {_why(p)} "
               f"(uid {os.getuid()}, kernel.perf_event_paranoid {_paranoid()})")
        return Probe(None, (), err, "instructions and cycles: not measured (" + err + ")")
    h = try_events(HARDWARE)
    note = hw_reason(h.returncode, h.stderr, in_vm() if vm is None else vm)
    events = SOFTWARE + (HARDWARE if note is None else ())
    return Probe(base + ["-e", ",".join(events), "--"], events, None, note)
