#!/usr/bin/python3
"""Compares scalecast's out-of-sample predictions with peer tools' on the runs each peer can express.

Inputs:
  --scalecast-loso FILE   `scalecast-validate --holdout-rows --no-rows` output (leave-one-source-out)
  --scalecast-era FILE    the same with `--holdout-by era` (leave-one-era-out), optional
  --peer NAME=CSV         a peer's predictions (bench/peers/*_peer.py output:
                          id,expressible,reason,peer_tokens_per_s_per_gpu,peer_step_s); repeatable
  --own NAME=TEXT         sources whose name holds TEXT are the peer's own validation runs: also
                          scored without them; repeatable
  --markdown FILE         also write the tables as markdown (overall, then by source)

For each peer, the rows it expresses (expressible "yes"; "yes-approx" too with --approx) and that
scalecast predicted (then the rows every peer expresses, and each peer without its own validation
runs), it prints the mean absolute percentage error of the peer, of scalecast held out
by source and by era, and the lead (peer MAPE minus scalecast's). The measured value and the
scalecast predictions come from the validate output ("HO id | source | model | accelerator | gpus |
predicted | measured | error"), so both sides are scored against the same measurement.
"""

import argparse
import csv
import statistics
import sys


def read_holdout(path):
    """id -> (source, accelerator, predicted, measured) from scalecast-validate's HO lines."""
    rows = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("HO "):
                continue
            parts = [p.strip() for p in line[3:].split(" | ")]
            # The source may itself hold " | ": read the last six fields from the right.
            acc, pred, meas = parts[-5], float(parts[-3]), float(parts[-2])
            rows[parts[0]] = (" | ".join(parts[1:-6]), acc, pred, meas)
    return rows


def read_peer(path, approx):
    """id -> peer tokens/s per GPU for the rows the peer expresses."""
    accepted = {"yes", "yes-approx"} if approx else {"yes"}
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["expressible"] in accepted and r["peer_tokens_per_s_per_gpu"]:
                out[r["id"]] = float(r["peer_tokens_per_s_per_gpu"])
    return out


def ape(pred, meas):
    return abs(pred - meas) / meas


def summarise(name, peer, loso, era):
    ids = sorted(i for i in peer if i in loso)
    if not ids:
        return None
    meas = {i: loso[i][3] for i in ids}
    row = {
        "peer": name,
        "runs": len(ids),
        "sources": len({loso[i][0] for i in ids}),
        "peer_mape": statistics.mean(ape(peer[i], meas[i]) for i in ids),
        "peer_median": statistics.median(ape(peer[i], meas[i]) for i in ids),
        "loso_mape": statistics.mean(ape(loso[i][2], meas[i]) for i in ids),
        "loso_median": statistics.median(ape(loso[i][2], meas[i]) for i in ids),
    }
    groups = {}
    for i in ids:
        groups.setdefault(loso[i][0], []).append(i)
    row["macro_lead"] = statistics.mean(
        statistics.mean(ape(peer[i], meas[i]) - ape(loso[i][2], meas[i]) for i in g)
        for g in groups.values())
    if era:
        row["era_mape"] = statistics.mean(ape(era[i][2], meas[i]) for i in ids if i in era)
    return row


def by_accelerator(peer, loso):
    groups = {}
    for i in peer:
        if i in loso:
            groups.setdefault(loso[i][1], []).append(i)
    for acc, ids in sorted(groups.items()):
        p = statistics.mean(ape(peer[i], loso[i][3]) for i in ids)
        s = statistics.mean(ape(loso[i][2], loso[i][3]) for i in ids)
        yield acc, len(ids), p, s


def table(rows, have_era):
    head = "| peer | runs | sources | peer MAPE (median) | scalecast held out by source (median) |"
    rule = "|---|---:|---:|---:|---:|"
    if have_era:
        head += " scalecast held out by era |"
        rule += "---:|"
    head += " lead (points) | lead, each source weighted alike |"
    rule += "---:|---:|"
    lines = [head, rule]
    for r in rows:
        line = (f"| {r['peer']} | {r['runs']} | {r['sources']} | {100 * r['peer_mape']:.1f} % "
                f"({100 * r['peer_median']:.1f} %) | {100 * r['loso_mape']:.1f} % "
                f"({100 * r['loso_median']:.1f} %) |")
        if have_era:
            line += f" {100 * r['era_mape']:.1f} % |"
        line += (f" {100 * (r['peer_mape'] - r['loso_mape']):+.1f} |"
                 f" {100 * r['macro_lead']:+.1f} |")
        lines.append(line)
    return "\n".join(lines) + "\n"


def by_source(peers, loso):
    """Markdown: per source, each peer's MAPE beside scalecast's on the same rows."""
    lines = ["| source | peer | runs | peer MAPE | scalecast held out by source |",
             "|---|---|---:|---:|---:|"]
    for name, peer in peers.items():
        groups = {}
        for i in peer:
            if i in loso:
                groups.setdefault(loso[i][0], []).append(i)
        for source, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            p = statistics.mean(ape(peer[i], loso[i][3]) for i in ids)
            s = statistics.mean(ape(loso[i][2], loso[i][3]) for i in ids)
            cell = source.replace("|", "\\|")  # a source may quote a table header
            lines.append(f"| {cell} | {name} | {len(ids)} | {100 * p:.1f} % | {100 * s:.1f} % |")
    return "\n".join(lines) + "\n"


def scored(peers, own, loso, era):
    """Summary rows: each peer, the runs all peers express, each peer without its own runs."""
    rows = []
    for name, peer in peers.items():
        row = summarise(name, peer, loso, era)
        if row is None:
            print(f"{name}: no run in common", file=sys.stderr)
            continue
        rows.append(row)
        for acc, n, p, s in by_accelerator(peer, loso):
            print(f"  {name:14s} {acc:16s} {n:4d}  peer {100 * p:5.1f} %  scalecast {100 * s:5.1f} %")
    if len(peers) > 1:
        common = set.intersection(*(set(p) for p in peers.values()))
        for name, peer in peers.items():
            row = summarise(f"{name}, on the runs every peer expresses",
                            {i: peer[i] for i in common}, loso, era)
            if row:
                rows.append(row)
    for name, text in own.items():
        if name in peers:
            kept = {i: v for i, v in peers[name].items() if i in loso and text not in loso[i][0]}
            row = summarise(f"{name}, without its own validation runs", kept, loso, era)
            if row:
                rows.append(row)
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scalecast-loso", required=True)
    ap.add_argument("--scalecast-era")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=CSV")
    ap.add_argument("--own", action="append", default=[], metavar="NAME=TEXT")
    ap.add_argument("--approx", action="store_true", help="count yes-approx rows as expressed")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    loso = read_holdout(args.scalecast_loso)
    era = read_holdout(args.scalecast_era) if args.scalecast_era else None
    peers = {}
    for spec in args.peer:
        name, _, path = spec.partition("=")
        peers[name] = read_peer(path, args.approx)
    own = dict(spec.partition("=")[::2] for spec in args.own)
    text = table(scored(peers, own, loso, era), era is not None)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n" + by_source(peers, loso))


if __name__ == "__main__":
    main(sys.argv[1:])
