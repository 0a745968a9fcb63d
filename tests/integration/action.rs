//! The GitHub Action's steps and the release install script, run as a workflow runs them.
//!
//! `scripts/action/caldera_action.py` runs with the variables GitHub sets (a pull-request
//! event written here, `GITHUB_API_URL` pointing at a loopback server these tests start,
//! `GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`) and the real caldera binary on the bundled
//! trivy suite. `scripts/package.sh` packages the debug binary as the release workflow
//! packages a release build, and `scripts/install.sh` installs it from a loopback server.
//! Without python3 or sh the tests skip and say why.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::binary::Caldera;
use crate::shared::skipped;

const TOKEN: &str = "ghs_test_token_not_a_real_one";
const REPO: &str = "octo/tools";
const PR: u64 = 7;

/// One request as the loopback server saw it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    /// Path and query, as sent.
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn json(status: u16, body: &Value) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    fn not_found() -> Response {
        Response::json(404, &json!({"message": "Not Found"}))
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// An HTTP/1.1 server on 127.0.0.1 answering one request per connection, from a thread.
/// It records every request; the thread ends with the test process.
struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = serve_one(stream, &*handler, &recorded);
            }
        });
        Server { base, seen }
    }

    fn seen(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve_one(
    stream: TcpStream,
    handler: &Handler,
    seen: &Mutex<Vec<Request>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let request = Request {
        method,
        target,
        headers,
        body,
    };
    seen.lock().unwrap().push(request.clone());
    let response = handler(&request);
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        response.body.len()
    )?;
    for (k, v) in &response.headers {
        write!(out, "{k}: {v}\r\n")?;
    }
    out.write_all(b"\r\n")?;
    out.write_all(&response.body)?;
    out.flush()
}

/// python3 and sh on PATH, or a skip notice.
fn tools_present(test: &str) -> bool {
    for (tool, probe) in [("python3", "pass"), ("sh", "exit 0")] {
        let found = Command::new(tool)
            .arg("-c")
            .arg(probe)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !found {
            skipped(&format!("{tool} is not installed; {test} skipped"));
            return false;
        }
    }
    true
}

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A job's workspace: the event, GITHUB_OUTPUT, the summary and the report folder.
struct Job {
    dir: tempfile::TempDir,
    api: String,
    event: Value,
}

impl Job {
    fn new(api: &str) -> Job {
        let event = json!({
            "action": "synchronize",
            "number": PR,
            "pull_request": {"number": PR, "comments_url": "http://127.0.0.1:9/never-used"},
            "repository": {"full_name": REPO, "default_branch": "main"},
        });
        Job {
            dir: tempfile::tempdir().unwrap(),
            api: api.to_owned(),
            event,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Runs one step of the action with `vars` on top of what GitHub would set.
    fn step(&self, step: &str, vars: &[(&str, &str)]) -> Output {
        std::fs::write(self.path("event.json"), self.event.to_string()).unwrap();
        let mut command = Command::new("python3");
        command
            .arg(project().join("scripts/action/caldera_action.py"))
            .arg(step)
            .current_dir(self.dir.path());
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with("GITHUB_") || name.starts_with("CALDERA_") {
                command.env_remove(name);
            }
        }
        command
            .env("GITHUB_EVENT_PATH", self.path("event.json"))
            .env("GITHUB_EVENT_NAME", "pull_request")
            .env("GITHUB_REPOSITORY", REPO)
            .env("GITHUB_API_URL", &self.api)
            .env("GITHUB_SERVER_URL", "https://github.example")
            .env("GITHUB_RUN_ID", "4242")
            .env("GITHUB_TOKEN", TOKEN)
            .env("GITHUB_OUTPUT", self.path("output"))
            .env("GITHUB_STEP_SUMMARY", self.path("summary.md"))
            .env("CALDERA_BIN", Caldera::path())
            .env("CALDERA_SUITE", project().join("judges.d/trivy"))
            .env("CALDERA_OUT_DIR", self.path("report"));
        for (k, v) in vars {
            command.env(k, v);
        }
        let output = command.output().unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !all.contains(TOKEN),
            "step {step} printed the token:\n{all}"
        );
        output
    }

    /// GITHUB_OUTPUT as name -> value (the last write wins, as on GitHub).
    fn outputs(&self) -> BTreeMap<String, String> {
        std::fs::read_to_string(self.path("output"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The comments of one pull request, as GitHub's issue-comment endpoints keep them.
fn comments_api(comments: Arc<Mutex<Vec<Value>>>) -> Server {
    let list = format!("/repos/{REPO}/issues/{PR}/comments");
    let one = format!("/repos/{REPO}/issues/comments/");
    Server::start(move |req| {
        let mut comments = comments.lock().unwrap();
        let path = req.target.split('?').next().unwrap_or("");
        match (req.method.as_str(), path) {
            ("GET", p) if p == list => Response::json(200, &Value::Array(comments.clone())),
            ("POST", p) if p == list => {
                let id = 1000 + comments.len() as u64;
                let made = json!({"id": id, "body": req.json()["body"]});
                comments.push(made.clone());
                Response::json(201, &made)
            }
            ("PATCH", p) if p.starts_with(&one) => {
                let id: u64 = p[one.len()..].parse().unwrap_or(0);
                match comments.iter_mut().find(|c| c["id"] == id) {
                    Some(c) => {
                        c["body"] = req.json()["body"].clone();
                        Response::json(200, c)
                    }
                    None => Response::not_found(),
                }
            }
            _ => Response::not_found(),
        }
    })
}

#[test]
fn action_posts_one_marked_comment_then_patches_it_instead_of_posting_again() {
    if !tools_present("the action comment test") {
        return;
    }
    let comments = Arc::new(Mutex::new(vec![
        json!({"id": 1, "body": "looks good to me"}),
        json!({"id": 2, "body": "<!-- caldera:semgrep -->\nanother suite's report"}),
    ]));
    let api = comments_api(comments.clone());
    let job = Job::new(&api.base);

    let run = job.step("run", &[]);
    assert!(run.status.success(), "{}", describe(&run));
    assert_eq!(job.outputs()["exit-code"], "0");

    let first = job.step("comment", &[("CALDERA_EXIT_CODE", "0")]);
    assert!(first.status.success(), "{}", describe(&first));
    let posts: Vec<Request> = api
        .seen()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(posts.len(), 1, "one comment posted: {:?}", api.seen());
    assert_eq!(
        posts[0].target,
        format!("/repos/{REPO}/issues/{PR}/comments")
    );
    let body = posts[0].json()["body"].as_str().unwrap().to_owned();
    assert!(
        body.starts_with("<!-- caldera:trivy -->\n"),
        "marker first:\n{body}"
    );
    assert!(body.contains("WEAK\\_PASS 3.30 / 5"), "decision:\n{body}");
    assert!(
        body.contains("| dimension | score | confidence | weight | status |"),
        "table:\n{body}"
    );
    assert!(body.contains("| vulnerability\\_accuracy | 4 |"), "{body}");
    assert!(body.contains("caldera exit status 0 (pass)"), "{body}");
    assert!(body.contains("https://github.example/octo/tools/actions/runs/4242"));

    // The next push: the comment with the marker is updated, nothing new is posted.
    let rerun = job.step("run", &[("CALDERA_ARGS", "--fail-under 4.5")]);
    assert!(rerun.status.success(), "{}", describe(&rerun));
    let second = job.step("comment", &[("CALDERA_EXIT_CODE", "1")]);
    assert!(second.status.success(), "{}", describe(&second));
    let writes: Vec<Request> = api
        .seen()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert_eq!(writes[1].method, "PATCH");
    assert_eq!(
        writes[1].target,
        format!("/repos/{REPO}/issues/comments/1002")
    );
    let comments = comments.lock().unwrap();
    assert_eq!(comments.len(), 3, "still one comment of the suite");
    let updated = comments[2]["body"].as_str().unwrap();
    assert!(updated.contains("caldera exit status 1 (below threshold)"));
    assert_eq!(
        comments[1]["body"],
        "<!-- caldera:semgrep -->\nanother suite's report"
    );
    for request in api.seen() {
        let expected = format!("Bearer {TOKEN}");
        assert_eq!(request.header("Authorization"), Some(expected.as_str()));
    }
}

#[test]
fn action_outside_a_pull_request_posts_no_comment() {
    if !tools_present("the action comment test") {
        return;
    }
    let api = comments_api(Arc::new(Mutex::new(Vec::new())));
    let mut job = Job::new(&api.base);
    job.event = json!({"ref": "refs/heads/main", "repository": {"default_branch": "main"}});
    let out = job.step("comment", &[]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(api.seen().is_empty(), "{:?}", api.seen());
}

/// A zip holding `name` with `data`, made with Python's zipfile (as an artifact is).
fn zip_with(dir: &Path, name: &str, data: &Path) -> Vec<u8> {
    let zip = dir.join("artifact.zip");
    let status = Command::new("python3")
        .arg("-c")
        .arg("import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'w').write(sys.argv[2], sys.argv[3])")
        .arg(&zip)
        .arg(data)
        .arg(name)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read(zip).unwrap()
}

#[test]
fn action_token_is_sent_only_to_the_api_origin_even_across_redirects_and_page_links() {
    if !tools_present("the action token test") {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    // The default branch's result, as the action would have uploaded it.
    let earlier = scratch.path().join("trivy.json");
    Caldera::new()
        .args(["run", "judges.d/trivy", "--heuristic", "--out"])
        .arg(&earlier)
        .run()
        .expect(0);
    let zip = zip_with(scratch.path(), "trivy.json", &earlier);

    // Another origin: blob storage, and where a hostile page link points.
    let storage = Server::start(move |req| match req.target.split('?').next() {
        Some("/blob/artifact.zip") => Response {
            status: 200,
            headers: vec![("Content-Type".into(), "application/zip".into())],
            body: zip.clone(),
        },
        _ => Response::json(200, &json!([])),
    });
    let storage_base = storage.base.clone();
    let api = Server::start(move |req| {
        let path = req.target.split('?').next().unwrap_or("");
        let artifacts = format!("/repos/{REPO}/actions/artifacts");
        let comments = format!("/repos/{REPO}/issues/{PR}/comments");
        match (req.method.as_str(), path) {
            ("GET", p) if p == artifacts => {
                let api_base = req.header("Host").map(|h| format!("http://{h}")).unwrap();
                let artifact = |id: u64, branch: &str| {
                    json!({
                        "id": id,
                        "name": "caldera-trivy-result",
                        "expired": false,
                        "archive_download_url": format!("{api_base}/repos/{REPO}/actions/artifacts/{id}/zip"),
                        "workflow_run": {"id": id * 10, "head_branch": branch},
                    })
                };
                Response::json(
                    200,
                    &json!({"total_count": 2, "artifacts": [artifact(9, "feature"), artifact(8, "main")]}),
                )
            }
            ("GET", p) if p == format!("/repos/{REPO}/actions/artifacts/8/zip") => Response {
                status: 302,
                headers: vec![(
                    "Location".into(),
                    format!("{storage_base}/blob/artifact.zip?sig=signed"),
                )],
                body: Vec::new(),
            },
            ("GET", p) if p == comments => Response {
                status: 200,
                headers: vec![(
                    "Link".into(),
                    format!("<{storage_base}/page2>; rel=\"next\""),
                )],
                body: b"[]".to_vec(),
            },
            ("POST", p) if p == comments => Response::json(201, &json!({"id": 5})),
            _ => Response::not_found(),
        }
    });
    let job = Job::new(&api.base);

    let baseline = job.step("baseline", &[("CALDERA_BASELINE", "auto")]);
    assert!(baseline.status.success(), "{}", describe(&baseline));
    let path = job.outputs()["path"].clone();
    assert!(
        path.ends_with("baseline-trivy.json"),
        "the main branch's artifact: {path:?}"
    );
    let run = job.step("run", &[("CALDERA_BASELINE_PATH", &path)]);
    assert!(run.status.success(), "{}", describe(&run));
    let comment = job.step("comment", &[]);
    assert!(comment.status.success(), "{}", describe(&comment));
    let posted = api
        .seen()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a comment");
    assert!(
        posted.json()["body"]
            .as_str()
            .unwrap()
            .contains("| dimension | before | after | delta |"),
        "the comparison with the baseline"
    );

    let expected = format!("Bearer {TOKEN}");
    for request in api.seen() {
        assert_eq!(
            request.header("Authorization"),
            Some(expected.as_str()),
            "{request:?}"
        );
    }
    let elsewhere = storage.seen();
    assert_eq!(
        elsewhere.len(),
        1,
        "only the redirected download, no page link: {elsewhere:?}"
    );
    assert_eq!(elsewhere[0].target, "/blob/artifact.zip?sig=signed");
    for request in &elsewhere {
        assert!(
            request.header("Authorization").is_none(),
            "token sent to another origin: {request:?}"
        );
        let raw = format!(
            "{:?}{}",
            request.headers,
            String::from_utf8_lossy(&request.body)
        );
        assert!(!raw.contains(TOKEN), "{raw}");
    }
}

#[test]
fn action_gate_exits_with_caldera_exit_status_while_the_run_step_passes() {
    if !tools_present("the action gate test") {
        return;
    }
    let api = comments_api(Arc::new(Mutex::new(Vec::new())));
    let job = Job::new(&api.base);
    let cases: [(&[(&str, &str)], i32); 3] = [
        (&[], 0),
        (&[("CALDERA_ARGS", "--fail-under 4.5")], 1),
        (&[("CALDERA_SUITE", "judges.d/no-such-suite")], 2),
    ];
    for (vars, status) in cases {
        let run = job.step("run", vars);
        assert!(
            run.status.success(),
            "the run step passes: {}",
            describe(&run)
        );
        let recorded = job.outputs()["exit-code"].clone();
        assert_eq!(recorded, status.to_string(), "{}", describe(&run));
        let gate = job.step("gate", &[("CALDERA_EXIT_CODE", &recorded)]);
        assert_eq!(gate.status.code(), Some(status), "{}", describe(&gate));
    }
    // The input error left no report: the comment step says so, posts nothing, and
    // leaves the failing to the gate.
    let no_report = job.step(
        "comment",
        &[
            ("CALDERA_SUITE", "judges.d/no-such-suite"),
            ("CALDERA_EXIT_CODE", "2"),
        ],
    );
    assert!(no_report.status.success(), "{}", describe(&no_report));
    assert!(
        String::from_utf8_lossy(&no_report.stdout).contains("caldera exited 2 without one"),
        "{}",
        describe(&no_report)
    );
    assert!(api.seen().is_empty(), "{:?}", api.seen());
    let summary = job.step("summary", &[]);
    assert!(summary.status.success(), "{}", describe(&summary));
    let written = std::fs::read_to_string(job.path("summary.md")).unwrap();
    assert!(written.contains("#### JUnit: "), "{written}");
    assert!(
        written.contains("| vulnerability_accuracy | passed |"),
        "{written}"
    );

    let nothing = job.step("gate", &[("CALDERA_EXIT_CODE", "")]);
    assert_eq!(nothing.status.code(), Some(2), "{}", describe(&nothing));
}

/// The Rust target the release matrix builds for this machine, if it builds one.
fn host_target() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("x86_64-unknown-linux-gnu"),
        ("linux", "aarch64") => Some("aarch64-unknown-linux-gnu"),
        ("macos", "x86_64") => Some("x86_64-apple-darwin"),
        ("macos", "aarch64") => Some("aarch64-apple-darwin"),
        _ => None,
    }
}

/// Serves the files of `dir` under `/dl/`; what is not there is a 404.
fn file_server(dir: PathBuf) -> Server {
    Server::start(move |req| {
        let name = req.target.strip_prefix("/dl/").unwrap_or("");
        if name.is_empty() || name.contains('/') || name.contains("..") {
            return Response::not_found();
        }
        match std::fs::read(dir.join(name)) {
            Ok(body) => Response {
                status: 200,
                headers: Vec::new(),
                body,
            },
            Err(_) => Response::not_found(),
        }
    })
}

fn install(base_url: &str, dir: &Path) -> Output {
    Command::new("sh")
        .arg(project().join("scripts/install.sh"))
        .env("CALDERA_DOWNLOAD_URL", base_url)
        .env("CALDERA_INSTALL_DIR", dir)
        .env_remove("CALDERA_TARGET")
        .env_remove("CALDERA_VERSION")
        .output()
        .unwrap()
}

#[test]
fn install_script_installs_a_verified_archive_and_refuses_a_tampered_one() {
    if !tools_present("the install script test") {
        return;
    }
    let Some(target) = host_target() else {
        skipped("no release archive is built for this platform; install test skipped");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dist = tmp.path().join("dist");
    let packaged = Command::new("sh")
        .arg(project().join("scripts/package.sh"))
        .arg(target)
        .arg(Caldera::path())
        .arg(&dist)
        .output()
        .unwrap();
    assert!(packaged.status.success(), "{}", describe(&packaged));
    let archive = dist.join(format!("caldera-{target}.tar.gz"));
    let checksum =
        std::fs::read_to_string(dist.join(format!("caldera-{target}.tar.gz.sha256"))).unwrap();
    assert!(
        checksum.ends_with(&format!("  caldera-{target}.tar.gz\n")),
        "{checksum}"
    );

    let server = file_server(dist.clone());
    let url = format!("{}/dl", server.base);
    let good = tmp.path().join("good/bin");
    let installed = install(&url, &good);
    assert!(installed.status.success(), "{}", describe(&installed));
    let version = Command::new(good.join("caldera"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("caldera {}", env!("CARGO_PKG_VERSION"))
    );

    // One byte changed in the archive, the checksum file as published: refused.
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&archive, bytes).unwrap();
    let bad = tmp.path().join("bad/bin");
    let refused = install(&url, &bad);
    assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("checksum mismatch for caldera-{target}.tar.gz"))
            && stderr.contains("refusing to install"),
        "{stderr}"
    );
    assert!(!bad.join("caldera").exists(), "nothing installed");

    // No archive at that address: exit 4, the action's cue to build from source.
    let missing = install(&format!("{}/nowhere", server.base), &bad);
    assert_eq!(missing.status.code(), Some(4), "{}", describe(&missing));
}
