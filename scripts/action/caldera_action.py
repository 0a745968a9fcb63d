#!/usr/bin/env python3
"""The steps of the caldera GitHub Action (action.yml), as one script a test can run.

Python standard library only: it runs on every GitHub runner as it is.

    caldera_action.py baseline  # resolve the `baseline` input (a path, `auto` or nothing)
    caldera_action.py run       # run caldera, record its exit status (the step itself passes)
    caldera_action.py summary   # the JUnit report and the Markdown report in the job summary
    caldera_action.py comment   # post, or update, the one pull-request comment of the suite
    caldera_action.py gate      # exit with caldera's recorded status

Every value comes from the environment the action sets (CALDERA_* for its inputs) and
from the variables GitHub sets (GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL,
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, ...). The token is sent to GITHUB_API_URL's origin
only: a redirect elsewhere (an artifact download lands on blob storage) or a pagination
link to another origin is followed without it.
"""

import io
import json
import os
import shlex
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zipfile

# GitHub refuses comments longer than this many characters.
COMMENT_LIMIT = 65536
# Bounds on what the API may make this script read or do.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
MAX_PAGES = 50
MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 60

EXIT_MEANING = {
    0: "pass",
    1: "below threshold",
    2: "usage or input error",
    3: "incomplete",
    130: "interrupted",
}


class ActionError(Exception):
    """A problem the step reports as an error annotation and fails on."""


def env(name, default=None):
    value = os.environ.get(name, "")
    if value == "":
        if default is None:
            raise ActionError(f"the environment variable {name} is not set")
        return default
    return value


def annotate(level, message):
    """A workflow command: shown on the run's page and in the job's log."""
    flat = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{level}::{flat}", flush=True)


def set_output(name, value):
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"{name}={value}\n")


def append_summary(text):
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(text)
        if not text.endswith("\n"):
            out.write("\n")


def read_event():
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError) as e:
        raise ActionError(f"cannot read the event {path}: {e}") from e
    return event if isinstance(event, dict) else {}


def suite_name():
    """The report files are named after the suite folder (caldera writes DIR/<suite>.<ext>)."""
    suite = env("CALDERA_SUITE").rstrip("/\\")
    base = os.path.basename(suite)
    if base in ("suite.yaml", "suite.yml"):
        base = os.path.basename(os.path.dirname(suite))
    return base


def report_path(ext):
    return os.path.join(env("CALDERA_OUT_DIR"), f"{suite_name()}.{ext}")


# --- HTTP -----------------------------------------------------------------------------


def origin(url):
    parts = urllib.parse.urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return (parts.scheme, (parts.hostname or "").lower(), port)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are followed by `request` itself, which decides about the token."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class Api:
    """GitHub's REST API at GITHUB_API_URL, with the token sent to that origin only."""

    def __init__(self):
        self.base = env("GITHUB_API_URL", "https://api.github.com").rstrip("/")
        if urllib.parse.urlsplit(self.base).scheme not in ("http", "https"):
            raise ActionError(f"GITHUB_API_URL must be an http(s) URL, not {self.base!r}")
        self.origin = origin(self.base)
        self.token = os.environ.get("GITHUB_TOKEN", "")
        self.repo = env("GITHUB_REPOSITORY")

    def url(self, path):
        return f"{self.base}/repos/{self.repo}{path}"

    def request(self, method, url, body=None, accept="application/vnd.github+json"):
        """(status, headers, bytes) of one request, following up to MAX_REDIRECTS."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        for _ in range(MAX_REDIRECTS + 1):
            req = urllib.request.Request(url, data=data, method=method)
            req.add_header("Accept", accept)
            req.add_header("User-Agent", "caldera-action")
            if data is not None:
                req.add_header("Content-Type", "application/json")
            if self.token and origin(url) == self.origin:
                req.add_header("Authorization", f"Bearer {self.token}")
                req.add_header("X-GitHub-Api-Version", "2022-11-28")
            try:
                with _OPENER.open(req, timeout=TIMEOUT_SECONDS) as resp:
                    return resp.status, resp.headers, _read_bounded(resp)
            except urllib.error.HTTPError as e:
                location = e.headers.get("Location") if e.headers else None
                if e.code in (301, 302, 303, 307, 308) and location:
                    url = urllib.parse.urljoin(url, location)
                    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                        raise ActionError(f"{method} redirected to a non-http URL") from e
                    if e.code == 303:
                        method, data = "GET", None
                    continue
                detail = _read_bounded(e, 2000).decode("utf-8", "replace")
                raise HttpError(e.code, f"{method} {_no_query(url)}: HTTP {e.code}: {detail}") from e
            except (urllib.error.URLError, OSError) as e:
                raise ActionError(f"{method} {_no_query(url)}: {e}") from e
        raise ActionError(f"{method} {_no_query(url)}: more than {MAX_REDIRECTS} redirects")

    def json(self, method, url, body=None):
        status, headers, raw = self.request(method, url, body)
        try:
            return headers, json.loads(raw.decode("utf-8")) if raw else None
        except ValueError as e:
            raise ActionError(f"{method} {_no_query(url)}: the answer is not JSON") from e

    def pages(self, url):
        """Every item of a paginated list, following `Link: rel="next"` on the API's origin."""
        for _ in range(MAX_PAGES):
            headers, items = self.json("GET", url)
            yield from items if isinstance(items, list) else []
            url = _next_link(headers.get("Link", ""))
            if url is None:
                return
            if origin(url) != self.origin:
                annotate("warning", f"not following a pagination link to another origin: {_no_query(url)}")
                return
        annotate("warning", f"stopped after {MAX_PAGES} pages")


class HttpError(ActionError):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _read_bounded(resp, limit=MAX_RESPONSE_BYTES):
    data = resp.read(limit + 1)
    if len(data) > limit:
        raise ActionError(f"an answer of more than {limit} bytes was refused")
    return data


def _no_query(url):
    """URLs in messages lose their query: a signed download URL carries a credential there."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _next_link(header):
    for part in header.split(","):
        section = part.split(";")
        if len(section) < 2:
            continue
        target = section[0].strip()
        if 'rel="next"' in [s.strip() for s in section[1:]] and target.startswith("<"):
            return target.strip("<>")
    return None


# --- steps ----------------------------------------------------------------------------


def step_baseline():
    """Resolves the `baseline` input and outputs `path` (empty: run without a baseline).

    `auto` takes the result the action uploaded as the artifact `caldera-<suite>-result`
    from the newest run on the repository's default branch (see action.yml); none yet is
    a notice, not an error, so the first run of a repository passes.
    """
    wanted = os.environ.get("CALDERA_BASELINE", "").strip()
    if wanted == "":
        set_output("path", "")
        return 0
    if wanted != "auto":
        if not os.path.isfile(wanted):
            raise ActionError(f"baseline: no file at {wanted} (give a result JSON, `auto`, or nothing)")
        set_output("path", wanted)
        return 0
    path = fetch_default_branch_result()
    set_output("path", path or "")
    return 0


def artifact_name():
    return f"caldera-{suite_name()}-result"


def fetch_default_branch_result():
    event = read_event()
    branch = (event.get("repository") or {}).get("default_branch") or os.environ.get(
        "CALDERA_DEFAULT_BRANCH", ""
    )
    if not branch:
        annotate("warning", "baseline auto: the event names no default branch; running without a baseline")
        return None
    api = Api()
    name = artifact_name()
    query = urllib.parse.urlencode({"name": name, "per_page": 30})
    _, listing = api.json("GET", api.url(f"/actions/artifacts?{query}"))
    artifacts = (listing or {}).get("artifacts") or []
    for artifact in artifacts:
        run = artifact.get("workflow_run") or {}
        if artifact.get("expired") or run.get("head_branch") != branch:
            continue
        url = artifact.get("archive_download_url")
        if not isinstance(url, str):
            raise ActionError(f"baseline: artifact {artifact.get('id')} has no archive_download_url")
        _, _, raw = api.request("GET", url)
        path = _extract_result(raw, f"{suite_name()}.json")
        print(f"baseline: artifact {name} of run {run.get('id')} on {branch} ({path})")
        return path
    annotate("notice", f"baseline auto: no artifact {name} from {branch} yet; running without a baseline")
    return None


def _extract_result(raw, member):
    """Writes the result JSON out of an artifact's zip into the output folder."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            infos = [i for i in archive.infolist() if os.path.basename(i.filename) == member]
            if not infos:
                raise ActionError(f"baseline: the artifact holds no {member}")
            if infos[0].file_size > MAX_RESPONSE_BYTES:
                raise ActionError(f"baseline: {member} unpacks to more than {MAX_RESPONSE_BYTES} bytes")
            data = archive.read(infos[0])
    except zipfile.BadZipFile as e:
        raise ActionError(f"baseline: the artifact is not a zip archive: {e}") from e
    out_dir = env("CALDERA_OUT_DIR")
    os.makedirs(out_dir, exist_ok=True)
    # Named apart from what caldera writes there (<suite>.json and the reports).
    path = os.path.join(out_dir, f"baseline-{suite_name()}.json")
    with open(path, "wb") as f:
        f.write(data)
    return path


def caldera_command():
    """`caldera run SUITE --out-dir DIR -f json,md,junit,html` and the flags the inputs ask for."""
    command = [
        env("CALDERA_BIN", "caldera"),
        "run",
        env("CALDERA_SUITE"),
        "--out-dir",
        env("CALDERA_OUT_DIR"),
        "-f",
        "json,md,junit,html",
    ]
    mode = env("CALDERA_MODE", "heuristic")
    if mode == "heuristic":
        command.append("--heuristic")
    elif mode != "model":
        raise ActionError(f"mode must be `heuristic` or `model`, not {mode!r}")
    baseline = os.environ.get("CALDERA_BASELINE_PATH", "")
    if baseline:
        command += ["--baseline", baseline]
        if _truthy(os.environ.get("CALDERA_FAIL_ON_REGRESSION", "")):
            command += ["--fail-on", "regression"]
    try:
        command += shlex.split(os.environ.get("CALDERA_ARGS", ""))
    except ValueError as e:
        raise ActionError(f"args: {e}") from e
    return command


def step_run():
    """Runs caldera and outputs `exit-code`, `suite-name` and `result` (the JSON result).

    The step itself passes whatever caldera says, so the report and comment steps run
    on a failing judgement too; the gate step ends the action with the recorded status.
    """
    command = caldera_command()
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    try:
        status = subprocess.run(command, check=False).returncode
    except OSError as e:
        raise ActionError(f"cannot run {command[0]}: {e}") from e
    set_output("exit-code", str(status))
    set_output("suite-name", suite_name())
    set_output("result", report_path("json"))
    meaning = EXIT_MEANING.get(status, "unexpected status")
    print(f"caldera exited {status} ({meaning})")
    return 0


def step_summary():
    """The Markdown report, then one line per JUnit test case, in the job summary."""
    parts = []
    md = report_path("md")
    if os.path.isfile(md):
        with open(md, encoding="utf-8") as f:
            parts.append(f.read())
    junit = report_path("junit.xml")
    if os.path.isfile(junit):
        parts.append(junit_table(junit))
    if not parts:
        annotate("warning", f"no report in {env('CALDERA_OUT_DIR')}: caldera wrote none (see its step)")
        return 0
    append_summary("\n\n".join(parts))
    return 0


def junit_table(path):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise ActionError(f"cannot read the JUnit report {path}: {e}") from e
    rows = ["| test | result |", "|---|---|"]
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for case in root.iter("testcase"):
        if case.find("error") is not None:
            state = "error"
        elif case.find("failure") is not None:
            state = "failed"
        elif case.find("skipped") is not None:
            state = "skipped"
        else:
            state = "passed"
        counts[state] += 1
        name = (case.get("name") or "?").replace("|", "\\|")
        rows.append(f"| {name} | {state} |")
    head = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
    return f"#### JUnit: {head}\n\n" + "\n".join(rows) + "\n"


def marker():
    return f"<!-- caldera:{suite_name()} -->"


def comment_body():
    """The marker, the Markdown report, and where the HTML report is."""
    md = report_path("md")
    try:
        with open(md, encoding="utf-8") as f:
            report = f.read().strip()
    except OSError as e:
        raise ActionError(f"no Markdown report to post: {e}") from e
    footer = []
    server = os.environ.get("GITHUB_SERVER_URL", "")
    run_id = os.environ.get("GITHUB_RUN_ID", "")
    if server and run_id:
        footer.append(
            f"[HTML report and result](<{server}/{env('GITHUB_REPOSITORY')}/actions/runs/{run_id}>)"
            f" (artifact `caldera-{suite_name()}-report`)"
        )
    status = os.environ.get("CALDERA_EXIT_CODE", "")
    if status:
        meaning = EXIT_MEANING.get(int(status), "unexpected status") if status.isdigit() else "?"
        footer.append(f"caldera exit status {status} ({meaning})")
    tail = "\n\n<sub>" + " · ".join(footer) + "</sub>" if footer else ""
    body = f"{marker()}\n{report}{tail}\n"
    if len(body) > COMMENT_LIMIT:
        cut = "\n\n… (cut: the full report is in the job summary)\n"
        body = body[: COMMENT_LIMIT - len(cut)] + cut
    return body


def pull_request_number(event):
    pr = event.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("number"), int):
        return pr["number"]
    return None


def step_comment():
    """Posts the suite's comment on the pull request, or updates the one it posted before."""
    event = read_event()
    number = pull_request_number(event)
    if number is None:
        print("not a pull-request event: no comment")
        return 0
    if not os.path.isfile(report_path("md")):
        # caldera stopped before it wrote a report (a usage or input error): the gate
        # step fails with its status; an old comment is left as it was.
        status = os.environ.get("CALDERA_EXIT_CODE", "?")
        annotate("warning", f"no report to post on #{number}: caldera exited {status} without one")
        return 0
    api = Api()
    if not api.token:
        raise ActionError("comment: no github-token (GITHUB_TOKEN) to post with")
    body = comment_body()
    existing = None
    for comment in api.pages(api.url(f"/issues/{number}/comments?per_page=100")):
        if isinstance(comment, dict) and marker() in str(comment.get("body") or ""):
            if isinstance(comment.get("id"), int):
                existing = comment
                break
    try:
        if existing is not None:
            api.json("PATCH", api.url(f"/issues/comments/{existing['id']}"), {"body": body})
            print(f"updated comment {existing['id']} on #{number}")
        else:
            _, made = api.json("POST", api.url(f"/issues/{number}/comments"), {"body": body})
            print(f"posted comment {(made or {}).get('id')} on #{number}")
    except HttpError as e:
        if e.code == 403:
            annotate(
                "warning",
                "the token may not write comments here (a pull request from a fork gets a "
                "read-only token; give the job `pull-requests: write`): the report is in the "
                f"job summary. {e}",
            )
            return 0
        raise
    return 0


def step_gate():
    """Exits with caldera's status, so the action's result is caldera's judgement."""
    status = os.environ.get("CALDERA_EXIT_CODE", "")
    if not status.isdigit():
        raise ActionError("caldera did not run (no exit status recorded): see the earlier steps")
    code = int(status)
    meaning = EXIT_MEANING.get(code, "unexpected status")
    if code != 0:
        annotate("error", f"caldera exited {code} ({meaning})")
    else:
        print(f"caldera exited 0 ({meaning})")
    return code


def _truthy(value):
    return value.strip().lower() in ("1", "true", "yes", "on")


STEPS = {
    "baseline": step_baseline,
    "run": step_run,
    "summary": step_summary,
    "comment": step_comment,
    "gate": step_gate,
}


def main(argv):
    if len(argv) != 2 or argv[1] not in STEPS:
        print(f"usage: {argv[0]} {'|'.join(STEPS)}", file=sys.stderr)
        return 2
    try:
        return STEPS[argv[1]]()
    except ActionError as e:
        annotate("error", str(e))
        return 2
    except Exception as e:  # an answer of an unexpected shape: one line, not a traceback
        annotate("error", f"{argv[1]}: unexpected {type(e).__name__}: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
