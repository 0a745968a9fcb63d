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
//!    process (load, parse on all cores, every judge, the result written): wall time
//!    and peak resident memory (the child's `ru_maxrss`), `--runs K` times (median).
//!
//! It prints MB/s and ms per MB for each, the ratio of (3) to (1), the peak RSS against
//! the budget of 2x the input + 30 MB, and checks the result against a reference run:
//! the first run over a folder stores its result (volatile fields removed) as
//! `reference.json` there, later runs must give the same JSON (`--update-reference`
//! replaces it). A difference exits 1, so a faster engine cannot silently score
//! differently.

// A benchmark reports on stdout and reads its child's peak memory through libc.
#![allow(clippy::print_stdout, clippy::print_stderr, unsafe_code)]

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
    runs: usize,
    update_reference: bool,
}

fn args() -> Args {
    let mut a = Args {
        repos: 200,
        vulns: 2000,
        dir: None,
        runs: 1,
        update_reference: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--repos" => a.repos = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.repos),
            "--vulns-per-repo" => {
                a.vulns = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.vulns)
            }
            "--dir" => a.dir = it.next().map(PathBuf::from),
            "--runs" => a.runs = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.runs),
            "--update-reference" => a.update_reference = true,
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

    let (t, c) = (Instant::now(), cpu_self());
    for f in &files {
        let data = std::fs::read(f).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_slice(&data).unwrap_or_default();
        std::hint::black_box(v);
    }
    let (parse, parse_cpu) = (t.elapsed().as_secs_f64(), cpu_self() - c);
    println!(
        "serde_json::Value parse, 1 thread: {:>8.3} s  {:>7.1} MB/s  (cpu {:.3} s)",
        parse,
        mbps(bytes, parse),
        parse_cpu
    );

    let (t, c) = (Instant::now(), cpu_self());
    for f in &files {
        let data = std::fs::read(f).unwrap_or_default();
        let v: caldera::doc::Doc = serde_json::from_slice(&data).unwrap_or_default();
        std::hint::black_box(v);
    }
    let (doc, doc_cpu) = (t.elapsed().as_secs_f64(), cpu_self() - c);
    println!(
        "caldera Doc parse, 1 thread:       {:>8.3} s  {:>7.1} MB/s  (cpu {:.3} s)",
        doc,
        mbps(bytes, doc),
        doc_cpu
    );

    // The memory documents take, all kept at once as a run keeps them.
    let before = rss_now();
    let kept: Vec<caldera::doc::Doc> = files
        .iter()
        .map(|f| serde_json::from_slice(&std::fs::read(f).unwrap_or_default()).unwrap_or_default())
        .collect();
    let held = rss_now().saturating_sub(before);
    println!(
        "documents held in memory: {:.1} MB = {:.2}x the JSON bytes",
        held as f64 / 1e6,
        held as f64 / bytes as f64
    );
    drop(kept);
    println!(
        "per MB: plain parse {:.2} ms, Doc parse {:.2} ms",
        parse * 1e3 / (bytes as f64 / 1e6),
        doc * 1e3 / (bytes as f64 / 1e6)
    );

    let out = dir.join("result.json");
    let mut runs: Vec<Run> = (0..a.runs.max(1)).map(|_| run_once(&dir, &out)).collect();
    runs.sort_by(|x, y| x.wall.total_cmp(&y.wall));
    let Run { wall: run, cpu, .. } = runs[runs.len() / 2];
    let peak = runs.iter().map(|r| r.peak).max().unwrap_or(0);
    let result: serde_json::Value = std::fs::read_to_string(&out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let mb = bytes as f64 / 1e6;
    println!(
        "caldera run --heuristic (binary, all cores): {:>6.3} s  {:>7.1} MB/s  {:.2} ms/MB  (median of {}; {} judges, score {}, {})",
        run,
        mbps(bytes, run),
        run * 1e3 / mb,
        runs.len(),
        result["dimensions"].as_array().map_or(0, Vec::len),
        result["total_score"],
        result["decision"]
    );
    println!(
        "run cpu: {:.3} s = {:.2} ms/MB (user + system over all threads)",
        cpu,
        cpu * 1e3 / mb
    );
    println!(
        "ratio run / plain parse throughput: {:.2} wall, {:.2} cpu",
        parse / run,
        parse_cpu / cpu
    );
    let budget = 2 * bytes + 30 * 1024 * 1024;
    println!(
        "peak RSS: {:.1} MB = {:.2}x the input (budget 2x + 30 MB = {:.1} MB: {})",
        peak as f64 / 1e6,
        peak as f64 / bytes as f64,
        budget as f64 / 1e6,
        if peak <= budget { "within" } else { "OVER" }
    );
    if !check_reference(&dir, &result, a.update_reference) {
        std::process::exit(1);
    }
}

/// One heuristic run of the release binary in a fresh process: wall seconds, the
/// child's peak resident set in bytes and its CPU seconds. The run is measured as users get it (suite load,
/// validation, parallel parse, every judge, the JSON result written).
fn run_once(dir: &Path, out: &Path) -> Run {
    let t = Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_caldera"))
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
        .arg(out)
        .stdout(std::process::Stdio::null())
        .spawn();
    let Ok(child) = child else {
        eprintln!("cannot start the run: {child:?}");
        std::process::exit(2);
    };
    let (code, peak, cpu) = wait_with_rusage(child.id());
    let wall = t.elapsed().as_secs_f64();
    if !matches!(code, Some(0 | 1)) {
        eprintln!("the run failed: exit {code:?}");
        std::process::exit(2);
    }
    Run { wall, cpu, peak }
}

/// What one run of the binary cost.
#[derive(Clone, Copy)]
struct Run {
    wall: f64,
    cpu: f64,
    peak: u64,
}

/// This process's resident set now, in bytes (from `/proc/self/statm`; 0 elsewhere).
fn rss_now() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// CPU seconds (user + system) this process has used so far. The machine may be shared:
/// CPU time says what the work costs, wall time what one waits.
fn cpu_self() -> f64 {
    // SAFETY: `rusage` is plain data that `getrusage` fills.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    secs(&usage)
}

fn secs(u: &libc::rusage) -> f64 {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Waits for `pid` with `wait4`, which reports that child's own resource usage (not the
/// sum over every child, as `getrusage(RUSAGE_CHILDREN)` would).
fn wait_with_rusage(pid: u32) -> (Option<i32>, u64, f64) {
    let mut status = 0;
    // SAFETY: `rusage` is plain data that `wait4` fills; `pid` is our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    if r < 0 {
        return (None, 0, 0.0);
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // Linux reports ru_maxrss in kilobytes.
    (code, usage.ru_maxrss as u64 * 1024, secs(&usage))
}

/// The result without what changes from run to run (ids, times, folders).
fn stable(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(m) = v.as_object_mut() {
        for k in ["run_id", "timestamp", "duration_ms"] {
            m.remove(k);
        }
    }
    v
}

/// Compares the result with the folder's reference (stored on the first run).
fn check_reference(dir: &Path, result: &serde_json::Value, update: bool) -> bool {
    let path = dir.join("reference.json");
    let now = stable(result.clone());
    let stored = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    match stored {
        Some(reference) if !update => {
            if reference == now {
                println!("result: equal to the reference run ({})", path.display());
                true
            } else {
                let _ = std::fs::write(
                    dir.join("result.differs.json"),
                    serde_json::to_vec_pretty(&now).unwrap_or_default(),
                );
                eprintln!(
                    "result DIFFERS from the reference run ({}); see result.differs.json",
                    path.display()
                );
                false
            }
        }
        _ => {
            let _ = std::fs::write(&path, serde_json::to_vec_pretty(&now).unwrap_or_default());
            println!("result: stored as the reference run ({})", path.display());
            true
        }
    }
}
