#!/usr/bin/env bash
# Throughput of the HTTP path against `rageval mock-llm --delay-ms 20` at concurrency 1, 8, 32:
# a generated set of 520 questions over 20 settings (W2). Target: at 32 the wall time is within
# 1.2x of distinct_prompts x 20 ms / 32 (the server's latency is the only cost). Prints wall
# time and peak RSS (GNU time) of each level.
#   benches/http.sh [CONCURRENCY...]
set -euo pipefail
source "$(dirname "$0")/common.sh" http
LEVELS=${*:-1 8 32}
DIR=target/bench/http
rm -rf "$DIR"; mkdir -p "$DIR"
python3 benches/gen_evalset.py --corpus evalsets/club --answerable 340 --unanswerable 180 --out "$DIR/set.yaml"

"$BIN" mock-llm --addr 127.0.0.1:0 --delay-ms 20 >"$DIR/server.out" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$DIR/server.out" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$DIR/server.out")

cat >"$DIR/rageval.yaml" <<YAML
chat: {kind: openai, base_url: "$URL", model: mock, api_key_env: RAGEVAL_BENCH_KEY}
cache: {enabled: false}
YAML
export RAGEVAL_BENCH_KEY=test-key
for c in $LEVELS; do
  t0=$(date +%s.%N)
  /usr/bin/time -v -o "$DIR/time-$c.txt" "$BIN" sweep --config "$DIR/rageval.yaml" --evalset "$DIR/set.yaml" --min-score 0.1..0.5 --k 1,2,4,8 \
    --concurrency "$c" --out "$DIR/out-$c" -q
  t1=$(date +%s.%N)
  python3 - "$c" "$t0" "$t1" "$DIR/out-$c/results.json" "$DIR/time-$c.txt" <<'PY'
import json, sys
sys.path.insert(0, "benches")
import gnu_time
c, t0, t1, path = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rss = gnu_time.read(sys.argv[5])[2]
d = json.load(open(path))
calls = d["summary"]["calls"]["distinct_prompts"]
wall = t1 - t0
ideal = calls * 0.020 / c
verdict = "ok" if wall <= 1.2 * ideal else "SLOW"
print(f"concurrency={c:<3} questions={len(d['questions'])} settings={len(d['settings'])} calls={calls} "
      f"wall={wall:.2f}s max_rss={rss / 1024:.0f}MB calls/s={calls / wall:.1f} ideal={ideal:.2f}s "
      f"ratio={wall / ideal:.2f} target=<=1.2x {verdict}")
PY
done
