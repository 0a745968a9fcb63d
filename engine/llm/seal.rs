//! Sealing the state files a `--batch` run leaves for the run that resumes it.
//!
//! A state file lives under the cache folder, which is in the checkout by default, so
//! it can arrive in a pull request. A resumed state decides which batch is polled, what
//! its requests already cost, and how often they were sent, so only states this user's
//! runs wrote on this machine are resumed: each is sealed with an HMAC-SHA256 under a
//! random key kept outside the checkout (`$XDG_STATE_HOME/caldera/batch-state.key`, else
//! `~/.local/state/caldera/batch-state.key`, created on first use, readable by its owner
//! only). A state whose seal does not match is not used, and says so. The key is never
//! written into the checkout, the result or a log.

use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::Sha256;

use super::bounded::read_regular_file;

/// The key that seals batch states.
#[derive(Clone)]
pub struct StateKey([u8; KEY_BYTES]);

const KEY_BYTES: usize = 32;

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(***)")
    }
}

/// Where the key is kept unless told otherwise: the user's state folder, never the
/// checkout. `None` when the environment names no home.
pub fn default_key_file() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let state_home = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local").join("state")))?;
    Some(state_home.join("caldera").join("batch-state.key"))
}

impl StateKey {
    /// A key made for one use (tests, or a run that keeps no state).
    pub fn random() -> StateKey {
        let mut bytes = [0u8; KEY_BYTES];
        rand::rng().fill(&mut bytes);
        StateKey(bytes)
    }

    /// The key in `path`, made there first if there is none. The file is created
    /// whole or not at all (written aside, then linked into place without replacing
    /// one a concurrent run made first), readable by its owner only.
    pub fn load_or_create(path: &Path) -> Result<StateKey, String> {
        let shown = path.display();
        match StateKey::load(path) {
            Ok(Some(key)) => return Ok(key),
            Ok(None) => {}
            Err(why) => return Err(format!("the batch state key {shown} {why}")),
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot create the folder of {shown}: {e}"))?;
        let key = StateKey::random();
        let mut aside = tempfile::NamedTempFile::new_in(folder)
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        std::io::Write::write_all(&mut aside, format!("{}\n", hex::encode(key.0)).as_bytes())
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        match aside.persist_noclobber(path) {
            Ok(_) => Ok(key),
            // Another run made it first: theirs is the key.
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => StateKey::load(path)
                .map_err(|why| format!("the batch state key {shown} {why}"))?
                .ok_or_else(|| format!("the batch state key {shown} vanished")),
            Err(e) => Err(format!("cannot write {shown}: {}", e.error)),
        }
    }

    /// The key stored in `path`; `None` when there is no file.
    fn load(path: &Path) -> Result<Option<StateKey>, String> {
        let bytes = match read_regular_file(path, 256) {
            Ok(bytes) => bytes,
            Err(super::bounded::Refusal::Missing) => return Ok(None),
            Err(refusal) => return Err(format!("cannot be used: {refusal}")),
        };
        let text = String::from_utf8_lossy(&bytes);
        let decoded = hex::decode(text.trim()).ok();
        let key = decoded
            .and_then(|d| <[u8; KEY_BYTES]>::try_from(d.as_slice()).ok())
            .ok_or_else(|| format!("does not hold {KEY_BYTES} bytes in hex; remove it"))?;
        Ok(Some(StateKey(key)))
    }

    /// The seal of `message`, in hex.
    pub fn seal(&self, message: &[u8]) -> String {
        hex::encode(mac(&self.0, message).finalize().into_bytes())
    }

    /// Whether `seal` is the seal of `message`, compared in constant time.
    pub fn verify(&self, message: &[u8], seal: &str) -> bool {
        hex::decode(seal).is_ok_and(|tag| mac(&self.0, message).verify_slice(&tag).is_ok())
    }
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`, ready to finalise or verify.
fn mac(key: &[u8], message: &[u8]) -> Hmac<Sha256> {
    // Any key length is valid for HMAC; the error case cannot happen.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| <Hmac<Sha256> as KeyInit>::new(&Default::default()));
    mac.update(message);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
        mac(key, message).finalize().into_bytes().into()
    }

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_seal_holds_only_under_its_key_and_for_its_message() {
        let key = StateKey::random();
        let seal = key.seal(b"state");
        assert!(key.verify(b"state", &seal));
        assert!(!key.verify(b"state!", &seal));
        assert!(!StateKey::random().verify(b"state", &seal));
        assert!(!key.verify(b"state", ""));
    }

    #[test]
    fn the_key_file_is_made_once_private_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("caldera").join("batch-state.key");
        let made = StateKey::load_or_create(&path).unwrap();
        let again = StateKey::load_or_create(&path).unwrap();
        assert_eq!(made.0, again.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        std::fs::write(&path, "not hex").unwrap();
        let err = StateKey::load_or_create(&path).unwrap_err();
        assert!(err.contains("does not hold 32 bytes in hex"), "{err}");
    }
}
