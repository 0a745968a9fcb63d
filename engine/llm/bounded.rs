//! Reading the files a run keeps for itself (cache entries, batch states) without
//! trusting what is found there.
//!
//! Those files live under the cache folder, which is in the checkout by default, so a
//! pull request can put anything there: a FIFO (an `open` or `read` that never returns),
//! a link to `/dev/zero` (a read that fills memory) or to a file outside the project.
//! Only a regular file is read, never through a symbolic link, and only up to a cap;
//! anything else is a [`Refusal`] that says why, which the caller reports as a miss.
//! The checks are made on the opened file as well as on the path, so a file swapped
//! between the two cannot slip through, and the open itself never blocks on a FIFO.

use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Nothing at the path.
    #[error("it does not exist")]
    Missing,
    /// Something other than a regular file: a link, a FIFO, a device, a folder.
    #[error("it is {0}, not a regular file; it was not read")]
    NotRegular(&'static str),
    /// A regular file above the cap.
    #[error("it is {size} bytes or more, above the {cap}-byte limit; it was not read")]
    TooLarge {
        /// The size found (at least).
        size: u64,
        /// The cap.
        cap: u64,
    },
    /// The file could not be opened or read.
    #[error("it cannot be read: {0}")]
    Io(#[from] std::io::Error),
}

/// The whole of the regular file at `path`, at most `cap` bytes; see the module docs.
pub fn read_regular_file(path: &Path, cap: u64) -> Result<Vec<u8>, Refusal> {
    let found = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
        Err(e) => return Err(Refusal::Io(e)),
    };
    check(&found, cap)?;
    let file = open_no_follow(path)?;
    let opened = file.metadata()?;
    check(&opened, cap)?;
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    // One byte past the cap tells a file that grew since the check.
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(Refusal::TooLarge {
            size: bytes.len() as u64,
            cap,
        });
    }
    Ok(bytes)
}

/// A regular file no larger than `cap`.
fn check(meta: &std::fs::Metadata, cap: u64) -> Result<(), Refusal> {
    let kind = meta.file_type();
    if !kind.is_file() {
        return Err(Refusal::NotRegular(describe(kind)));
    }
    if meta.len() > cap {
        return Err(Refusal::TooLarge {
            size: meta.len(),
            cap,
        });
    }
    Ok(())
}

/// Opens for reading, refusing a symbolic link as the last component and never
/// waiting on a FIFO (`O_NOFOLLOW | O_NONBLOCK`; reads of a regular file ignore the
/// latter).
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits() as i32);
    }
    options.open(path)
}

/// What a file that is not a regular file is, for the message.
fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_symlink() {
        return "a symbolic link";
    }
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(read_regular_file(&path, 2).unwrap(), b"{}");
        assert!(matches!(
            read_regular_file(&path, 1),
            Err(Refusal::TooLarge { size: 2, cap: 1 })
        ));
        assert!(matches!(
            read_regular_file(&dir.path().join("none"), 9),
            Err(Refusal::Missing)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn links_fifos_devices_and_folders_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.json");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let linked = dir.path().join("linked.json");
        std::fs::write(dir.path().join("real"), b"{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), &linked).unwrap();
        let cases = [
            (fifo.as_path(), "a FIFO"),
            (zero.as_path(), "a symbolic link"),
            (linked.as_path(), "a symbolic link"),
            (Path::new("/dev/zero"), "a device"),
            (dir.path(), "a folder"),
        ];
        for (path, kind) in cases {
            match read_regular_file(path, 1 << 20) {
                Err(Refusal::NotRegular(found)) => assert_eq!(found, kind, "{path:?}"),
                other => panic!("{path:?}: {other:?}"),
            }
        }
    }
}
