#!/usr/bin/env bash
# Whole-process timings of b3accel builds against b3sum, interleaved round by round:
#   -r over 100,000 small files (b3sum: the same sorted file list as arguments, through xargs),
#   --check of a 1,000,000-line checkfile over those files, and 1 GiB and 16 GiB page-cached files.
# Usage: [SIZES="1 16"] cli_whole_process.sh DIR ROUNDS B3SUM NAME=BINARY [NAME=BINARY ...]
#   DIR is made and filled on the first run (about 17.5 GiB); every figure printed is the median of
#   ROUNDS runs, in seconds, standard output to /dev/null. Each binary hashes the 1 GiB file once
#   before the rounds (its Device::Auto calibration, on its first large input).
set -euo pipefail
dir=$1 rounds=$2 b3sum=$3
shift 3
mkdir -p "$dir"
cd "$dir"

if [ ! -f list ]; then
    python3 - <<'EOF'
import os, random
random.seed(7)
for d in range(100):
    os.makedirs(f"tree/d{d:03}", exist_ok=True)
    for f in range(1000):
        with open(f"tree/d{d:03}/f{f:04}", "wb") as out:
            out.write(os.urandom(random.randint(0, 4096)))
EOF
    find tree -type f | LC_ALL=C sort > list
    xargs -a list -d '\n' "$b3sum" > sums100k
    for _ in $(seq 10); do cat sums100k; done > sums1m
fi
sizes=${SIZES-1 16}
for size in $sizes; do
    [ -f "${size}g" ] || head -c "${size}G" /dev/urandom > "${size}g"
    cat "${size}g" > /dev/null
done
xargs -a list -d '\n' cat > /dev/null

# run NAME CASE: one timed run; prints seconds.
run() {
    local bin=$1 case=$2 start end
    start=$(date +%s%N)
    case "$case" in
        r100k) if [ "$bin" = "$b3sum" ]; then xargs -a list -d '\n' "$bin" > /dev/null; else "$bin" -r tree > /dev/null; fi ;;
        check1m) "$bin" -c --quiet sums1m > /dev/null ;;
        *g) "$bin" "$case" > /dev/null ;;
    esac
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN { printf "%.3f\n", ns / 1e9 }'
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }

declare -A times
tools=("b3sum=$b3sum" "$@")
for tool in "$@"; do
    [ -f 1g ] && "${tool#*=}" 1g > /dev/null
done
for case in r100k check1m $(for s in $sizes; do echo "${s}g"; done); do
    for round in $(seq "$rounds"); do
        for tool in "${tools[@]}"; do
            name=${tool%%=*} bin=${tool#*=}
            times[$case/$name]+="$(run "$bin" "$case") "
        done
    done
    for tool in "${tools[@]}"; do
        name=${tool%%=*}
        printf '%-8s %-10s median %s s of: %s\n' "$case" "$name" \
            "$(tr ' ' '\n' <<< "${times[$case/$name]}" | grep . | median)" "${times[$case/$name]}"
    done
done
