#!/usr/bin/env bash
# The classify cost of a large sweep: 1,000 questions x 20 settings (min_score 0.0 to 0.38, every score the hash embedder returns, k=8)
# over 2,000 generated sections, builtin `hash` embedder and `mock` model. Each generated section
# is one sentence of 40 to 120 words, so the mock's replies are long enough (COPY_WORDS) to be
# compared with every passage sent, as a real model's are. Prints, per repeat, the `runs` stage
# (classifying and building every run, from RAGEVAL_TIMINGS) and the whole sweep's wall time.
#   benches/classify.sh [REPEATS]      # uses target/release/rageval (built if missing)
#   RAGEVAL_BIN=target/debug/rageval benches/classify.sh   # relative figures only
set -euo pipefail
source "$(dirname "$0")/common.sh" classify
DIR=target/bench/classify
python3 benches/gen_evalset.py --make-sections 2000 --corpus "$DIR/docs" \
  --answerable 600 --unanswerable 400 --out "$DIR/set.yaml"
for _ in $(seq "${1:-3}"); do
  RAGEVAL_TIMINGS=1 "$BIN" sweep --config /dev/null --evalset "$DIR/set.yaml" \
    --min-score 0.0..0.38:0.02 --k 8 --out "$DIR/out" -q 2>"$DIR/timings.txt"
  python3 - "$DIR/timings.txt" "$DIR/out/results.json" <<'PY'
import json, re, sys
marks = [(float(m.group(1)), m.group(2)) for m in
         re.finditer(r"timing:\s+([\d.]+) s  (\S+)", open(sys.argv[1]).read())]
at = dict((stage, t) for t, stage in marks)
r = json.load(open(sys.argv[2]))
print(f"classify questions={len(r['questions'])} settings={len(r['settings'])} runs={len(r['runs'])} "
      f"calls={r['summary']['calls']['distinct_prompts']} "
      f"runs_stage={at['runs'] - at['calls']:.3f}s sweep={at['done']:.2f}s")
PY
done
