#!/usr/bin/env bash
# Files not in memory: whole-process times of b3accel, b3sum, cat and dd reading from the disk,
# the page cache dropped before every run, on the plain disk and on the same disk throttled to the
# shape of a spinning one. Runs as root (it drops caches, and the throttle needs cgroups and sysfs).
#
#   cold.sh [OPTIONS]        (every option also reads an environment variable, shown in brackets)
#     --b3accel PATH    the binary to measure [B3ACCEL; default target/release/b3accel]
#     --b3sum PATH      upstream b3sum [B3SUM; default /opt/b3sum/bin/b3sum, else b3sum on PATH]
#     --dir DIR         work directory on the disk to test [COLD_DIR; default /var/tmp/b3accel-cold]
#     --rounds N        interleaved rounds [ROUNDS; default 3]
#     --file-size SIZE  the large file, e.g. 512M, 4G; 0 leaves it out [FILE_SIZE; default 512M]
#     --files N         the tree of small files; 0 leaves it out [TREE_FILES; default 3000]
#     --file-sizes A-B  the small files' sizes, random from a fixed seed [TREE_SIZES; 4K-256K]
#     --setups LIST     "plain", "throttled" or both [SETUPS; "plain throttled"; --warm: plain]
#     --iops N, --bps N, --readahead KIB   the throttle: reads/s, bytes/s, readahead
#                       [THROTTLE_IOPS 150, THROTTLE_BPS 209715200, THROTTLE_READAHEAD_KB 128]
#     --warm            leave the page cache alone (one warm-up read first): files in memory
#     --base PATH       another b3accel binary (say, an older build) measured beside it, on its
#                       default path: rows "base b3accel" and "base b3accel -r" [B3ACCEL_BASE]
#
# The files are made once under DIR and reused (made again when the sizes asked for differ). After
# each drop of the cache the commands' programs and libraries are read back, so that a run reads
# its data from the disk, not its binary. Each round runs every command once, in a new random
# order; each table row is one command's median, range, throughput and speed against the
# reference (dd, or cat for the tree) and b3sum (reference time / this time: above 1 is faster).
# Every hash printed by every run is checked against b3sum's; a mismatch stops the script with
# exit status 2.
#
# The throttle (cgroup v1 blkio, else cgroup v2 io.max) limits reads of the disk holding DIR, found
# through partitions and device-mapper, for the measured commands only; the readahead of the
# filesystem's device is set for the setup. Both are restored on exit, Ctrl-C included.
set -euo pipefail
export LC_ALL=C

usage() { sed -n '2,/^set /{/^#/{s/^# \{0,1\}//;p}}' "$0"; }
die() { echo "cold.sh: $*" >&2; exit 1; }
note() { echo "cold.sh: $*" >&2; }

b3accel=${B3ACCEL:-target/release/b3accel}
b3sum=${B3SUM:-}
dir=${COLD_DIR:-/var/tmp/b3accel-cold}
rounds=${ROUNDS:-3}
file_size=${FILE_SIZE:-512M}
tree_files=${TREE_FILES:-3000}
tree_sizes=${TREE_SIZES:-4K-256K}
setups=${SETUPS:-}
throttle_iops=${THROTTLE_IOPS:-150}
throttle_bps=${THROTTLE_BPS:-209715200}
throttle_ra=${THROTTLE_READAHEAD_KB:-128}
warm=${WARM:-0}
base=${B3ACCEL_BASE:-}
given=("$@")

while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --warm) warm=1; shift; continue ;;
    esac
    [ $# -ge 2 ] || die "$1 needs a value (--help lists the options)"
    case $1 in
        --b3accel) b3accel=$2 ;;
        --b3sum) b3sum=$2 ;;
        --dir) dir=$2 ;;
        --rounds) rounds=$2 ;;
        --file-size) file_size=$2 ;;
        --files) tree_files=$2 ;;
        --file-sizes) tree_sizes=$2 ;;
        --setups) setups=$2 ;;
        --iops) throttle_iops=$2 ;;
        --bps) throttle_bps=$2 ;;
        --readahead) throttle_ra=$2 ;;
        --base) base=$2 ;;
        *) die "unknown option '$1' (--help lists the options)" ;;
    esac
    shift 2
done

if [ "$(id -u)" -ne 0 ]; then
    again=
    [ "${#given[@]}" -eq 0 ] || printf -v again ' %q' "${given[@]}"
    echo "cold.sh needs root: it drops the page cache before every run and throttles the disk" >&2
    echo "through cgroups and sysfs. Run it again with sudo:  sudo $0$again" >&2
    exit 1
fi

# Validate and normalize the arguments.
is_count() { [[ $1 =~ ^[0-9]+$ ]]; }
# human BYTES: "512 MiB", "4.5 KiB".
human() {
    awk -v b="$1" 'BEGIN {
        split("B KiB MiB GiB TiB", u, " "); i = 1
        while (b >= 1024 && i < 5) { b /= 1024; i++ }
        printf (b == int(b) ? "%d %s" : "%.1f %s"), b, u[i]
    }'
}
is_count "$rounds" && [ "$rounds" -ge 1 ] || die "--rounds must be a whole number >= 1, not '$rounds'"
is_count "$tree_files" || die "--files must be a whole number, not '$tree_files'"
for v in throttle_iops throttle_bps throttle_ra; do
    is_count "${!v}" && [ "${!v}" -ge 1 ] || die "the throttle's values must be whole numbers >= 1 ('${!v}')"
done
file_bytes=$(numfmt --from=iec -- "$file_size" 2>/dev/null) || die "--file-size: not a size: '$file_size'"
[[ $tree_sizes =~ ^([0-9]+[KMG]?)-([0-9]+[KMG]?)$ ]] || die "--file-sizes: expected MIN-MAX such as 4K-256K, not '$tree_sizes'"
tree_min=$(numfmt --from=iec "${BASH_REMATCH[1]}") tree_max=$(numfmt --from=iec "${BASH_REMATCH[2]}")
[ "$tree_min" -le "$tree_max" ] || die "--file-sizes: MIN is above MAX in '$tree_sizes'"
[ "$file_bytes" -gt 0 ] || [ "$tree_files" -gt 0 ] || die "nothing to measure: --file-size and --files are both 0"
[ -n "$setups" ] || { [ "$warm" = 1 ] && setups=plain || setups="plain throttled"; }
for s in $setups; do
    case $s in plain | throttled) ;; *) die "--setups: unknown setup '$s' (plain, throttled)" ;; esac
done

[ -x "$b3accel" ] || die "no b3accel binary at '$b3accel' (build it with cargo build --release, or name one with --b3accel)"
b3accel=$(realpath -- "$b3accel")
if [ -z "$b3sum" ]; then
    b3sum=/opt/b3sum/bin/b3sum
    [ -x "$b3sum" ] || b3sum=$(command -v b3sum) || die "no b3sum found (install it, or name it with --b3sum)"
fi
found=$(command -v -- "$b3sum") || die "no b3sum at '$b3sum'"
b3sum=$(realpath -- "$found")
[ -x "$b3sum" ] || die "b3sum '$b3sum' is not an executable"
[ -n "${EPOCHREALTIME:-}" ] || die "needs bash 5 or later (for EPOCHREALTIME)"
for tool in dd cat find sort xargs shuf awk numfmt sync; do
    command -v "$tool" > /dev/null || die "needs '$tool' on PATH"
done
help=$("$b3accel" --help 2>&1) || die "'$b3accel --help' failed: is it a b3accel binary?"
has_read=0
[[ $help =~ (^|[[:space:],])--read([[:space:]=]|$) ]] && has_read=1

mkdir -p -- "$dir"
dir=$(realpath -- "$dir")
big="$dir/large.bin"
tree="$dir/tree"

# State to put back on exit: the readahead value and the throttle's cgroup.
ra_file='' ra_saved='' cg='' cg_procs='' cg2_enabled_io='' tmp=''
restore() {
    if [ -n "$cg" ]; then
        # A command cut short by Ctrl-C may still be leaving the group; give it a moment.
        for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir -- "$cg" 2>/dev/null && break; sleep 0.2; done
        [ -d "$cg" ] && note "could not remove the cgroup $cg (processes still in it?); remove it with rmdir"
        cg='' cg_procs=''
    fi
    if [ -n "$cg2_enabled_io" ]; then
        echo "-io" > "$cg2_enabled_io" 2>/dev/null || true
        cg2_enabled_io=
    fi
    if [ -n "$ra_file" ]; then
        echo "$ra_saved" > "$ra_file" || note "could not restore $ra_file to $ra_saved"
        ra_file=
    fi
}
cleanup() {
    restore
    [ -n "$tmp" ] && rm -rf -- "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tmp=$(mktemp -d "${TMPDIR:-/tmp}/b3accel-cold.XXXXXX")

# ---- The disk holding DIR ----------------------------------------------------------------------

# MAJ:MIN of the filesystem holding DIR: its st_dev, else (btrfs and other filesystems with
# anonymous device numbers) the mount's source device.
fs_devnum() {
    local d major minor src
    d=$(stat -c %d -- "$dir")
    major=$(( ((d >> 8) & 0xfff) | ((d >> 32) & ~0xfff) ))
    minor=$(( (d & 0xff) | ((d >> 12) & ~0xff) ))
    if [ -e "/sys/dev/block/$major:$minor" ]; then echo "$major:$minor"; return; fi
    src=$(findmnt -n -o SOURCE --target "$dir" 2>/dev/null | head -1 | sed 's/\[.*//') || true
    if [ -b "$src" ]; then
        printf '%d:%d\n' "0x$(stat -L -c %t -- "$src")" "0x$(stat -L -c %T -- "$src")"
    fi
}
# The whole disks under a sysfs block device: a partition's parent, device-mapper's and md's
# slaves followed down to the disks.
disks_under() {
    local p=$1 s any=0
    [ -e "$p/partition" ] && p=$(dirname -- "$p")
    if [ -d "$p/slaves" ]; then
        for s in "$p"/slaves/*; do
            [ -e "$s" ] || continue
            any=1
            disks_under "$(realpath -- "$s")"
        done
    fi
    [ "$any" = 1 ] || echo "$p"
}
fs_dev=$(fs_devnum)
fs_sys='' ra_dev='' disks=()
if [ -n "$fs_dev" ]; then
    fs_sys=$(realpath -- "/sys/dev/block/$fs_dev")
    # The readahead that governs the page cache is the filesystem device's (a partition's is
    # its disk's).
    if [ -e "$fs_sys/partition" ]; then ra_dev=$(dirname -- "$fs_sys"); else ra_dev=$fs_sys; fi
    [ -e "$ra_dev/queue/read_ahead_kb" ] || ra_dev=
    mapfile -t disks < <(disks_under "$fs_sys" | sort -u)
fi
disk_desc() {
    local p out=
    for p in "${disks[@]}"; do
        local name model size rot
        name=$(basename -- "$p")
        model=$(tr -s ' ' 2>/dev/null < "$p/device/model" | sed 's/ *$//') || model=
        size=$(( $(cat "$p/size") * 512 ))
        rot=$(cat "$p/queue/rotational" 2>/dev/null || echo '?')
        out+="${out:+; }/dev/$name $(cat "$p/dev") ${model:+$model, }$(human "$size"), rotational $rot"
    done
    echo "${out:-unknown (no block device found for $dir)}"
}

# ---- The files -----------------------------------------------------------------------------------

# The small files' sizes: a 31-bit linear congruential sequence from a fixed seed, the same on
# every machine. Names sort (LC_ALL=C) in the order they are written: dNNN/fNNN, 100 per folder.
tree_spec="files=$tree_files sizes=$tree_min-$tree_max seed=1"
tree_list() {
    local i=0 x=1 span=$(( tree_max - tree_min + 1 ))
    while [ "$i" -lt "$tree_files" ]; do
        x=$(( (x * 1103515245 + 12345) & 0x7fffffff ))
        printf 'd%03d/f%03d %d\n' $(( i / 100 )) $(( i % 100 )) $(( tree_min + (x >> 4) % span ))
        i=$(( i + 1 ))
    done
}
tree_bytes=0
if [ "$tree_files" -gt 0 ]; then
    tree_bytes=$(tree_list | awk '{s += $2} END {print s + 0}')
fi
need=0
[ -f "$big" ] && [ "$(stat -c %s -- "$big")" = "$file_bytes" ] || need=$(( need + file_bytes ))
[ "$(cat -- "$dir/tree.spec" 2>/dev/null)" = "$tree_spec" ] || need=$(( need + tree_bytes ))
if [ "$need" -gt 0 ]; then
    avail=$(df -B1 --output=avail -- "$dir" | tail -1 | tr -d ' ')
    [ "$avail" -gt $(( need + need / 16 + (16 << 20) )) ] ||
        die "$dir needs $(human "$need") free for the test files; $(human "$avail") are"
fi
if [ "$file_bytes" -gt 0 ] && ! { [ -f "$big" ] && [ "$(stat -c %s -- "$big")" = "$file_bytes" ]; }; then
    note "writing the large file ($file_size, random bytes): $big"
    head -c "$file_bytes" /dev/urandom > "$big.part"
    mv -- "$big.part" "$big"
fi
if [ "$tree_files" -gt 0 ] && [ "$(cat -- "$dir/tree.spec" 2>/dev/null)" != "$tree_spec" ]; then
    note "writing $tree_files small files ($tree_sizes, random bytes): $tree/"
    rm -rf -- "$tree" "$dir/tree.spec"
    tree_list | while read -r name size; do
        mkdir -p -- "$tree/${name%/*}"
        head -c "$size" /dev/urandom > "$tree/$name"
    done
    echo "$tree_spec" > "$dir/tree.spec"
fi
sync

# ---- The commands --------------------------------------------------------------------------------

file_cases=() tree_cases=()
if [ "$file_bytes" -gt 0 ]; then
    file_cases=("dd iflag=direct bs=16M" "cat" "b3sum" "b3sum --no-mmap" "b3accel" "b3accel --no-mmap")
    [ "$has_read" = 1 ] && file_cases+=("b3accel --read stream" "b3accel --read map")
    [ -n "$base" ] && file_cases+=("base b3accel")
fi
if [ "$tree_files" -gt 0 ]; then
    tree_cases=("cat (sorted list)" "b3sum (sorted list)" "b3accel -r" "b3accel --no-mmap -r")
    [ -n "$base" ] && tree_cases+=("base b3accel -r")
fi

# run_case NAME: runs one command, its hashes (if any) to $tmp/out, anything else to /dev/null.
run_case() {
    case $1 in
        "dd iflag=direct bs=16M") dd if="$big" of=/dev/null iflag=direct bs=16M status=none ;;
        "cat") cat -- "$big" > /dev/null ;;
        "b3sum") "$b3sum" -- "$big" > "$tmp/out" ;;
        "b3sum --no-mmap") "$b3sum" --no-mmap -- "$big" > "$tmp/out" ;;
        "b3accel") "$b3accel" -- "$big" > "$tmp/out" ;;
        "b3accel --no-mmap") "$b3accel" --no-mmap -- "$big" > "$tmp/out" ;;
        "b3accel --read stream") "$b3accel" --read stream -- "$big" > "$tmp/out" ;;
        "b3accel --read map") "$b3accel" --read map -- "$big" > "$tmp/out" ;;
        "base b3accel") "$base" -- "$big" > "$tmp/out" ;;
        "base b3accel -r") "$base" -r -- "$tree" > "$tmp/out" ;;
        "cat (sorted list)") find "$tree" -type f -print0 | sort -z | xargs -0 cat -- > /dev/null ;;
        "b3sum (sorted list)") find "$tree" -type f -print0 | sort -z | xargs -0 "$b3sum" -- > "$tmp/out" ;;
        "b3accel -r") "$b3accel" -r -- "$tree" > "$tmp/out" ;;
        "b3accel --no-mmap -r") "$b3accel" --no-mmap -r -- "$tree" > "$tmp/out" ;;
        *) echo "cold.sh: no such case '$1'" >&2; return 1 ;;
    esac
}

# check_case NAME: the output of the last run of NAME against b3sum's; exit 2 when they differ.
check_case() {
    local want
    case $1 in
        "dd "* | "cat" | "cat "*) return 0 ;;
        *" -r" | *"(sorted list)") want=$tmp/want-tree ;;
        *) want=$tmp/want-file ;;
    esac
    if ! cmp -s -- "$want" "$tmp/out"; then
        echo "cold.sh: HASH MISMATCH: '$1' printed something else than b3sum:" >&2
        diff -- "$want" "$tmp/out" | head -20 >&2 || true
        exit 2
    fi
}

# timed NAME: one run of NAME, in the throttle's cgroup when one is set; its seconds in $elapsed.
timed() {
    local start end rc=0
    start=${EPOCHREALTIME/[.,]/}
    if [ -n "$cg_procs" ]; then
        (echo "$BASHPID" > "$cg_procs" && run_case "$1" < /dev/null) || rc=$?
    else
        run_case "$1" < /dev/null || rc=$?
    fi
    end=${EPOCHREALTIME/[.,]/}
    [ "$rc" = 0 ] || die "'$1' failed (exit status $rc)"
    elapsed=$(awk -v us=$(( end - start )) 'BEGIN { printf "%.3f", us / 1e6 }')
}

# drop_caches: empties the page cache, then reads back the programs and libraries the commands
# load (listed by first_run), so that a run reads only its data from the disk, not its binary.
drop_caches() {
    sync
    echo 3 > /proc/sys/vm/drop_caches
    xargs -r -d '\n' -a "$tmp/programs" cat -- > /dev/null
    [ -z "${COLD_DEBUG:-}" ] || cat "$tmp/programs" >&2
}

# first_run NAME: one run on cached files, outside any throttle; checks its hashes and adds the
# files its processes loaded (the dynamic loader's LD_DEBUG report) to $tmp/programs.
first_run() {
    local rc=0
    (export LD_DEBUG=libs; run_case "$1" < /dev/null) 2> "$tmp/ld" || rc=$?
    local f
    sed -n 's/.*\(calling init\|initialize program\): //p' "$tmp/ld" | sort -u | while IFS= read -r f; do
        # A program is reported by the name it was started with: find it on PATH.
        [[ $f == */* ]] || f=$(command -v -- "$f") || continue
        [ -f "$f" ] && realpath -- "$f"
    done >> "$tmp/programs"
    sort -u -o "$tmp/programs" "$tmp/programs"
    if [ "$rc" -ne 0 ]; then
        grep -v -E $'^ *[0-9]+:\t' "$tmp/ld" >&2 || true
        return "$rc"
    fi
    check_case "$1"
}

# The reference outputs, and every command run and checked once before timing.
: > "$tmp/programs"
if [ "$file_bytes" -gt 0 ]; then
    "$b3sum" -- "$big" > "$tmp/want-file"
    for c in "${file_cases[@]}"; do
        if [ "$c" = "dd iflag=direct bs=16M" ] && ! first_run "$c" 2>/dev/null; then
            note "dd iflag=direct fails on $dir (no O_DIRECT on this filesystem?): dd left out, cat is the reference"
            file_cases=("${file_cases[@]:1}")
            continue
        fi
        first_run "$c" || die "'$c' failed"
    done
fi
if [ "$tree_files" -gt 0 ]; then
    find "$tree" -type f -print0 | sort -z | xargs -0 "$b3sum" -- > "$tmp/want-tree"
    for c in "${tree_cases[@]}"; do
        first_run "$c" || die "'$c' failed"
    done
fi

# ---- The machine ---------------------------------------------------------------------------------

commit=
if repo=$(git -C "$(dirname -- "$b3accel")" rev-parse --show-toplevel 2>/dev/null); then
    commit=$(git -C "$repo" rev-parse --short HEAD)
    git -C "$repo" diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
fi
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
mem=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
ra_now=unknown
[ -z "$ra_dev" ] || ra_now="$(cat "$ra_dev/queue/read_ahead_kb") KiB ($(basename -- "$ra_dev"))"
inputs=
[ "$file_bytes" -eq 0 ] || inputs+=" one file of $(human "$file_bytes"),"
tree_mb=$(awk -v b="$tree_bytes" 'BEGIN {printf "%.0f", b / 1e6}')
[ "$tree_files" -eq 0 ] || inputs+=" $tree_files files of $(human "$tree_min")-$(human "$tree_max") ($tree_mb MB),"
if [ "$warm" = 1 ]; then echo "## Files in memory (--warm)"; else echo "## Files not in memory"; fi
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- kernel: $(uname -sr), CPU: ${cpu:-$(uname -m)}, $(nproc) threads, memory: $mem"
echo "- work dir: $dir ($(stat -f -c %T -- "$dir")), device ${fs_dev:-unknown} ${fs_sys##*/}"
echo "- disk: $(disk_desc); readahead: $ra_now"
echo "- b3accel: $b3accel, $("$b3accel" --version 2>/dev/null | head -1)${commit:+, commit $commit}"
echo "- b3sum: $b3sum, $("$b3sum" --version 2>/dev/null | head -1)"
echo "- inputs:${inputs%,} in $dir; rounds: $rounds, $([ "$warm" = 1 ] &&
    echo "page cache kept" || echo "page cache dropped before every run")"
[ "$has_read" = 1 ] || echo "- this b3accel has no --read option: its --read rows are left out"
echo

# ---- The throttle --------------------------------------------------------------------------------

# throttle_on: makes a cgroup limiting reads of the disks under DIR and sets the readahead;
# returns 1 with a message when this machine cannot (the setup is then skipped).
throttle_on() {
    local v1 v2 d dev
    if [ "${#disks[@]}" -eq 0 ]; then note "no block device found under $dir: cannot throttle"; return 1; fi
    v1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)blkio(,|$)/ {print $2; exit}' /proc/self/mounts)
    v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
    if [ -n "$v1" ] && [ -e "$v1/blkio.throttle.read_bps_device" ]; then
        cg="$v1/b3accel-cold.$$"
        mkdir -- "$cg" || { cg=; note "cannot make a cgroup under $v1: cannot throttle"; return 1; }
        for d in "${disks[@]}"; do
            dev=$(cat "$d/dev")
            { echo "$dev $throttle_iops" > "$cg/blkio.throttle.read_iops_device" &&
                echo "$dev $throttle_bps" > "$cg/blkio.throttle.read_bps_device"; } ||
                { note "the kernel refused a blkio throttle for $dev: cannot throttle"; return 1; }
        done
        cg_procs=$cg/cgroup.procs
    elif [ -n "$v2" ] && grep -qw io "$v2/cgroup.controllers" 2>/dev/null; then
        if ! grep -qw io "$v2/cgroup.subtree_control"; then
            echo "+io" > "$v2/cgroup.subtree_control" ||
                { note "cannot enable the io controller in $v2: cannot throttle"; return 1; }
            cg2_enabled_io=$v2/cgroup.subtree_control
        fi
        cg="$v2/b3accel-cold.$$"
        mkdir -- "$cg" || { cg=; note "cannot make a cgroup under $v2: cannot throttle"; return 1; }
        for d in "${disks[@]}"; do
            dev=$(cat "$d/dev")
            echo "$dev rbps=$throttle_bps riops=$throttle_iops" > "$cg/io.max" ||
                { note "the kernel refused io.max for $dev: cannot throttle"; return 1; }
        done
        cg_procs=$cg/cgroup.procs
    else
        note "neither cgroup v1 blkio nor cgroup v2 io is available here: cannot throttle"
        return 1
    fi
    if [ -n "$ra_dev" ]; then
        ra_saved=$(cat "$ra_dev/queue/read_ahead_kb")
        ra_file=$ra_dev/queue/read_ahead_kb
        echo "$throttle_ra" > "$ra_file" || { note "cannot set $ra_file"; return 1; }
    else
        note "no readahead setting found for $dir's device: left as it is"
    fi
}

# ---- Measuring -------------------------------------------------------------------------------------

# median: the median of the numbers on standard input (separated by spaces or lines).
median() {
    tr ' ' '\n' | grep . | sort -n |
        awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# table TITLE BYTES REF B3SUM CASE...: one Markdown table from the times in ${times[CASE]}, with
# each command's speed against the cases REF and B3SUM.
table() {
    local title=$1 bytes=$2 ref=$3 b3sum_case=$4 c ref_med b3_med
    shift 4
    ref_med=$(median <<< "${times[$ref]}")
    b3_med=$(median <<< "${times[${b3sum_case}]}")
    echo "### $title"
    echo
    echo "| command | median s | min-max s | MB/s | speed vs ${ref%% *} | speed vs b3sum |"
    echo "|---|---|---|---|---|---|"
    for c in "$@"; do
        tr ' ' '\n' <<< "${times[$c]}" | grep . | sort -n | awk -v c="$c" -v b="$bytes" -v r="$ref_med" -v s="$b3_med" '
            {v[NR] = $1}
            END {
                m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                printf "| `%s` | %.3f | %.3f-%.3f | %.0f | %.2f | %.2f |\n", c, m, v[1], v[NR], b / 1e6 / m, r / m, s / m
            }'
    done
    echo
}

# measure SETUP: every round runs each command once, shuffled; then the tables.
measure() {
    local setup=$1 r c load_before
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    declare -gA times=()
    local all=("${file_cases[@]}" "${tree_cases[@]}")
    for c in "${all[@]}"; do times[$c]=; done
    if [ "$warm" = 1 ]; then
        [ "$file_bytes" -gt 0 ] && cat -- "$big" > /dev/null
        [ "$tree_files" -gt 0 ] && run_case "cat (sorted list)" < /dev/null
    fi
    for r in $(seq "$rounds"); do
        while IFS= read -r c; do
            [ "$warm" = 1 ] || drop_caches
            timed "$c"
            check_case "$c"
            times[$c]+="$elapsed "
            note "$setup round $r/$rounds: $c ${elapsed}s"
        done < <(printf '%s\n' "${all[@]}" | shuf)
    done
    local desc load_after
    load_after=$(cut -d' ' -f1-3 /proc/loadavg)
    if [ "$setup" = throttled ]; then
        desc="throttled to $throttle_iops reads/s and $(human "$throttle_bps")/s, readahead $throttle_ra KiB"
    else
        desc="plain disk, readahead $([ -n "$ra_dev" ] && cat "$ra_dev/queue/read_ahead_kb" || echo '?') KiB"
    fi
    if [ "$file_bytes" -gt 0 ]; then
        local ref="dd iflag=direct bs=16M"
        [ "${file_cases[0]}" = "$ref" ] || ref="cat"
        table "$setup: one file of $(human "$file_bytes") ($desc)" "$file_bytes" "$ref" b3sum "${file_cases[@]}"
    fi
    if [ "$tree_files" -gt 0 ]; then
        table "$setup: $tree_files files of $(human "$tree_min")-$(human "$tree_max") ($desc)" \
            "$tree_bytes" "cat (sorted list)" "b3sum (sorted list)" "${tree_cases[@]}"
    fi
    echo "Load average before the $setup runs: $load_before; after: $load_after."
    echo
}

for setup in $setups; do
    if [ "$setup" = throttled ]; then
        throttle_on || { restore; echo "### throttled: skipped (cannot throttle on this machine)"; echo; continue; }
    fi
    measure "$setup"
    restore
done
