//! Cache writes off the request path.
//!
//! A verdict is stored with a temporary file, an fsync and a rename. The fsync is the
//! slow part (about 5 ms on ext4), and done inside the task that made the call it held
//! the call's concurrency slot and a runtime worker. Here a call only queues the
//! entry; a few threads of the writer's own write it. Concurrent fsyncs share journal
//! commits (one at a time: 4.8 ms per entry; eight threads: 0.25 ms per entry, on the
//! machine this was measured on), so eight threads keep up with any call rate a
//! provider allows. The renamed file is visible at once, so a run killed halfway and
//! started again still finds every verdict written; [`Writer::flush`] waits for the
//! queue and syncs the directories, which makes the renames durable too.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;

/// Cache I/O failures (a corrupt entry is a miss, not an error).
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading or writing the cache directory failed.
    #[error("cache {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Threads that write entries.
pub const WRITER_THREADS: usize = 8;

struct Job {
    path: PathBuf,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Progress {
    /// Entries queued and not yet written.
    pending: usize,
    /// Directories that received an entry since the last flush.
    dirs: BTreeSet<PathBuf>,
    /// Failed writes since the last flush.
    errors: Vec<CacheError>,
    /// Entries written since the writer started.
    written: u64,
}

#[derive(Default)]
struct Shared {
    progress: Mutex<Progress>,
    idle: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Writes files on its own threads; see the module docs.
pub struct Writer {
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("written", &self.shared.lock().written)
            .finish()
    }
}

impl Writer {
    /// A writer with `threads` threads (at least one). Should no thread start, entries
    /// are written by the caller instead.
    pub fn new(threads: usize) -> Writer {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let shared = Arc::new(Shared::default());
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let (receiver, shared) = (receiver.clone(), shared.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("cache-writer-{i}"))
                .spawn(move || work(&receiver, &shared));
            if let Ok(handle) = spawned {
                handles.push(handle);
            }
        }
        Writer {
            sender: Mutex::new((!handles.is_empty()).then_some(sender)),
            shared,
            threads: Mutex::new(handles),
        }
    }

    /// Queues `bytes` to be written to `path` (whole, or not at all).
    pub fn enqueue(&self, path: PathBuf, bytes: Vec<u8>) {
        self.shared.lock().pending += 1;
        let job = Job { path, bytes };
        let unsent = match &*self.sender.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(sender) => sender.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        if let Some(job) = unsent {
            finish(&self.shared, &job.path, write_file(&job.path, &job.bytes));
        }
    }

    /// Waits until every queued entry is written, then syncs the directories they went
    /// to. Returns the writes that failed since the last flush.
    pub fn flush(&self) -> Vec<CacheError> {
        let mut progress = self.shared.lock();
        while progress.pending > 0 {
            progress = self
                .shared
                .idle
                .wait(progress)
                .unwrap_or_else(|p| p.into_inner());
        }
        let dirs = std::mem::take(&mut progress.dirs);
        let mut errors = std::mem::take(&mut progress.errors);
        drop(progress);
        for dir in dirs {
            if let Err(source) = sync_dir(&dir) {
                errors.push(CacheError::Io { path: dir, source });
            }
        }
        errors
    }

    /// Entries written so far.
    pub fn written(&self) -> u64 {
        self.shared.lock().written
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        for e in self.flush() {
            log::warn!("{e}");
        }
        // Closing the channel ends the threads.
        self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|p| p.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

fn work(receiver: &Mutex<mpsc::Receiver<Job>>, shared: &Shared) {
    loop {
        let job = receiver.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok(job) = job else { return };
        let result = write_file(&job.path, &job.bytes);
        finish(shared, &job.path, result);
    }
}

fn finish(shared: &Shared, path: &Path, result: Result<(), CacheError>) {
    let mut progress = shared.lock();
    progress.pending = progress.pending.saturating_sub(1);
    match result {
        Ok(()) => {
            progress.written += 1;
            if let Some(dir) = path.parent() {
                progress.dirs.insert(dir.to_path_buf());
            }
        }
        Err(e) => progress.errors.push(e),
    }
    if progress.pending == 0 {
        shared.idle.notify_all();
    }
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` through a temporary file in the same directory (created if
/// needed), synced before the rename, so a reader sees the whole file or none.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| CacheError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        CacheError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Makes the renames into `dir` durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_waits_for_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::new(3);
        for i in 0..50 {
            let path = dir.path().join(format!("s{}/e{i}.json", i % 4));
            writer.enqueue(path, format!("{{\"i\": {i}}}").into_bytes());
        }
        assert!(writer.flush().is_empty());
        assert_eq!(writer.written(), 50);
        for i in 0..50 {
            let text =
                std::fs::read_to_string(dir.path().join(format!("s{}/e{i}.json", i % 4))).unwrap();
            assert_eq!(text, format!("{{\"i\": {i}}}"));
        }
        // No temporary file is left behind.
        for shard in std::fs::read_dir(dir.path()).unwrap() {
            for f in std::fs::read_dir(shard.unwrap().path()).unwrap() {
                let name = f.unwrap().file_name();
                assert!(!name.to_string_lossy().starts_with('.'), "{name:?}");
            }
        }
    }

    #[test]
    fn failed_writes_are_reported_by_flush() {
        let dir = tempfile::tempdir().unwrap();
        // A file where a directory should be: the write cannot create its shard.
        std::fs::write(dir.path().join("blocked"), "").unwrap();
        let writer = Writer::new(1);
        writer.enqueue(dir.path().join("blocked/e.json"), b"{}".to_vec());
        let errors = writer.flush();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(writer.flush().is_empty(), "reported once");
    }
}
