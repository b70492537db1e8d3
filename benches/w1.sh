#!/usr/bin/env bash
# W1, the in-process scale check: 2,000 questions x 36 settings (72,000 runs) over 2,000 chunks
# with the builtin `hash` embedder and `mock` model. Target: under 1 s wall and 200 MB of memory
# on a 2-core machine. Prints wall time, CPU time and max RSS (from /usr/bin/time -v) of each repeat:
# on a shared machine the CPU time is the steadier figure.
#   benches/w1.sh [REPEATS]        # uses target/release/rageval (built if missing)
set -euo pipefail
source "$(dirname "$0")/common.sh" w1
DIR=target/bench/w1
# The sweep's size, from its results.json.
figures() {
  python3 - "$DIR/out/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"questions={len(r['questions'])} settings={len(r['settings'])} runs={len(r['runs'])}")
PY
}
scale_bench W1 1 200 1300 700 "${1:-3}" --min-score 0.1..0.6 --k 1,2,3,4,6,8
