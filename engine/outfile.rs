//! Writing the files a command was asked for, and nothing else. An output path comes
//! from the command line, but what is there may not be what it seems: a device, a FIFO,
//! a symbolic link planted where the result goes, or one of the run's own inputs. A
//! result is written to a fresh temporary file beside it (unique name, created
//! exclusively, never through a link) and renamed into place, so an interrupted write
//! never leaves half a file, and only a regular file (or nothing) is ever replaced.
//!
//! The file gets the mode any new file gets under the process's umask (0666 & !umask,
//! 0644 usually), not the 0600 of a temporary file: results and reports are read by
//! other steps of a CI job, by other users, by a web server.

use std::io::Write as _;
use std::path::Path;

use crate::load::confine::resolve;

/// Why a path may not be written.
pub(crate) fn refuse_target(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Some(format!(
            "{} is a symbolic link; caldera writes only regular files, never through a link",
            crate::diag::display_path(path)
        ));
    }
    if !kind.is_file() {
        return Some(format!(
            "{} is not a regular file (a folder, device or pipe); caldera replaces only regular files",
            crate::diag::display_path(path)
        ));
    }
    None
}

/// Writes `bytes` to `path` atomically: a unique temporary file in the same folder,
/// synced, then renamed over `path`. Folders are created as needed.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(why) = refuse_target(path) {
        return Err(std::io::Error::other(why));
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".caldera-").suffix(".tmp");
    // Created with 0666, which the kernel narrows by the umask, as for any new file.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Whether `a` and `b` name the same file, or `a` lies inside folder `b`.
pub(crate) fn same_or_inside(a: &Path, b: &Path) -> bool {
    resolve(a).starts_with(resolve(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_regular_file_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("sub/result.json");
        write_atomic(&out, b"one").unwrap();
        write_atomic(&out, b"two").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"two");
        // No temporary file left behind.
        assert_eq!(
            std::fs::read_dir(tmp.path().join("sub")).unwrap().count(),
            1
        );
        assert!(write_atomic(tmp.path(), b"x").is_err(), "a folder");
        #[cfg(unix)]
        {
            let target = tmp.path().join("victim.txt");
            std::fs::write(&target, "keep").unwrap();
            let link = tmp.path().join("link.json");
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(write_atomic(&link, b"x").is_err());
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
            assert!(
                std::fs::symlink_metadata(&link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert!(refuse_target(Path::new("/dev/null")).is_some());
        }
    }

    /// The mode of a fresh file under this process's umask, found the way any program
    /// creates one (reading the umask would need `unsafe`).
    #[cfg(unix)]
    fn usual_mode(dir: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        let probe = dir.join("probe");
        std::fs::write(&probe, "").unwrap();
        let mode = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
        std::fs::remove_file(probe).unwrap();
        mode
    }

    #[cfg(unix)]
    #[test]
    fn a_written_file_has_the_mode_of_a_new_file_under_the_umask() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("result.json");
        write_atomic(&out, b"{}").unwrap();
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, usual_mode(tmp.path()), "{mode:o}");
    }

    #[test]
    fn a_planted_temp_link_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim.txt");
        std::fs::write(&victim, "keep").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&victim, tmp.path().join("result.json.tmp")).unwrap();
        write_atomic(&tmp.path().join("result.json"), b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}
