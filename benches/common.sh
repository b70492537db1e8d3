# Sourced by the benchmark scripts: run from the repository, with the release binary in $BIN
# (built if missing; RAGEVAL_BIN names another) and GNU time, which they read figures from.
#   source "$(dirname "$0")/common.sh" NAME
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${RAGEVAL_BIN:-target/release/rageval}
[[ -x $BIN ]] || cargo build --release --quiet --locked
[[ -x /usr/bin/time ]] || { echo "$1: install GNU time (apt-get install time)" >&2; exit 1; }
