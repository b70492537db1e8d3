#!/usr/bin/env bash
# Wall time, peak memory and results.json size of the builtin sweep: the sample set, and a
# generated set 100 times larger.
#   benches/sweep.sh            # uses target/release/rageval (built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${RAGEVAL_BIN:-target/release/rageval}
[[ -x $BIN ]] || cargo build --release --quiet
mkdir -p target/bench
python3 benches/gen_evalset.py --corpus evalsets/club --answerable 1700 --unanswerable 900 --out target/bench/club-x100.yaml

run() {
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -v -o target/bench/time.txt \
    "$BIN" sweep --config /dev/null "$@" --min-score 0.1..0.5 --k 1,2,4,8 --out target/bench/out -q
  t1=$(date +%s.%N)
  python3 - "$label" "$t0" "$t1" <<'PY'
import json, os, re, sys
label, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
path = "target/bench/out/results.json"
d = json.load(open(path))
c = d["summary"]["calls"]
rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open("target/bench/time.txt").read())
print(f"{label:<18} questions={len(d['questions']):>5} settings={len(d['settings'])} runs={len(d['runs']):>6} "
      f"distinct_prompts={c['distinct_prompts']:>5} wall={t1 - t0:.2f}s "
      f"peak_rss={int(rss.group(1)) / 1024:.0f}MB results.json={os.path.getsize(path) / 1e6:.1f}MB")
PY
}
run "sample (26 q)" --evalset evalsets/club.yaml
run "x100 (2600 q)" --evalset target/bench/club-x100.yaml
