# SPDX-License-Identifier: MIT
"""Unit tests of the bench's perf stat parsing (bench/perfstat.py) and of the
per-message figures made from it and the nullmod sweep's loss table
(bench/sweep_costs.py), with canned outputs of `perf stat -x,`: counters
supported, "<not supported>" (a VM without a PMU), the events refused, perf
missing, and perf's lines mixed with perftest's own stderr.  Run by ctest (test_bench_perfstat):
    PYTHONPATH=bench python3 -m unittest -v bench_perfstat_test
from tests/.  No perf, no perftest, no matplotlib needed."""

import subprocess
import unittest

import perfstat
import sweep_costs

# perf 6.1 on a machine with a PMU: every event counted.
SUPPORTED = """\
totals: writes=1000000 reads=1000000
blockstats: mblks=0 dblks=0 bytes=0
2109,,raw_syscalls:sys_enter,901003,100.00,120.976,K/sec
412.50,msec,task-clock,412500000,100.00,1.650,CPUs utilized
1234567890,,instructions,412500000,100.00,0.55,insn per cycle
2245678901,,cycles,412500000,100.00,2.603,GHz
"""
# The same on this VM: no PMU, perf prints <not supported> (exit status 0).
NOT_SUPPORTED = """\
2109,,raw_syscalls:sys_enter,901003,100.00,120.976,K/sec
0.90,msec,task-clock,901003,100.00,0.011,CPUs utilized
<not supported>,,instructions,0,100.00,,
<not supported>,,cycles,0,100.00,,
"""
# perf refusing the events (exit status 129 or 255, nothing counted).
SYNTAX_ERROR = """\
event syntax error: 'instructions'
                     \\___ parser error
Run 'perf list' for a list of valid events
"""
PERMISSION = """\
Error:
Access to performance monitoring and observability operations is limited.
Consider adjusting /proc/sys/kernel/perf_event_paranoid setting
"""
# A hybrid CPU: one line per PMU; the task never ran on the atom cores.
HYBRID = """\
<not counted>,,cpu_atom/instructions/,0,0.00,,
1000,,cpu_core/instructions/,5000,100.00,,
400,,cpu_core/cycles/,5000,100.00,,
100,,cpu_atom/cycles/,5000,100.00,,
7,,raw_syscalls:sys_enter:u,5000,100.00,,
"""
# perftest's own stderr with commas, which must not be read as perf's.
NOISE = """\
perftest: write: Broken pipe, after 3, instructions
12,,not-an-event,1,100.00,,
perftest: totals, 5, cycles
"""


class Parse(unittest.TestCase):
    def test_supported(self):
        got = perfstat.parse(SUPPORTED)
        self.assertEqual(got[perfstat.SYSCALLS], 2109)
        self.assertAlmostEqual(got[perfstat.TASK_CLOCK], 412.5)
        self.assertEqual(got[perfstat.INSTRUCTIONS], 1234567890)
        self.assertEqual(got[perfstat.CYCLES], 2245678901)

    def test_not_supported_is_none_never_zero(self):
        got = perfstat.parse(NOT_SUPPORTED)
        self.assertEqual(got[perfstat.SYSCALLS], 2109)
        self.assertIn(perfstat.INSTRUCTIONS, got)
        self.assertIsNone(got[perfstat.INSTRUCTIONS])
        self.assertIsNone(got[perfstat.CYCLES])

    def test_refused_counts_nothing(self):
        self.assertEqual(perfstat.parse(SYNTAX_ERROR), {})
        self.assertEqual(perfstat.parse(PERMISSION), {})
        self.assertEqual(perfstat.parse(""), {})
        self.assertEqual(perfstat.parse(None), {})

    def test_hybrid_and_modifiers(self):
        got = perfstat.parse(HYBRID)
        self.assertEqual(got[perfstat.INSTRUCTIONS], 1000)
        self.assertEqual(got[perfstat.CYCLES], 500)
        self.assertEqual(got[perfstat.SYSCALLS], 7)

    def test_program_noise_ignored(self):
        self.assertEqual(perfstat.parse(NOISE), {})
        got = perfstat.parse(NOISE + SUPPORTED)
        self.assertEqual(got[perfstat.INSTRUCTIONS], 1234567890)

    def test_only_wanted_events(self):
        got = perfstat.parse(SUPPORTED, perfstat.HARDWARE)
        self.assertEqual(set(got), set(perfstat.HARDWARE))


def fake_run(outputs):
    """A subprocess.run that answers each perf stat by its -e events:
    outputs maps the events string to (exit status, stderr)."""
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        evs = cmd[cmd.index("-e") + 1]
        rc, err = outputs[evs]
        return subprocess.CompletedProcess(cmd, rc, "", err)
    return run, calls


SW = ",".join(perfstat.SOFTWARE)
HW = ",".join(perfstat.HARDWARE)


class Probe(unittest.TestCase):
    def which(self, name):
        return "/usr/bin/perf" if name == "perf" else None

    def test_missing_perf(self):
        p = perfstat.probe(run=None, which=lambda name: None)
        self.assertIsNone(p.cmd)
        self.assertIn("not installed", p.error)
        self.assertIn("not measured", p.hw_note)
        self.assertFalse(p.hardware)

    def test_supported(self):
        run, calls = fake_run({SW: (0, NOT_SUPPORTED), HW: (0, SUPPORTED)})
        p = perfstat.probe(run=run, which=self.which, vm=False)
        self.assertIsNone(p.error)
        self.assertIsNone(p.hw_note)
        self.assertTrue(p.hardware)
        self.assertEqual(p.cmd[-3:], ["-e", SW + "," + HW, "--"])
        self.assertEqual(len(calls), 2)

    def test_not_supported_in_vm(self):
        run, _ = fake_run({SW: (0, NOT_SUPPORTED), HW: (0, NOT_SUPPORTED)})
        p = perfstat.probe(run=run, which=self.which, vm=True)
        self.assertIsNone(p.error)
        self.assertEqual(p.hw_note,
                         "instructions and cycles: not available on this machine "
                         "(no PMU in the VM)")
        self.assertEqual(p.cmd[-3:], ["-e", SW, "--"])  # no hardware event asked for

    def test_not_supported_bare_metal(self):
        run, _ = fake_run({SW: (0, NOT_SUPPORTED), HW: (0, NOT_SUPPORTED)})
        p = perfstat.probe(run=run, which=self.which, vm=False)
        self.assertIn("no PMU exposed to perf", p.hw_note)

    def test_hardware_refused(self):
        for rc, err in ((129, SYNTAX_ERROR), (255, PERMISSION)):
            run, _ = fake_run({SW: (0, NOT_SUPPORTED), HW: (rc, err)})
            p = perfstat.probe(run=run, which=self.which, vm=True)
            self.assertIsNotNone(p.cmd)
            self.assertTrue(p.hw_note.startswith(
                "instructions and cycles: not available on this machine (perf refused"))
            self.assertIn(err.splitlines()[0].strip(), p.hw_note)

    def test_software_refused(self):
        run, calls = fake_run({SW: (255, PERMISSION)})
        p = perfstat.probe(run=run, which=self.which, vm=True)
        self.assertIsNone(p.cmd)
        self.assertIn("did not count", p.error)
        self.assertIn("Error:", p.error)
        self.assertEqual(len(calls), 1)

    def test_software_not_supported(self):
        out = NOT_SUPPORTED.replace("2109,", "<not supported>,", 1)
        run, _ = fake_run({SW: (0, out)})
        self.assertIsNone(perfstat.probe(run=run, which=self.which, vm=True).cmd)

    def test_perf_cannot_run(self):
        def run(cmd, **kw):
            raise OSError(8, "Exec format error")
        p = perfstat.probe(run=run, which=self.which, vm=True)
        self.assertIsNone(p.cmd)
        self.assertIn("could not run", p.error)


def row(writes, reads, stderr, rate=1e6):
    r = {"total_writes": writes, "total_reads": reads, "writes_per_s": rate}
    sweep_costs.record(r, stderr)
    return r


class PerMessage(unittest.TestCase):
    def test_marginal(self):
        long_ = row(1_001_000, 500_500, SUPPORTED)
        # The short run: 1000 messages, 109 calls, 12.5 ms, a tenth of the rest.
        base = row(1000, 500, SUPPORTED.replace("2109,", "109,").replace("412.50,", "12.50,")
                   .replace("1234567890,", "234567890,").replace("2245678901,", "245678901,"))
        c = sweep_costs.per_message({("long", 0): long_, ("base", 0): base})
        self.assertEqual(c["n"], 1)
        self.assertAlmostEqual(c["syscalls"], 2000 / 1_000_000)
        self.assertAlmostEqual(c["cpu_ns"], 400.0)  # 400 ms over a million
        self.assertAlmostEqual(c["instructions"], 1000.0)
        self.assertAlmostEqual(c["cycles"], 2000.0)
        self.assertAlmostEqual(c["busy"], 0.4)  # 400 ns x 1e6 writes/s
        self.assertAlmostEqual(c["whole"], 2109 / 1_001_000)
        self.assertAlmostEqual(c["batch"], 2.0)

    def test_no_pmu_gives_none(self):
        long_ = row(2000, 2000, NOT_SUPPORTED)
        base = row(1000, 1000, NOT_SUPPORTED.replace("2109,", "1109,"))
        c = sweep_costs.per_message({("long", 0): long_, ("base", 0): base})
        self.assertAlmostEqual(c["syscalls"], 1.0)
        self.assertIsNone(c["instructions"])
        self.assertIsNone(c["cycles"])
        self.assertEqual(long_["instructions"], "")

    def test_no_pair(self):
        self.assertIsNone(sweep_costs.per_message({("long", 0): row(5, 5, SUPPORTED)}))
        same = row(5, 5, SUPPORTED)
        self.assertIsNone(sweep_costs.per_message({("long", 0): same, ("base", 0): same}))
        self.assertIsNone(sweep_costs.per_message({("long", 0): None,
                                                   ("base", 0): same}))

    def test_median_of_pairs(self):
        runs = {}
        for rep, calls in enumerate((3000, 5000, 4000)):
            runs[("long", rep)] = row(2000, 2000, NOT_SUPPORTED.replace("2109,", f"{calls},"))
            runs[("base", rep)] = row(1000, 1000, NOT_SUPPORTED.replace("2109,", "1000,"))
        c = sweep_costs.per_message(runs)
        self.assertEqual(c["n"], 3)
        self.assertAlmostEqual(c["syscalls"], 3.0)


class Section(unittest.TestCase):
    def results(self, text_long, text_base):
        res = {}
        for s in (64, 4096):
            res[("L", "ustreams", s)] = [row(2000, 1000, text_long)]
            res[("B", "ustreams", s)] = [row(1000, 500, text_base)]
        return res

    def test_no_pmu_sentence_not_number(self):
        base = NOT_SUPPORTED.replace("2109,", "1109,").replace("0.90,", "0.40,")
        costs = sweep_costs.collect(self.results(NOT_SUPPORTED, base), ["ustreams", "pipe(2)"],
                                    [1, 64, 4096], "L", "B")
        note = "instructions and cycles: not available on this machine (no PMU in the VM)"
        text = "\n".join(sweep_costs.section(costs, ["ustreams", "pipe(2)"], [1, 64, 4096],
                                             None, note, "T"))
        self.assertIn(note + ".", text)
        self.assertNotIn("Instructions per message", text)
        self.assertIn("| 64 | 1 |", text)      # 1000 calls over 1000 messages
        self.assertIn("| 4096 | 500 |", text)  # 0.5 ms over 1000 messages, in ns
        self.assertFalse(any(ln.startswith("| 1 |") for ln in text.splitlines()))  # not run
        self.assertNotIn("pipe(2)", text)      # a series never run has no column

    def test_with_pmu(self):
        base = SUPPORTED.replace("2109,", "109,").replace("1234567890,", "1234566890,")
        costs = sweep_costs.collect(self.results(SUPPORTED, base), ["ustreams"], [64, 4096],
                                    "L", "B")
        text = "\n".join(sweep_costs.section(costs, ["ustreams"], [64, 4096], None, None, "T"))
        self.assertIn("Instructions per message", text)
        self.assertIn("Cycles per message", text)
        self.assertIn("| 64 | 2 |", text)  # syscalls: 2000 over 1000; instructions: 1000/1000

    def test_perf_missing(self):
        text = sweep_costs.section({}, ["ustreams"], [64], "perf(1) is not installed", None, "T")
        self.assertEqual(text[2], "Not measured: perf(1) is not installed.")


class Push(unittest.TestCase):
    """The nullmod sweep's table: loss against none, and the target's verdict."""

    def rows(self, *rates):
        return [(n, None if r is None else {"bytes_per_s": r})
                for n, r in zip((0, 1, 4, 8), rates)]

    def test_loss_against_none(self):
        text = "\n".join(sweep_costs.push_section(self.rows(200e6, 100e6, 150e6, 160e6), 64, 30,
                                                  lambda v: f"{v / 1e6:.0f} M", "push.png"))
        self.assertIn("![Modules pushed](push.png)", text)
        self.assertIn("| 0 | 200 M | 0.0 % |", text)
        self.assertIn("| 1 | 100 M | 50.0 % |", text)
        self.assertIn("| 8 | 160 M | 20.0 % |", text)
        self.assertIn("same run: 20.0 %, met", text)

    def test_missed_and_failed(self):
        text = "\n".join(sweep_costs.push_section(self.rows(200e6, None, 150e6, 40e6), 64, 30,
                                                  str))
        self.assertIn("| 1 | failed | |", text)
        self.assertIn("same run: 80.0 %, missed", text)
        self.assertNotIn("![", text)

    def test_no_base_no_verdict(self):
        text = "\n".join(sweep_costs.push_section(self.rows(None, 1e6, 1e6, 1e6), 64, 30, str))
        self.assertIn("| 8 | 1000000.0 | n/a |", text)
        self.assertNotIn("Target", text)


if __name__ == "__main__":
    unittest.main()
