#!/usr/bin/env bash
# Stage the device check (bench/device/check.sh) in native/target/dev: the two Rust examples, built here
# (the device machine has no network for crates), the DeepSeek tokenizer, two JSONSchemaBench subsets and
# four schema files. Then run it there with the working tree, carrying native/target/dev:
#   bash native/target/dev/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-data}  # the checkout's data/ (tokenizers: python scripts/fetch_data.py)
(cd native && cargo build --release -p glrmask-core --example compile_profile --example schema_latency)
T=${CARGO_TARGET_DIR:-native/target}/release/examples
D=native/target/dev
mkdir -p "$D/sch"
cp "$T/compile_profile" "$T/schema_latency" bench/device/check.sh "$D/"
cp "$SHARED/tokenizers/deepseek_v3_tokenizer.json" "$D/deepseek.json"
cp "$SHARED/jsonschemabench/Glaiveai2K.jsonl.gz" "$SHARED/jsonschemabench/Github_easy.jsonl.gz" "$D/"
python3 - "$SHARED/jsonschemabench" "$D/sch" <<'PY'
import gzip, json, sys
src, out = sys.argv[1], sys.argv[2]
want = {"Github_easy---o17393", "Glaiveai2K---create_invoice_f3e816c7", "Kubernetes---kb_107_Normalized",
        "Snowplow---sp_212_Normalized"}
for subset in ["Github_easy", "Glaiveai2K", "Kubernetes", "Snowplow"]:
    for line in gzip.open(f"{src}/{subset}.jsonl.gz", "rt"):
        row = json.loads(line)
        if row["id"] in want:
            open(f"{out}/{row['id'].replace('---', '_')}.json", "w").write(json.dumps(row["schema"]))
PY
du -sh "$D"
