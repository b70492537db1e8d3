# Sourced by the benchmark scripts: run from the repository, with the release binary in $BIN
# (built if missing; RAGEVAL_BIN names another) and GNU time, which they read figures from.
#   source "$(dirname "$0")/common.sh" NAME
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${RAGEVAL_BIN:-target/release/rageval}
[[ -x $BIN ]] || cargo build --release --quiet --locked
[[ -x /usr/bin/time ]] || { echo "$1: install GNU time (apt-get install time)" >&2; exit 1; }

# The in-process scale benchmarks (w1, w3): a set of ANSWERABLE + UNANSWERABLE generated
# questions over 2,000 generated sections in $DIR, then REPEATS sweeps of it under GNU time
# (builtin `hash` embedder, `mock` model, SWEEP_ARGS for the grid). Each prints one line: LABEL,
# what the caller's `figures` function prints of the reports in $DIR/out, then the wall time,
# CPU time and peak RSS against the target of WALL_S seconds and RSS_MB MB.
#   scale_bench LABEL WALL_S RSS_MB ANSWERABLE UNANSWERABLE REPEATS SWEEP_ARGS...
scale_bench() {
  local label=$1 wall=$2 mb=$3 answerable=$4 unanswerable=$5 repeats=$6
  shift 6
  python3 benches/gen_evalset.py --make-sections 2000 --corpus "$DIR/docs" \
    --answerable "$answerable" --unanswerable "$unanswerable" --out "$DIR/set.yaml"
  for _ in $(seq "$repeats"); do
    /usr/bin/time -v -o "$DIR/time.txt" "$BIN" sweep --config /dev/null --evalset "$DIR/set.yaml" \
      "$@" --out "$DIR/out" -q
    python3 - "$DIR/time.txt" "$label" "$(figures)" "$wall" "$mb" <<'PY'
import sys
sys.path.insert(0, "benches")
import gnu_time
path, label, figures, wall, mb = sys.argv[1:6]
seconds, cpu, rss = gnu_time.read(path)
ok = seconds < float(wall) and rss < float(mb) * 1024
print(f"{label} {figures} wall={seconds:.2f}s cpu={cpu:.2f}s max_rss={rss / 1024:.0f}MB "
      f"target=<{wall}s,<{mb}MB {'ok' if ok else 'OVER TARGET'}")
PY
  done
}
