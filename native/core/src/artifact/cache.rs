//! The persistent compile cache (a session's `persistent_dir`,
//! `GLRMASK_CACHE_DIR` for the default session; off by default): the
//! processes of one deployment compile each grammar once and load it after.
//!
//! An entry is an artifact saved with the vocabulary left out (the caller
//! has it; its fingerprint is part of the key), named by a SHA-256 over
//! everything the compiled result depends on: core and format version, the
//! grammar IR, the vocabulary fingerprint, the end tokens, the optimization
//! and the limits. Writers write a private temporary file and rename it into
//! place, so concurrent processes never see a partial entry; the last
//! rename wins and every writer's entry is complete. An entry that fails to
//! load (from a crash, a disk error, a hand edit) is removed and recompiled.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::constraint::{Constraint, Optimization};
use crate::error::{Error, ErrorKind, Result};
use crate::grammar::Grammar;
use crate::limits::Limits;
use crate::mask::VocabCaches;
use crate::vocab::Vocab;

#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    pub fn new(dir: PathBuf) -> CompileCache {
        CompileCache { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry key: hex SHA-256 of what the compiled constraint depends on.
    pub fn key(
        grammar: &Grammar,
        vocab: &Vocab,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: &Limits,
    ) -> Result<String> {
        let ir = postcard::to_stdvec(grammar).map_err(|e| Error::internal(format!("serializing a grammar: {e}")))?;
        let mut h = Sha256::new();
        h.update(super::CORE_VERSION.as_bytes());
        h.update(super::FORMAT_VERSION.to_le_bytes());
        h.update((ir.len() as u64).to_le_bytes());
        h.update(&ir);
        h.update(vocab.fingerprint().to_le_bytes());
        let mut end = end_tokens.to_vec();
        end.sort_unstable();
        end.dedup();
        h.update((end.len() as u64).to_le_bytes());
        end.iter().for_each(|t| h.update(t.to_le_bytes()));
        h.update(format!("{optimization:?}\n{limits:?}").as_bytes());
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.glrmask"))
    }

    /// The cached constraint for `key`, if there is a loadable entry.
    /// It shares `caches` (a session's, over `vocab`).
    pub fn get(&self, key: &str, vocab: &Arc<Vocab>, caches: &Arc<VocabCaches>) -> Option<Arc<Constraint>> {
        let path = self.path(key);
        let data = std::fs::read(&path).ok()?;
        match super::load_sharing(&data, Some(vocab.clone()), Some(caches.clone())) {
            Ok(c) => Some(c),
            Err(_) => {
                // Unloadable: drop it so the recompiled result replaces it.
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Store `c` under `key` (atomically: temporary file, then rename).
    pub fn put(&self, key: &str, c: &Constraint) -> Result<()> {
        let io = |what: &str, e: std::io::Error| {
            Error::new(ErrorKind::Artifact, "cache_io", format!("compile cache {}: {what}: {e}", self.dir.display()))
        };
        let data = super::save(c, true)?;
        std::fs::create_dir_all(&self.dir).map_err(|e| io("creating the directory", e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| io("creating a temporary file", e))?;
        tmp.write_all(&data).map_err(|e| io("writing an entry", e))?;
        tmp.as_file().sync_all().map_err(|e| io("syncing an entry", e))?;
        tmp.persist(self.path(key)).map_err(|e| io("renaming an entry into place", e.error))?;
        Ok(())
    }
}
