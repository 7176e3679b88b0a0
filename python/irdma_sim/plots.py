"""A run's pictures (matplotlib, PNG): completion latencies per opcode, CQ occupancy and
CEQ activity over simulated time, interrupts and completions per interrupt. The run's files
are read as streams; what a plot needs of a trace is counted as it goes by.
"""

import io
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display
import matplotlib.pyplot as plt  # noqa: E402

from irdma_sim import trace  # noqa: E402
from irdma_sim.report import WC_OPCODES  # noqa: E402

BUCKETS = 100  # intervals of simulated time in the over-time plots


class Plot:
    """One picture: a title, what it shows, and its PNG."""

    def __init__(self, name, title, caption, png):
        self.name, self.title, self.caption, self.png = name, title, caption, png


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _opcode(c):
    return WC_OPCODES.get(c["opcode"], str(c["opcode"])).removeprefix("IB_WC_")


class RunData:
    """What the plots need of a run's completions.jsonl and trace (either format)."""

    def __init__(self, run_dir):
        run_dir = Path(run_dir)
        self.latency_us = defaultdict(list)  # opcode -> post to delivery
        self.delivered = defaultdict(list)   # cq -> delivery times (ps), in order
        self.delivered_opcode = defaultdict(list)
        self.posted = defaultdict(list)
        for c in _lines(run_dir / "completions.jsonl"):
            if "posted_ps" in c:
                self.latency_us[_opcode(c)].append((c["t_ps"] - c["posted_ps"]) / 1e6)
                self.posted[c["cq"]].append(c["posted_ps"])
            self.delivered[c["cq"]].append(c["t_ps"])
            self.delivered_opcode[c["cq"]].append(_opcode(c))
        trace_path = trace.trace_file(run_dir)
        self.traced = trace_path is not None
        self.cqe_written = defaultdict(list)  # cq -> CQE write times (ps)
        self.ceqe = defaultdict(list)         # ceq -> CEQE write times
        self.msix = []
        if self.traced:
            for ev in trace.events(trace_path):
                kind = ev["ev"]
                if kind == "cqe" and ev["cq"] != 0:  # the CCQ's are the control path's
                    self.cqe_written[ev["cq"]].append(ev["t_ps"])
                elif kind == "ceqe":
                    self.ceqe[ev["ceq"]].append(ev["t_ps"])
                elif kind == "msix":
                    self.msix.append(ev["t_ps"])
        times = [t for ts in self.delivered.values() for t in ts[-1:]]
        self.end_ps = max(times + [t for ts in self.cqe_written.values() for t in ts[-1:]] + self.msix[-1:] + [1])

    def buckets(self, times):
        counts = [0] * BUCKETS
        for t in times:
            counts[min(BUCKETS - 1, int(t * BUCKETS / self.end_ps))] += 1
        return counts

    def axis_us(self):
        return [(i + 0.5) * self.end_ps / BUCKETS / 1e6 for i in range(BUCKETS)]

    def matched_cqs(self):
        """CQs whose CQE writes and deliveries pair one to one, in order (no flush expanded one
        CQE into many, no ring retired by a resize): the k-th CQE is the k-th completion."""
        return [cq for cq, written in self.cqe_written.items() if len(written) == len(self.delivered.get(cq, []))]


def latency_plot(data):
    fig, ax = plt.subplots(figsize=(8, 4))
    for opcode, values in sorted(data.latency_us.items()):
        ax.hist(values, bins=60, histtype="step", label=f"{opcode} ({len(values)})")
    ax.set_xlabel("µs from post to ib_wc delivered")
    ax.set_ylabel("completions")
    ax.set_yscale("log")
    if data.latency_us:
        ax.legend(fontsize="small")
    return Plot("latency", "Latency per opcode: work request posted → ib_wc delivered",
                "Simulated time from the post to the delivery of its completion, by ib_wc opcode "
                "(a receive's from its own post: its wait for a message included).", _png(fig))


def stage_plot(data):
    """Post → CQE written and CQE written → delivered, for the CQs where they pair."""
    to_cqe, to_wc = defaultdict(list), defaultdict(list)
    for cq in data.matched_cqs():
        for written, delivered, posted, opcode in zip(data.cqe_written[cq], data.delivered[cq], data.posted[cq],
                                                      data.delivered_opcode[cq]):
            to_cqe[opcode].append((written - posted) / 1e6)
            to_wc[opcode].append((delivered - written) / 1e6)
    if not to_cqe:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, stage, label in ((axes[0], to_cqe, "posted → CQE written"), (axes[1], to_wc, "CQE written → ib_wc delivered")):
        for opcode, values in sorted(stage.items()):
            ax.hist(values, bins=50, histtype="step", label=opcode)
        ax.set_xlabel(f"µs, {label}")
        ax.set_yscale("log")
    axes[0].set_ylabel("completions")
    axes[1].legend(fontsize="small")
    return Plot("stages", "Latency by stage: to the CQE, then to the consumer",
                f"The k-th CQE a CQ's ring received is its k-th completion delivered, on the "
                f"{len(data.matched_cqs())} CQ(s) where that holds (no flush expansion, no retired ring).", _png(fig))


def occupancy_plot(data):
    busiest = sorted(data.cqe_written, key=lambda cq: -len(data.cqe_written[cq]))[:6]
    if not busiest:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for cq in busiest:
        events = sorted([(t, 1) for t in data.cqe_written[cq]] + [(t, -1) for t in data.delivered.get(cq, [])])
        level, peak = 0, [0] * BUCKETS
        for t, step in events:
            level += step
            at = min(BUCKETS - 1, int(t * BUCKETS / data.end_ps))
            peak[at] = max(peak[at], level)
        ax.plot(data.axis_us(), peak, label=f"CQ {cq}", linewidth=0.9)
    ax.set_xlabel("simulated µs")
    ax.set_ylabel(f"most CQEs pending per {data.end_ps / BUCKETS / 1e6:.1f} µs")
    ax.legend(fontsize="small")
    return Plot("cq_occupancy", "CQ occupancy over simulated time",
                "The most CQEs each of the busiest CQs held at once in each interval: written by the device, "
                "not yet delivered by the driver.", _png(fig))


def ceq_plot(data):
    if not data.ceqe:
        return None
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for ceq, times in sorted(data.ceqe.items()):
        ax.plot(data.axis_us(), data.buckets(times), label=f"CEQ {ceq}", linewidth=0.9)
    ax.set_xlabel("simulated µs")
    ax.set_ylabel(f"CEQEs per {data.end_ps / BUCKETS / 1e6:.1f} µs")
    ax.legend(fontsize="small")
    return Plot("ceq", "CEQ activity over simulated time",
                "CEQEs the device wrote to each CEQ per interval (one per armed CQ's event).", _png(fig))


def interrupt_plot(data):
    completions = data.buckets(t for ts in data.delivered.values() for t in ts)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    x = data.axis_us()
    width = data.end_ps / BUCKETS / 1e6
    if data.traced:
        irqs = data.buckets(data.msix)
        ax.bar(x, irqs, width=width, color="#9ab", label="MSI-X")
        ax.set_ylabel(f"interrupts per {width:.1f} µs")
        per = ax.twinx()
        per.plot(x, [c / i if i else 0 for c, i in zip(completions, irqs)], color="#c33", linewidth=1,
                 label="completions per interrupt")
        per.set_ylabel("completions per interrupt")
        caption = "MSI-X messages per interval (bars) and the completions delivered per interrupt (line)."
    else:
        ax.bar(x, completions, width=width, color="#9ab")
        ax.set_ylabel(f"completions per {width:.1f} µs")
        caption = "Completions delivered per interval (interrupts are in the trace, which this run did not write)."
    ax.set_xlabel("simulated µs")
    return Plot("interrupts", "Interrupts and completions over simulated time", caption, _png(fig))


def run_plots(run_dir):
    """Every picture a run's files allow, in report order."""
    data = RunData(run_dir)
    plots = [latency_plot(data), stage_plot(data), occupancy_plot(data), ceq_plot(data), interrupt_plot(data)]
    return [p for p in plots if p], data.traced
