#!/usr/bin/env bash
# W3, the large in-process sweep: 10,000 questions x 100 settings (1,000,000 runs) over 2,000
# chunks with the builtin `hash` embedder and `mock` model. Target: under 10 s wall and 1 GB of
# memory. Prints wall time, CPU time, peak RSS (GNU time) and the size of each report, per repeat.
#   benches/w3.sh [REPEATS]        # uses target/release/rageval (built if missing)
#   RAGEVAL_TIMINGS=1 benches/w3.sh  # also print when each stage of the sweep ends
set -euo pipefail
source "$(dirname "$0")/common.sh" w3
DIR=target/bench/w3
python3 benches/gen_evalset.py --make-sections 2000 --corpus "$DIR/docs" \
  --answerable 6500 --unanswerable 3500 --out "$DIR/set.yaml"

for i in $(seq "${1:-1}"); do
  /usr/bin/time -v -o "$DIR/time.txt" "$BIN" sweep --config /dev/null --evalset "$DIR/set.yaml" \
    --min-score 0.05..0.5:0.05 --k 1,2,3,4,5,6,7,8,9,10 --max-runs 2000000 --out "$DIR/out" -q
  python3 - "$DIR" <<'PY'
import csv, os, sys
sys.path.insert(0, "benches")
import gnu_time
d = sys.argv[1]
seconds, cpu, rss = gnu_time.read(f"{d}/time.txt")
# summary.csv, not results.json: reading a million runs back in Python would dwarf the sweep.
rows = list(csv.DictReader(open(f"{d}/out/summary.csv", newline="")))
runs = sum(int(r["questions"]) for r in rows)
sizes = " ".join(f"{n}={os.path.getsize(f'{d}/out/{n}') / 1e6:.0f}MB"
                 for n in ("runs.csv", "results.json", "report.html"))
print(f"W3 questions={rows[0]['questions']} settings={len(rows)} runs={runs} "
      f"wall={seconds:.2f}s cpu={cpu:.2f}s max_rss={rss / 1024:.0f}MB {sizes} "
      f"target=<10s,<1024MB {'ok' if seconds < 10 and rss < 1024 * 1024 else 'OVER TARGET'}")
PY
done
