#!/usr/bin/env bash
# Whole-process timings, interleaved: each command of the list runs once per round on each file,
# in turn, and the table gives each one's median, min and max in milliseconds.
#   whole-process.sh ROUNDS "SIZE ..." "NAME=COMMAND" ...
# SIZE is a file size such as 64M, 1G, 16G (files of pattern bytes under $DIR, default /tmp,
# made once and read once so that they are in the page cache); COMMAND is run with the file's
# path appended. Example:
#   whole-process.sh 5 "64M 1G" "cpu=b3accel --backend cpu" "all=b3accel --backend all" "b3sum=b3sum"
set -eu
rounds=$1 sizes=$2; shift 2
dir=${DIR:-/tmp}
ms() { local a b; a=$(date +%s%N); "$@" >/dev/null; b=$(date +%s%N); echo $(( (b - a) / 1000 )); }
for size in $sizes; do
    f="$dir/b3accel-probe-$size"
    if [ ! -f "$f" ]; then
        # Random bytes, 1 GiB of them repeated for larger files (fast to make, not compressible).
        [ -f "$dir/b3accel-probe-base" ] || head -c 1G /dev/urandom > "$dir/b3accel-probe-base"
        copies=$(( $(numfmt --from=iec "$size") / (1 << 30) + 1 ))
        for _ in $(seq "$copies"); do cat "$dir/b3accel-probe-base"; done | head -c "$size" > "$f.part" || true
        mv "$f.part" "$f"
    fi
    cat "$f" > /dev/null
    declare -A times=()
    for _ in $(seq "$rounds"); do
        for spec in "$@"; do
            name=${spec%%=*}; cmd=${spec#*=}
            times[$name]+="$(ms $cmd "$f") "
        done
    done
    for spec in "$@"; do
        name=${spec%%=*}
        printf '%-6s %-12s ' "$size" "$name"
        echo "${times[$name]}" | tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {printf "median %8.1f ms  min %8.1f  max %8.1f  (n=%d)\n", v[int((NR+1)/2)]/1000, v[1]/1000, v[NR]/1000, NR}'
    done
    unset times
done
