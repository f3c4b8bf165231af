//! Writing what `hostping fabric sim` leaves in its `--out-dir` folder. What the files hold (the
//! run summary that `merge` and the Slurm sweeps read, the per-port CSV, the file names) is
//! the fabric crate's contract, `fabric::summary`; this module only puts it on disk.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Writes `name` under `dir`, naming the file in the error.
pub fn write(dir: &Path, name: &str, contents: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, contents).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(path)
}
