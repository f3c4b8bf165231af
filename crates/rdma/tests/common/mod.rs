//! A writable copy of a fixture tree, for tests that break one file of it.
#![allow(dead_code)] // each test binary uses its own part of this module

use std::fs;
use std::path::{Path, PathBuf};

/// A copy of a fixture tree under the target's temporary folder, removed on drop.
pub struct TempTree(pub PathBuf);

impl TempTree {
    /// Copies `from` (symlinks as symlinks) for the test `label`. The path is canonical, so
    /// errors name files below it as discovery resolves them.
    pub fn copy_of(from: &Path, label: &str) -> TempTree {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("tree-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        copy_tree(from, &dir);
        TempTree(fs::canonicalize(&dir).unwrap())
    }

    /// A path below the copy.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(entry.path()).unwrap(), &dest).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), &dest).unwrap();
        }
    }
}
