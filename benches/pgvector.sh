#!/usr/bin/env bash
# Wall time of the pgvector retriever against the builtin one: the sample, and a generated
# corpus of 10,000 chunks loaded by `rageval index` (HNSW index, ef_search 100).
#   scripts/postgres.sh start && benches/pgvector.sh     # RAGEVAL_BIN=target/debug/rageval to skip a release build
#   RAGEVAL_BENCH_DSN=postgresql://...  to use another database than the test one
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath -m "${RAGEVAL_BIN:-target/release/rageval}")
[[ -x $BIN ]] || cargo build --release --quiet
export RAGEVAL_BENCH_DSN=${RAGEVAL_BENCH_DSN:-$(scripts/postgres.sh url)}
W=target/bench/pgvector
rm -rf "$W" && mkdir -p "$W/big"
cp -r evalsets "$W/"
# 100 files x 100 sections of words drawn from the sample corpus, plus the sample itself.
python3 - "$W/big" <<'PY'
import os, random, re, sys
out = sys.argv[1]
words = sorted(set(w for n in os.listdir("evalsets/club") if n.endswith(".md")
                   for w in re.findall(r"[a-z]+", open(f"evalsets/club/{n}").read().lower()) if len(w) > 3))
rng = random.Random(7)
for f in range(100):
    with open(f"{out}/gen{f:03}.md", "w") as fh:
        for s in range(100):
            fh.write(f"# Section {f}-{s}\n{' '.join(rng.choice(words) for _ in range(40))}\n\n")
PY
cp evalsets/club/*.md "$W/big/"
python3 benches/gen_evalset.py --corpus "$W/big" --answerable 20 --unanswerable 6 --out "$W/big.yaml" >/dev/null

run() {
  local label=$1 config=$2 set=$3
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$W" && "$BIN" --config "$config" sweep --evalset "$set" --min-score 0.1..0.5 --k 1,2,4,8 --out "out-$config" -q)
  t1=$(date +%s.%N)
  printf '%-34s %6.2fs\n' "$label" "$(echo "$t1 - $t0" | bc)"
}
cfg() { # name table evalset
  printf 'evalsets: [%s]\nretriever:\n  kind: pgvector\n  dsn_env: RAGEVAL_BENCH_DSN\n  table: %s\n  ef_search: 100\n' "$3" "$2" >"$W/$1"
}
printf 'evalsets: [evalsets/club.yaml]\n' >"$W/builtin.yaml"
cfg pg-sample.yaml rv_bench_sample evalsets/club.yaml
cfg pg-big.yaml rv_bench_10k big.yaml
printf 'evalsets: [big.yaml]\n' >"$W/builtin-big.yaml"

(cd "$W" && "$BIN" --config pg-sample.yaml index --replace -q)
t0=$(date +%s.%N)
(cd "$W" && "$BIN" --config pg-big.yaml index --replace)
t1=$(date +%s.%N)
printf '%-34s %6.2fs\n' "index 10,000+ chunks" "$(echo "$t1 - $t0" | bc)"
run "builtin, sample (26 q x 20)" builtin.yaml evalsets/club.yaml
run "pgvector, sample (26 q x 20)" pg-sample.yaml evalsets/club.yaml
run "builtin, 10k chunks (26 q x 20)" builtin-big.yaml big.yaml
run "pgvector, 10k chunks (26 q x 20)" pg-big.yaml big.yaml

# The pgvector sweeps again with a reranker over 8 candidates: `rageval mock-llm`'s /v1/rerank
# on loopback (one call per question text; the cache under $W starts empty).
"$BIN" mock-llm --addr 127.0.0.1:0 --no-auth >"$W/mock.txt" 2>/dev/null &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q http "$W/mock.txt" 2>/dev/null && break; sleep 0.1; done
URL=$(grep -o 'http://[^ ]*' "$W/mock.txt")
for c in pg-sample pg-big; do
  { cat "$W/$c.yaml"; printf 'reranker:\n  base_url: %s\n  candidates: 8\n' "$URL"; } >"$W/$c-rerank.yaml"
done
run "pgvector + reranker, sample" pg-sample-rerank.yaml evalsets/club.yaml
run "pgvector + reranker, 10k chunks" pg-big-rerank.yaml big.yaml
