//! One agent per database. Two agents writing one file would interleave their runs, fight
//! over the outbox and prune each other's history; SQLite's own locks only serialise them.
//! The agent holds an exclusive `flock` on a lock file beside the database (`runs.db.lock`)
//! for as long as it runs, with its pid written in it, so a second agent is refused naming
//! the process that holds the database. The kernel drops the lock when the holder exits,
//! however it exits (a SIGKILL included), so a stale lock file never blocks a restart.
//!
//! A lock file rather than SQLite's `locking_mode=EXCLUSIVE`: that one would also lock out
//! the agent's own readers (the HTTP API's connection) and cannot say who holds it.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct DatabaseLock {
    _file: File,
    path: PathBuf,
}

/// Why the database could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "database `{}` is in use by another hostping agent ({holder}, holding `{}`): \
         stop that agent or give this one another --db",
        database.display(),
        lock.display()
    )]
    Held {
        /// The database.
        database: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// `pid 1234`, or why the pid is unknown.
        holder: String,
    },
    /// The lock file cannot be opened, written or locked.
    #[error("cannot lock database `{}` with `{}`: {reason}", database.display(), lock.display())]
    Io {
        /// The database.
        database: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The I/O error.
        reason: std::io::Error,
    },
}

/// The lock file of `database`: the same name with `.lock` added.
pub fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl DatabaseLock {
    /// Takes the exclusive lock of `database` for this process, or says who holds it.
    pub fn acquire(database: &Path) -> Result<DatabaseLock, LockError> {
        let lock = lock_path(database);
        let io = |reason| LockError::Io {
            database: database.to_owned(),
            lock: lock.clone(),
            reason,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(io)?;
        // SAFETY: a valid open descriptor; flock has no memory effects.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::WouldBlock {
                return Err(io(error));
            }
            return Err(LockError::Held {
                database: database.to_owned(),
                holder: holder(&mut file),
                lock,
            });
        }
        // Ours now: say who we are, replacing a previous holder's pid.
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(DatabaseLock {
            _file: file,
            path: lock,
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The holder as its lock file names it.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => match text.trim().parse::<u32>() {
            Ok(pid) => format!("pid {pid}"),
            // It has the lock but has not written its pid yet.
            Err(_) => "pid not yet written".to_owned(),
        },
        Err(e) => format!("pid unreadable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_naming_the_first_and_a_released_lock_is_taken_again() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db");
        let first = DatabaseLock::acquire(&db).unwrap();
        assert_eq!(first.path(), dir.path().join("runs.db.lock"));
        // flock locks belong to the open file: a second open in this process is refused too.
        let e = DatabaseLock::acquire(&db).unwrap_err();
        let pid = std::process::id();
        assert!(
            matches!(&e, LockError::Held { holder, .. } if *holder == format!("pid {pid}")),
            "{e}"
        );
        assert!(e.to_string().contains("runs.db"), "{e}");
        drop(first);
        let again = DatabaseLock::acquire(&db).unwrap();
        let text = std::fs::read_to_string(again.path()).unwrap();
        assert_eq!(text, format!("{pid}\n"));
    }

    #[test]
    fn a_lock_file_that_cannot_be_made_is_an_error_naming_it() {
        let e = DatabaseLock::acquire(Path::new("/nonexistent/dir/runs.db")).unwrap_err();
        assert!(matches!(e, LockError::Io { .. }), "{e}");
        assert!(
            e.to_string().contains("/nonexistent/dir/runs.db.lock"),
            "{e}"
        );
    }
}
