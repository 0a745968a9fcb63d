//! Two result documents compared as runs that should agree (a merge and a single run, a
//! streamed and an in-memory run): equal but for the keys that name the run itself.

/// Asserts two result documents are the same but for the `may_differ` top-level keys
/// (run id, timestamps and the like); on a difference, names the first line that
/// differs, labelled `left.0` and `right.0`.
pub fn assert_same_result(
    what: &str,
    left: (&str, &std::path::Path),
    right: (&str, &std::path::Path),
    may_differ: &[&str],
) {
    let comparable = |path: &std::path::Path| {
        let mut doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("result written"))
                .expect("result is JSON");
        let obj = doc.as_object_mut().expect("result is an object");
        for key in may_differ {
            obj.remove(*key);
        }
        serde_json::to_string_pretty(&doc).expect("serialisable")
    };
    let (a, b) = (comparable(left.1), comparable(right.1));
    if a != b {
        let at = a
            .lines()
            .zip(b.lines())
            .position(|(x, y)| x != y)
            .unwrap_or(0);
        panic!(
            "{what}: {} result differs from the {} one at line {}:\n  {}: {}\n  {}: {}",
            right.0,
            left.0,
            at + 1,
            left.0,
            a.lines().nth(at).unwrap_or(""),
            right.0,
            b.lines().nth(at).unwrap_or("")
        );
    }
}
