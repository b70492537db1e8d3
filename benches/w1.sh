#!/usr/bin/env bash
# W1, the in-process scale check: 2,000 questions x 36 settings (72,000 runs) over 2,000 chunks
# with the builtin `hash` embedder and `mock` model. Target: under 1 s wall and 200 MB of memory
# on a 2-core machine. Prints wall time, CPU time and max RSS (from /usr/bin/time -v) of each repeat:
# on a shared machine the CPU time is the steadier figure.
#   benches/w1.sh [REPEATS]        # uses target/release/rageval (built if missing)
set -euo pipefail
source "$(dirname "$0")/common.sh" w1
DIR=target/bench/w1
python3 benches/gen_evalset.py --make-sections 2000 --corpus "$DIR/docs" \
  --answerable 1300 --unanswerable 700 --out "$DIR/set.yaml"

for i in $(seq "${1:-3}"); do
  /usr/bin/time -v "$BIN" sweep --config /dev/null --evalset "$DIR/set.yaml" \
    --min-score 0.1..0.6 --k 1,2,3,4,6,8 --out "$DIR/out" -q 2>"$DIR/time.txt"
  python3 - "$DIR" <<'PY'
import json, sys
sys.path.insert(0, "benches")
import gnu_time
d = sys.argv[1]
seconds, cpu, rss = gnu_time.read(f"{d}/time.txt")
r = json.load(open(f"{d}/out/results.json"))
print(f"W1 questions={len(r['questions'])} settings={len(r['settings'])} runs={len(r['runs'])} "
      f"wall={seconds:.2f}s cpu={cpu:.2f}s max_rss={rss / 1024:.0f}MB target=<1s,<200MB "
      f"{'ok' if seconds < 1 and rss < 200 * 1024 else 'OVER TARGET'}")
PY
done
