//! Temporaries being written now (a report's temporary file, an import's temporary folder), so
//! that a process ending on Ctrl-C or SIGTERM, whose destructors will not run, removes them
//! first: an interrupted run leaves no half-written file or folder behind.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The registered paths.
static IN_FLIGHT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn list() -> MutexGuard<'static, Vec<PathBuf>> {
    // The list stays whole whatever a writer did while holding it.
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// A registered temporary: unregistered as it drops (the owner then removed it, or put it in
/// place).
#[must_use = "the path is unregistered as this drops"]
pub struct Registered(PathBuf);

/// Create a temporary with `create` and register what it returns in one step, so that a signal
/// handled between the two cannot leave it behind.
pub fn create<T, E>(
    create: impl FnOnce() -> Result<T, E>,
    path: impl Fn(&T) -> &Path,
) -> Result<(T, Registered), E> {
    let mut list = list();
    let made = create()?;
    let p = path(&made).to_path_buf();
    list.push(p.clone());
    Ok((made, Registered(p)))
}

/// Register `path`, which this process made and may remove on a signal.
pub fn register(path: &Path) -> Registered {
    list().push(path.to_path_buf());
    Registered(path.to_path_buf())
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut list = list();
        if let Some(i) = list.iter().position(|p| p == &self.0) {
            list.remove(i);
        }
    }
}

/// Remove every registered temporary, file or folder: for a process about to exit on a
/// signal. The list stays locked afterwards, so that no writer registers another before the
/// process exits.
pub fn remove_all() {
    let list = list();
    remove(&list);
    std::mem::forget(list);
}

/// Remove each of `paths`, file or folder. A folder still being filled by another thread is
/// removed again until it is gone (a few tries).
fn remove(paths: &[PathBuf]) {
    for path in paths {
        for _ in 0..20 {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                break;
            };
            let _ = if meta.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
        }
    }
}

/// Tests of interruption need a write that is still in progress when their signal arrives:
/// `RAGEVAL_TEST_HOLD_TEMPORARY_MS` keeps each new temporary (a report's file, an import's
/// folder) that long before it is filled. Unset (always, outside tests) it costs one
/// environment lookup.
pub fn hold_for_tests() {
    if let Some(ms) = std::env::var("RAGEVAL_TEST_HOLD_TEMPORARY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_paths_are_listed_until_they_drop_and_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(".rageval-import-x");
        let (made, registered) = create(
            || std::fs::create_dir_all(folder.join("docs")).map(|()| folder.clone()),
            |p| p,
        )
        .unwrap();
        std::fs::write(made.join("docs/a.md"), "x").unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "y").unwrap();
        let other = register(&file);
        assert!(list().contains(&folder) && list().contains(&file));
        drop(registered);
        assert!(!list().contains(&folder));
        drop(other);
        remove(&[folder.clone(), file.clone(), dir.path().join("never")]);
        assert!(!folder.exists() && !file.exists());
        assert!(dir.path().exists());
    }
}
