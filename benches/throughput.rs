//! Heuristic throughput of the whole trivy suite against plain serde_json parsing of the
//! same bytes. Not a test: run it with
//!
//! ```sh
//! cargo bench --bench throughput -- [--repos N] [--vulns-per-repo M] [--dir PATH]
//! ```
//!
//! It writes N synthetic trivy outputs (flat shape, every field the judges read) plus
//! ground truth into `target/bench/trivy-N-M/` (reused when present), then measures:
//! 1. plain `serde_json::from_slice::<serde_json::Value>` over every file, one thread;
//! 2. the same bytes parsed into caldera's `Doc`, one thread;
//! 3. the full heuristic run of `judges.d/trivy` by the release binary in a fresh
//!    process (load, parse on all cores, every judge, the result written), wall time;
//!
//! It prints MB/s for each and the ratio of (3) to (1).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The binary's allocator, so the run measured here is the run users get; the plain
/// parse baseline uses it too.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    repos: usize,
    vulns: usize,
    dir: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        repos: 200,
        vulns: 2000,
        dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--repos" => a.repos = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.repos),
            "--vulns-per-repo" => {
                a.vulns = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.vulns)
            }
            "--dir" => a.dir = it.next().map(PathBuf::from),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

/// A small deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const SEVERITIES: [&str; 5] = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "UNKNOWN"];
const TYPES: [&str; 5] = ["npm", "pip", "gomod", "pom", "dotnet-deps"];

fn generate(dir: &Path, repos: usize, vulns: usize) -> std::io::Result<()> {
    let out = dir.join("outputs");
    let exp = dir.join("expected");
    std::fs::create_dir_all(&out)?;
    std::fs::create_dir_all(&exp)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for r in 0..repos {
        let id = format!("synthetic-{r:05}");
        let mut counts = [0usize; 5];
        let mut list = Vec::with_capacity(vulns);
        for v in 0..vulns {
            let s = rng.below(5) as usize;
            counts[s] += 1;
            let cvss = if s == 4 {
                serde_json::Value::Null
            } else {
                serde_json::json!((rng.below(100) as f64) / 10.0)
            };
            let ty = TYPES[rng.below(5) as usize];
            list.push(serde_json::json!({
                "id": format!("CVE-20{}-{:05}", 10 + rng.below(15), v + r),
                "package": format!("pkg-{}", rng.below(400)),
                "severity": SEVERITIES[s],
                "installed_version": format!("{}.{}.{}", rng.below(5), rng.below(20), rng.below(30)),
                "fixed_version": if rng.below(4) == 0 { serde_json::Value::Null } else { serde_json::json!("9.9.9") },
                "cvss_score": cvss,
                "title": "synthetic finding generated for throughput measurement",
                "description": "A long enough description to make the document size realistic for a scanner that copies advisory text into its report.",
                "published_date": "2023-04-01T00:00:00Z",
                "age_days": rng.below(2000),
                "fix_available": true,
                "target": format!("{ty}/lockfile"),
                "target_type": ty,
            }));
        }
        let packages: Vec<serde_json::Value> = (0..40)
            .map(|p| {
                serde_json::json!({
                    "package": format!("pkg-{p}"), "package_type": TYPES[p % 5],
                    "installed_version": "1.0.0", "latest_version": "2.0.0",
                    "major_versions_behind": 1, "minor_versions_behind": 0, "patch_versions_behind": 0,
                    "days_since_latest": 100, "vulnerability_count": 1,
                    "is_outdated": p % 3 == 0, "has_vulnerability": true
                })
            })
            .collect();
        let outdated = packages.iter().filter(|p| p["is_outdated"] == true).count();
        let doc = serde_json::json!({
            "id": id,
            "summary": {
                "total_vulnerabilities": vulns, "critical_count": counts[0], "high_count": counts[1],
                "medium_count": counts[2], "low_count": counts[3], "unknown_count": counts[4],
                "fix_available_count": vulns, "fix_available_pct": 75.0, "dependency_count": 400,
                "oldest_cve_days": 2000, "targets_scanned": 5
            },
            "vulnerabilities": list,
            "targets": TYPES.iter().map(|t| serde_json::json!({"path": format!("{t}/lockfile"), "type": t, "vulnerability_count": vulns / 5, "critical_count": 0, "high_count": 0, "medium_count": 0, "low_count": 0, "dependency_count": 80})).collect::<Vec<_>>(),
            "iac_misconfigurations": {"total_count": 2, "critical_count": 0, "high_count": 1, "misconfigurations": [
                {"id": "DS002", "severity": "HIGH", "title": "root user", "resolution": "Add a USER instruction with a non-root user", "target": "Dockerfile", "target_type": "dockerfile", "start_line": 1, "end_line": 1},
                {"id": "AVD-AWS-0086", "severity": "MEDIUM", "title": "public bucket", "resolution": "Block public access on the bucket", "target": "main.tf", "target_type": "terraform", "start_line": 3, "end_line": 9}
            ]},
            "sbom": {"format": "trivy-json", "total_packages": 400, "vulnerable_packages": 150, "clean_packages": 250},
            "freshness": {"checked": true, "total_packages": 40, "outdated_count": outdated,
                "outdated_pct": (outdated as f64 * 10000.0 / 40.0).round() / 100.0,
                "major_versions_behind_total": 40, "avg_days_behind": 100.0, "packages": packages}
        });
        let mut f = std::io::BufWriter::new(std::fs::File::create(out.join(format!("{id}.json")))?);
        serde_json::to_writer(&mut f, &doc)?;
        f.flush()?;
        let truth = serde_json::json!({
            "id": id, "schema_version": "1.0", "scenario": "synthetic", "description": "synthetic repo",
            "expected": {
                "expected_vulnerabilities": {"min": vulns / 2, "max": vulns * 2},
                "expected_critical": {"min": 0, "max": vulns}, "expected_high": {"min": 0, "max": vulns},
                "known_cves": [format!("CVE-2010-{:05}", r), "CVE-2099-00001"],
                "required_packages": ["pkg-1", "pkg-2"], "freshness_expected": true,
                "expected_outdated_count": {"min": 0, "max": 40}, "expected_outdated_pct": {"min": 0, "max": 100},
                "iac_expected": true, "required_iac_ids": ["DS002"]
            }
        });
        std::fs::write(exp.join(format!("{id}.json")), serde_json::to_vec(&truth)?)?;
    }
    Ok(())
}

fn total_bytes(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / 1e6 / secs
}

fn main() {
    let a = args();
    let dir = a
        .dir
        .unwrap_or_else(|| PathBuf::from(format!("target/bench/trivy-{}-{}", a.repos, a.vulns)));
    if !dir.join("outputs").is_dir() {
        eprintln!(
            "generating {} repos x {} vulnerabilities into {}",
            a.repos,
            a.vulns,
            dir.display()
        );
        if let Err(e) = generate(&dir, a.repos, a.vulns) {
            eprintln!("cannot generate: {e}");
            std::process::exit(2);
        }
    }
    let mut files: Vec<PathBuf> = ["outputs", "expected"]
        .iter()
        .flat_map(|d| std::fs::read_dir(dir.join(d)).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let bytes = total_bytes(&files);
    println!("input: {} files, {:.1} MB", files.len(), bytes as f64 / 1e6);

    // Warm the page cache so every measurement reads from memory.
    for f in &files {
        let _ = std::fs::read(f);
    }

    let t = Instant::now();
    for f in &files {
        let data = std::fs::read(f).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&data).unwrap_or_default();
        std::hint::black_box(v);
    }
    let parse = t.elapsed().as_secs_f64();
    println!(
        "serde_json::Value parse, 1 thread: {:>8.3} s  {:>7.1} MB/s",
        parse,
        mbps(bytes, parse)
    );

    let t = Instant::now();
    for f in &files {
        let data = std::fs::read(f).unwrap_or_default();
        let v: caldera::doc::Doc = serde_json::from_slice(&data).unwrap_or_default();
        std::hint::black_box(v);
    }
    let doc = t.elapsed().as_secs_f64();
    println!(
        "caldera Doc parse, 1 thread:       {:>8.3} s  {:>7.1} MB/s",
        doc,
        mbps(bytes, doc)
    );

    // The run is measured as users get it: the release binary in a fresh process
    // (suite load, validation, parallel parse, every judge, the JSON result written).
    let out = dir.join("result.json");
    let t = Instant::now();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
        .args([
            "run",
            "judges.d/trivy",
            "--heuristic",
            "--json",
            "--results",
        ])
        .arg(dir.join("outputs"))
        .arg("--ground-truth")
        .arg(dir.join("expected"))
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status();
    let run = t.elapsed().as_secs_f64();
    if !status
        .as_ref()
        .is_ok_and(|s| s.code().is_some_and(|c| c == 0 || c == 1))
    {
        eprintln!("the run failed: {status:?}");
        std::process::exit(2);
    }
    let result: serde_json::Value = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    println!(
        "caldera run --heuristic (binary, all cores): {:>6.3} s  {:>7.1} MB/s  ({} judges, score {}, {})",
        run,
        mbps(bytes, run),
        result["dimensions"].as_array().map_or(0, Vec::len),
        result["total_score"],
        result["decision"]
    );
    println!("ratio run / plain parse throughput: {:.2}", parse / run);
}
