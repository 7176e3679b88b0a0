"""A readable summary of a run's report.json."""

# enum ib_wc_opcode (Linux >= 6.2 layout)
WC_OPCODES = {0: "IB_WC_SEND", 1: "IB_WC_RDMA_WRITE", 2: "IB_WC_RDMA_READ", 3: "IB_WC_COMP_SWAP",
              4: "IB_WC_FETCH_ADD", 5: "IB_WC_BIND_MW", 6: "IB_WC_LOCAL_INV", 7: "IB_WC_LSO",
              8: "IB_WC_FLUSH", 9: "IB_WC_ATOMIC_WRITE", 10: "IB_WC_REG_MR",
              11: "IB_WC_MASKED_COMP_SWAP", 12: "IB_WC_MASKED_FETCH_ADD", 128: "IB_WC_RECV",
              129: "IB_WC_RECV_RDMA_WITH_IMM"}


def events_line(counts):
    irqs = counts.get("interrupts_raised", 0)
    per = counts["completions_delivered"] / irqs if irqs else 0
    return (f"events     {irqs} interrupts ({per:.1f} completions each), {counts.get('ceqes', 0)} CEQEs "
            f"for {counts.get('arms_taken', 0)} arms, {counts.get('aeqes', 0)} AEQEs")


def overflow_line(report):
    counts = report["counts"]
    recovered = all(c["passed"] for c in report["checks"] if c["name"] == "every_cq_error_recovered")
    return (f"overflow   {counts['cqs_overflowed']} CQ(s) overflowed ({counts['cqes_overflowed']} completions "
            f"dropped), {counts['cq_errors']} IB_EVENT_CQ_ERR, {counts['pairs_torn_down']} pair(s) torn down: "
            + ("overflowed and recovered" if recovered else "NOT recovered"))


def cq_writer_lines(report):
    """The RTL CQ writer's part of a summary: the lock-step count, its coverage, and the
    timing correlation of its cycles against the model's stage costs."""
    w = report.get("cq_writer")
    if not w:
        return []
    cov = w["rtl_coverage"]
    if not cov["file"]:
        covered = f"no RTL coverage ({cov.get('error', '')})"
    else:
        toggles = (f", toggles {cov['toggle_hit']} of {cov['toggle_total']}" if cov["toggle_total"]
                   else " (toggles not counted: device.rtl_toggle_coverage)")
        covered = f"lines {cov['line_hit']} of {cov['line_total']}{toggles}"
    lines = [f"RTL        cq_writer in lock-step with the TLM one: {w['lockstep_requests']} requests agreed; "
             f"time from {'its cycles' if w['timing'] == 'rtl' else 'the stage costs'}; {covered}",
             "           request          count  RTL cycles mean  p50  p99  max  model cycles  RTL/model"]
    for row in w["correlation"]:
        model = row["model_cycles_mean"]
        ratio = f"{row['rtl_cycles_mean'] / model * 100:.0f} %" if model else "-"
        lines.append(f"           {row['request']:<14} {row['count']:>7}  {row['rtl_cycles_mean']:>15.1f} "
                     f"{row['rtl_cycles_p50']:>4} {row['rtl_cycles_p99']:>4} {row['rtl_cycles_max']:>4}  "
                     f"{model:>12.1f}  {ratio:>9}")
    return lines


def summary(report):
    counts = report["counts"]
    lines = [
        f"scenario   {report['scenario']}  ({report['file']}, seed {report['seed']})",
        f"simulated  {report['sim_time_ps'] / 1e9:.3f} ms in {report['wall_time_s']:.2f} s wall",
        f"traffic    {counts['sends_posted']} sends, {counts['recvs_posted']} receives posted, "
        f"{counts['bytes_moved']} bytes moved, {counts['rnr_stalls']} RNR stalls",
        f"CQEs       {counts['cqes_written']} written ({counts['extended_cqes']} extended), "
        f"{counts['completions_delivered']} completions delivered on {counts.get('cqs_with_completions', 0)} CQ(s) "
        f"({counts['pool_cqs']} in the pool)",
        events_line(counts),
        "status     " + ", ".join(f"{s['name']} {s['count']}" for s in counts["by_status"]),
        "opcode     " + ", ".join(f"{WC_OPCODES.get(o['opcode'], o['opcode'])}: {o['count']}"
                                  for o in counts["by_opcode"]),
    ]
    if counts.get("cqs_overflowed"):
        lines.insert(5, overflow_line(report))
    if report.get("interrupted"):
        lines.insert(2, f"stopped    by {report['interrupted']['signal']} after "
                        f"{report['interrupted']['sim_time_ps'] / 1e9:.3f} ms simulated: the traffic was cut short")
    lines += cq_writer_lines(report)
    lines += [f"warning    {w}" for w in report.get("warnings", [])]
    lines.append("checks")
    for check in report["checks"]:
        mark = "ok  " if check["passed"] else "FAIL"
        lines.append(f"  {mark} {check['name']}: {check['detail']}")
    passed = sum(c["passed"] for c in report["checks"])
    verdict = "PASSED" if report["passed"] else "FAILED"
    lines.append(f"{verdict}: {passed} of {len(report['checks'])} checks passed")
    return "\n".join(lines)
