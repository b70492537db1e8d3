#!/usr/bin/env bash
# W3, the large in-process sweep: 10,000 questions x 100 settings (1,000,000 runs) over 2,000
# chunks with the builtin `hash` embedder and `mock` model. Target: under 10 s wall and 1 GB of
# memory. Prints wall time, CPU time, peak RSS (GNU time) and the size of each report, per repeat.
#   benches/w3.sh [REPEATS]        # uses target/release/rageval (built if missing)
#   RAGEVAL_TIMINGS=1 benches/w3.sh  # also print when each stage of the sweep ends
set -euo pipefail
source "$(dirname "$0")/common.sh" w3
DIR=target/bench/w3
# The sweep's size and the size of each report.
figures() {
  python3 - "$DIR/out" <<'PY'
import csv, os, sys
out = sys.argv[1]
# summary.csv, not results.json: reading a million runs back in Python would dwarf the sweep.
rows = list(csv.DictReader(open(f"{out}/summary.csv", newline="")))
runs = sum(int(r["questions"]) for r in rows)
sizes = " ".join(f"{n}={os.path.getsize(f'{out}/{n}') / 1e6:.0f}MB"
                 for n in ("runs.csv", "results.json", "report.html"))
print(f"questions={rows[0]['questions']} settings={len(rows)} runs={runs} {sizes}")
PY
}
scale_bench W3 10 1024 6500 3500 "${1:-1}" --min-score 0.05..0.5:0.05 --k 1,2,3,4,5,6,7,8,9,10 --max-runs 2000000
