"""A readable summary of a run's report.json."""


def summary(report):
    counts = report["counts"]
    lines = [
        f"scenario   {report['scenario']}  ({report['file']}, seed {report['seed']})",
        f"simulated  {report['sim_time_ps'] / 1e9:.3f} ms in {report['wall_time_s']:.2f} s wall",
        f"traffic    {counts['sends_posted']} sends, {counts['recvs_posted']} receives posted, "
        f"{counts['bytes_moved']} bytes moved, {counts['rnr_stalls']} RNR stalls",
        f"CQEs       {counts['cqes_written']} written ({counts['extended_cqes']} extended), "
        f"{counts['completions_delivered']} completions delivered on {counts['pool_cqs']} pool CQ(s)",
        "status     " + ", ".join(f"{s['name']} {s['count']}" for s in counts["by_status"]),
        "opcode     " + ", ".join(f"{o['opcode']}: {o['count']}" for o in counts["by_opcode"]),
        "checks",
    ]
    for check in report["checks"]:
        mark = "ok  " if check["passed"] else "FAIL"
        lines.append(f"  {mark} {check['name']}: {check['detail']}")
    passed = sum(c["passed"] for c in report["checks"])
    verdict = "PASSED" if report["passed"] else "FAILED"
    lines.append(f"{verdict}: {passed} of {len(report['checks'])} checks passed")
    return "\n".join(lines)
