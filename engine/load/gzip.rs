//! Gzip-compressed inputs: `*.json.gz` results, ground truth and named inputs are read
//! as if they were the `*.json` they hold.
//!
//! A compressed file is small on disk and may be huge once inflated (a "gzip bomb": a
//! few hundred kilobytes that inflate to gigabytes). So inflating stops at
//! [`MAX_INFLATED_BYTES`], and a file over it is an error naming the file and the limit,
//! before the memory is taken. Concatenated gzip members (what `cat a.gz b.gz` gives)
//! are read as one stream, as `gzip -d` reads them.

use std::io::Read;
use std::path::Path;

use crate::diag::{Code, Diagnostic};

/// The most bytes one compressed input may inflate to (256 MiB): far above any tool
/// output caldera judges (the bundled suites' largest is a few hundred kilobytes), far
/// below what would exhaust a CI machine's memory.
pub(crate) const MAX_INFLATED_BYTES: u64 = 256 << 20;

/// The suffix of a compressed JSON document.
const SUFFIX: &str = ".json.gz";

/// Whether `path` names a compressed JSON document (`*.json.gz`).
pub(crate) fn is_json_gz(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.len() > SUFFIX.len() && n.ends_with(SUFFIX))
}

/// The name of a document file without `.json` or `.json.gz`: `scan.json.gz` is `scan`,
/// as `scan.json` is.
pub(crate) fn document_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.strip_suffix(SUFFIX) {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// Inflates the gzip file at `path` into `bytes` (cleared first), at most `limit` bytes.
pub(crate) fn read_into(path: &Path, bytes: &mut Vec<u8>, limit: u64) -> Result<(), Diagnostic> {
    bytes.clear();
    let file = std::fs::File::open(path)
        .map_err(|e| Diagnostic::error(Code::Io, format!("cannot read file: {e}")).in_file(path))?;
    // One byte past the limit tells "exactly at the limit" from "over it".
    let mut inflated = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))
        .take(limit.saturating_add(1));
    inflated.read_to_end(bytes).map_err(|e| {
        Diagnostic::error(Code::Io, format!("cannot read gzip file: {e}"))
            .in_file(path)
            .help("a `.json.gz` input must be gzip-compressed JSON (`gzip -t FILE` checks it)")
    })?;
    if bytes.len() as u64 > limit {
        bytes.clear();
        bytes.shrink_to_fit();
        return Err(Diagnostic::error(
            Code::Io,
            format!(
                "gzip file inflates to more than {} MiB, the limit for a compressed input",
                limit >> 20
            ),
        )
        .in_file(path)
        .help(
            "decompress it yourself if it is a genuine input; caldera stops here to bound memory",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).expect("compress");
        enc.finish().expect("finish")
    }

    #[test]
    fn stems_drop_json_and_json_gz() {
        assert_eq!(document_stem(Path::new("d/scan.json.gz")), "scan");
        assert_eq!(document_stem(Path::new("d/scan.json")), "scan");
        assert_eq!(document_stem(Path::new("d/.json.gz")), ".json");
        assert!(is_json_gz(Path::new("a.json.gz")));
        assert!(!is_json_gz(Path::new("a.gz")));
        assert!(!is_json_gz(Path::new(".json.gz")));
    }

    #[test]
    fn inflating_stops_one_byte_past_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("zeros.json.gz");
        std::fs::write(&path, gzip(&[b' '; 4096])).expect("write");
        let mut bytes = Vec::new();
        read_into(&path, &mut bytes, 4096).expect("exactly at the limit");
        assert_eq!(bytes.len(), 4096);
        let err = read_into(&path, &mut bytes, 4095).expect_err("over the limit");
        assert!(
            err.message.contains("inflates to more than"),
            "{}",
            err.message
        );
        assert!(bytes.is_empty());
    }

    #[test]
    fn concatenated_members_are_one_stream() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("two.json.gz");
        let mut data = gzip(b"[1,");
        data.extend(gzip(b"2]"));
        std::fs::write(&path, data).expect("write");
        let mut bytes = Vec::new();
        read_into(&path, &mut bytes, 1 << 20).expect("reads");
        assert_eq!(bytes, b"[1,2]");
    }
}
