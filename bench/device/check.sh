#!/usr/bin/env bash
# Device check: Static compile thread scaling and mask latency on a quiet machine.
set -u
cd "$(dirname "$0")"  # native/target/dev, staged by bench/device/stage.sh
echo "nproc $(nproc)"; uptime; lscpu | grep -E "Model name|^CPU\(s\)" 
for t in 1 2 4 8 16; do
  echo "== compact, cold class walks, GLRMASK_NUM_THREADS=$t"
  GLRMASK_NUM_THREADS=$t timeout 60 ./compile_profile deepseek.json sch/*.json | grep cold
done
echo "== flexible, 1 thread (bench setting)"
GLRMASK_NUM_THREADS=1 timeout 60 ./compile_profile deepseek.json --flexible --any-order sch/*.json
echo "== mask latency, flexible, Glaiveai2K 40"; FLEXIBLE=1 timeout 120 ./schema_latency deepseek.json Glaiveai2K.jsonl.gz 40 | tail -3
echo "== mask latency, flexible, Github_easy 20"; FLEXIBLE=1 timeout 120 ./schema_latency deepseek.json Github_easy.jsonl.gz 20 | tail -3
echo "== mask latency, compact, Glaiveai2K 40"; timeout 120 ./schema_latency deepseek.json Glaiveai2K.jsonl.gz 40 | tail -3
