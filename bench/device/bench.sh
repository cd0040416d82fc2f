#!/usr/bin/env bash
# On the lent quiet machine (staged by bench/device/stage_bench.sh): bench/run.py as parallel runs, each one
# single-threaded process pinned to a physical core of its own (cpu 0 left to the system), so that the
# machine's cores give the one-thread figures of one long run within its 10-minute call. Each argument is one
# run, "NAME:SUITES:ENGINES[:SUBSETS]"; each run ends within RUN_LIMIT seconds (default 500) and is packed into
# $OUT/NAME.tgz (its folder and log) when it ends. At most 8 runs: 8 files come back from $OUT.
set -u
cd "$(dirname "$0")/../.."
# bench/glrbench/workloads.py reads ../shared/data, else /work/shared/data.
shared=../shared
mkdir -p "$shared" 2>/dev/null || { shared=/work/shared && mkdir -p "$shared"; }
tar -C "$shared" -xJf .devbench/shared.tar.xz || exit 1
export PYTHONUNBUFFERED=1
echo "nproc $(nproc)"; uptime; lscpu | grep -E "Model name|^CPU\(s\)|Thread|L3"
python3 -P -c "import glrmask, llguidance, xgrammar, outlines_core; print('imports ok')" || exit 1
# One cpu per physical core: the first of each sibling list.
mapfile -t cores < <(for c in /sys/devices/system/cpu/cpu[0-9]*; do
  f=$c/topology/thread_siblings_list; [ -r "$f" ] && cut -d, -f1 "$f" | cut -d- -f1; done | sort -un)
[ "${#cores[@]}" -gt 1 ] || mapfile -t cores < <(seq 0 $(($(nproc) - 1)))
echo "cores: ${cores[*]}"
R=$(mktemp -d)
i=1
for spec in "$@"; do
  IFS=: read -r name suites engines subsets <<<"$spec"
  core=${cores[$((i % ${#cores[@]}))]}
  (
    timeout "${RUN_LIMIT:-500}" taskset -c "$core" python3 bench/run.py --suite "$suites" --engines "$engines" \
      ${subsets:+--subsets "$subsets"} --out "$R/$name" >"$R/$name.log" 2>&1
    echo "exit $?" >>"$R/$name.log"
    tar -C "$R" -czf "$OUT/$name.tgz" "$name.log" $([ -d "$R/$name" ] && echo "$name")
  ) &
  echo "run $name on cpu $core: --suite $suites --engines $engines ${subsets:+--subsets $subsets}"
  i=$((i + 1))
done
while [ -n "$(jobs -r)" ]; do
  sleep 30
  for spec in "$@"; do n=${spec%%:*}; echo "$(date +%T) $n: $(tail -n1 "$R/$n.log" 2>/dev/null | cut -c1-140)"; done
done
wait
ls -la "$OUT"
