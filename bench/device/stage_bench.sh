#!/usr/bin/env bash
# Stage the Python benchmark (bench/run.py, peers included) for the lent quiet machine in .devbench/ (git-ignored
# through .git/info/exclude; that machine has no network and Python 3.12): glrmask's abi3 wheel built here, the
# peers' cp312 wheels and the ones they need that its image lacks, and the data the suites read, packed.
# Then run there, carrying .devbench (the copy there may have no .git: name the commit for the results' headers):
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .devbench/whl/*.whl \
#     && PYTHONPATH=/tmp/site GLRMASK_SOURCE_COMMIT=<commit here> bash bench/device/bench.sh RUN...
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
D=.devbench
rm -rf "$D" && mkdir -p "$D/whl"
grep -qx '/.devbench/' .git/info/exclude 2>/dev/null || echo '/.devbench/' >>.git/info/exclude
maturin build --release -m native/python/Cargo.toml -o "$D/whl"
platforms=()
for p in manylinux_2_17 manylinux2014 manylinux_2_24 manylinux_2_27 manylinux_2_28 manylinux_2_31 manylinux_2_34; do
  platforms+=(--platform "${p}_x86_64")
done
# The versions bench/requirements.txt pins; xgrammar's own needs that the image (torch, transformers, triton) lacks.
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d "$D/whl" llguidance==1.9.1 xgrammar==0.2.9 outlines-core==0.2.14 \
  apache-tvm-ffi pydantic pydantic-core annotated-types typing-inspection
# Only what the suites read: the ten JSONSchemaBench subsets, two tokenizers, Lark's JSON inputs and grammar,
# and the three JSON-Schema-Test-Suite files of the CFG suite.
tar -C "$SHARED" -cJf "$D/shared.tar.xz" \
  data/jsonschemabench/Github_{trivial,easy,medium,hard,ultra}.jsonl.gz \
  data/jsonschemabench/{Glaiveai2K,Kubernetes,Snowplow,JsonSchemaStore,WashingtonPost}.jsonl.gz \
  data/tokenizers/deepseek_v3_tokenizer.json data/tokenizers/o200k_base.tiktoken \
  data/conformance/lark data/conformance/json-schema-test-suite/tests/draft2020-12/{unevaluatedProperties,ref,dynamicRef}.json
du -sh "$D"/*
