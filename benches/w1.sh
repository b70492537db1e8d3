#!/usr/bin/env bash
# W1, the in-process scale check: 2,000 questions x 36 settings (72,000 runs) over 2,000 chunks
# with the builtin `hash` embedder and `mock` model. Target: under 1 s wall and 200 MB of memory
# on a 2-core machine. Prints wall time, CPU time and max RSS (from /usr/bin/time -v) of each repeat:
# on a shared machine the CPU time is the steadier figure.
#   benches/w1.sh [REPEATS]        # uses target/release/rageval (built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${RAGEVAL_BIN:-target/release/rageval}
[[ -x $BIN ]] || cargo build --release --quiet --locked
[[ -x /usr/bin/time ]] || { echo "w1: install GNU time (apt-get install time)" >&2; exit 1; }
DIR=target/bench/w1
python3 benches/gen_evalset.py --make-sections 2000 --corpus "$DIR/docs" \
  --answerable 1300 --unanswerable 700 --out "$DIR/set.yaml"

for i in $(seq "${1:-3}"); do
  /usr/bin/time -v "$BIN" sweep --config /dev/null --evalset "$DIR/set.yaml" \
    --min-score 0.1..0.6 --k 1,2,3,4,6,8 --out "$DIR/out" -q 2>"$DIR/time.txt"
  python3 - "$DIR" <<'PY'
import json, re, sys
d = sys.argv[1]
t = open(f"{d}/time.txt").read()
wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+(?:\.\d+)?)$", t, re.M)
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
seconds = float(wall.group(1) or 0) * 60 + float(wall.group(2))
cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", t).group(1)) for k in ("User", "System"))
r = json.load(open(f"{d}/out/results.json"))
print(f"W1 questions={len(r['questions'])} settings={len(r['settings'])} runs={len(r['runs'])} "
      f"wall={seconds:.2f}s cpu={cpu:.2f}s max_rss={rss / 1024:.0f}MB target=<1s,<200MB "
      f"{'ok' if seconds < 1 and rss < 200 * 1024 else 'OVER TARGET'}")
PY
done
