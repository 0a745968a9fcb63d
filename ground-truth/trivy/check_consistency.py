#!/usr/bin/env python3
"""Check the bundled trivy sample data for internal consistency.

Run by hand after editing any file under outputs/ or expected/:

    python3 ground-truth/trivy/check_consistency.py            # check, exit 1 on a problem
    python3 ground-truth/trivy/check_consistency.py --figures  # also print per-scenario figures

Why it exists: the judges compare the numbers a document states (summary
counts, percentages, SBOM totals) with the lists it carries. If the sample
data disagreed with itself by accident, a judge would be tested against a
mistake rather than against a deliberate miss. The deliberate misses are all
in the relation between an output and its ground truth, never inside one
output. Standard library only.
"""
import json
import sys
from pathlib import Path

SEVERITIES = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "UNKNOWN"]
VULN_FIELDS = [
    "id", "package", "severity", "installed_version", "fixed_version", "cvss_score", "title",
    "description", "published_date", "age_days", "fix_available", "target", "target_type",
]
MISCONFIG_FIELDS = [
    "id", "severity", "title", "description", "resolution", "target", "target_type",
    "start_line", "end_line",
]
TARGET_FIELDS = [
    "path", "type", "vulnerability_count", "critical_count", "high_count", "medium_count",
    "low_count", "dependency_count",
]
SUMMARY_FIELDS = [
    "total_vulnerabilities", "critical_count", "high_count", "medium_count", "low_count",
    "unknown_count", "fix_available_count", "fix_available_pct", "dependency_count",
    "oldest_cve_days", "targets_scanned",
]
FRESH_PKG_FIELDS = [
    "package", "package_type", "installed_version", "latest_version", "major_versions_behind",
    "minor_versions_behind", "patch_versions_behind", "days_since_latest", "vulnerability_count",
    "is_outdated", "has_vulnerability",
]
RANGE_KEYS = [
    "expected_vulnerabilities", "expected_critical", "expected_high", "expected_medium",
    "expected_targets", "expected_fix_available_pct", "expected_outdated_count",
    "expected_outdated_pct",
]
LIST_KEYS = [
    "known_cves", "required_packages", "required_iac_types", "required_iac_ids",
    "dev_packages", "test_packages", "excluded_packages",
]


class Problems:
    """Collects every problem instead of stopping at the first."""

    def __init__(self):
        self.items = []

    def check(self, ok, where, message):
        if not ok:
            self.items.append(f"{where}: {message}")


def sev_counts(items):
    return {s: sum(1 for i in items if i.get("severity") == s) for s in SEVERITIES}


def repo_key(doc, stem):
    """Same rule as the suite: top-level id, then metadata.repo_id, then the file stem."""
    if isinstance(doc.get("id"), str):
        return doc["id"]
    meta = doc.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("repo_id"), str):
        return meta["repo_id"]
    return stem


def check_vulns(p, where, vulns):
    for n, v in enumerate(vulns):
        w = f"{where} vulnerabilities[{n}] {v.get('id')}"
        for f in VULN_FIELDS:
            p.check(f in v, w, f"missing field {f}")
        p.check(v.get("severity") in SEVERITIES, w, "bad severity")
        cvss = v.get("cvss_score")
        p.check(cvss is None or 0 <= cvss <= 10, w, "cvss out of 0-10")
        p.check(v.get("fix_available") == (v.get("fixed_version") is not None), w,
                "fix_available disagrees with fixed_version")


def check_targets(p, where, targets, vulns):
    for t in targets:
        w = f"{where} target {t.get('path')}"
        for f in TARGET_FIELDS:
            p.check(f in t, w, f"missing field {f}")
        mine = [v for v in vulns if v["target"] == t["path"]]
        c = sev_counts(mine)
        p.check(t["vulnerability_count"] == len(mine), w, "vulnerability_count != listed")
        for s in ["CRITICAL", "HIGH", "MEDIUM", "LOW"]:
            p.check(t[f"{s.lower()}_count"] == c[s], w, f"{s.lower()}_count != listed")
    paths = {t["path"] for t in targets}
    for v in vulns:
        p.check(v["target"] in paths, where, f"{v['id']} names unknown target {v['target']}")


def check_misconfigs(p, where, misconfigs):
    for n, m in enumerate(misconfigs):
        for f in MISCONFIG_FIELDS:
            p.check(f in m, f"{where} misconfigurations[{n}]", f"missing field {f}")


def check_shape_a(p, where, doc):
    s = doc["summary"]
    vulns = doc["vulnerabilities"]
    for f in SUMMARY_FIELDS:
        p.check(f in s, where, f"summary missing {f}")
    check_vulns(p, where, vulns)
    c = sev_counts(vulns)
    p.check(s["total_vulnerabilities"] == len(vulns), where, "total_vulnerabilities != listed")
    for sev in SEVERITIES:
        p.check(s[f"{sev.lower()}_count"] == c[sev], where, f"summary {sev.lower()}_count != listed")
    fixable = sum(1 for v in vulns if v["fix_available"])
    p.check(s["fix_available_count"] == fixable, where, "fix_available_count != listed")
    pct = round(fixable / len(vulns) * 100, 2) if vulns else 0.0
    p.check(abs(s["fix_available_pct"] - pct) < 0.006, where, f"fix_available_pct should be {pct}")
    oldest = max((v["age_days"] for v in vulns), default=0)
    p.check(s["oldest_cve_days"] == oldest, where, "oldest_cve_days != max age_days")
    check_targets(p, where, doc["targets"], vulns)
    p.check(s["targets_scanned"] == len(doc["targets"]), where, "targets_scanned != len(targets)")
    deps = sum(t["dependency_count"] for t in doc["targets"])
    p.check(s["dependency_count"] == deps, where, "dependency_count != sum of targets")

    iac = doc["iac_misconfigurations"]
    ms = iac["misconfigurations"]
    check_misconfigs(p, where, ms)
    mc = sev_counts(ms)
    p.check(iac["total_count"] == len(ms), where, "iac total_count != listed")
    p.check(iac["critical_count"] == mc["CRITICAL"], where, "iac critical_count != listed")
    p.check(iac["high_count"] == mc["HIGH"], where, "iac high_count != listed")

    sb = doc["sbom"]
    p.check(sb["vulnerable_packages"] + sb["clean_packages"] == sb["total_packages"], where,
            "sbom vulnerable + clean != total")
    p.check(sb["vulnerable_packages"] == len({v["package"] for v in vulns}), where,
            "sbom vulnerable_packages != distinct vulnerable packages")
    p.check(sb["total_packages"] == s["dependency_count"], where, "sbom total != dependency_count")

    fr = doc.get("freshness")
    if fr is not None:
        pk = fr["packages"]
        for n, x in enumerate(pk):
            for f in FRESH_PKG_FIELDS:
                p.check(f in x, f"{where} freshness.packages[{n}]", f"missing field {f}")
            p.check(x["has_vulnerability"] == (x["vulnerability_count"] > 0), where,
                    f"{x['package']} has_vulnerability disagrees with vulnerability_count")
        outdated = [x for x in pk if x["is_outdated"]]
        p.check(fr["total_packages"] == len(pk), where, "freshness total_packages != listed")
        p.check(fr["outdated_count"] == len(outdated), where, "outdated_count != listed")
        pct = round(len(outdated) / len(pk) * 100, 2) if pk else 0.0
        p.check(fr["outdated_pct"] == pct, where, f"outdated_pct should be {pct}")
        p.check(fr["major_versions_behind_total"] == sum(x["major_versions_behind"] for x in pk),
                where, "major_versions_behind_total != sum")
        avg = round(sum(x["days_since_latest"] for x in outdated) / len(outdated), 1) if outdated else 0.0
        p.check(fr["avg_days_behind"] == avg, where, f"avg_days_behind should be {avg}")


def check_shape_c(p, where, doc):
    meta = doc["metadata"]
    for f in ["tool_name", "tool_version", "run_id", "repo_id", "branch", "commit", "timestamp",
              "schema_version"]:
        p.check(f in meta, where, f"metadata missing {f}")
    commit = meta.get("commit", "")
    p.check(len(commit) == 40 and all(ch in "0123456789abcdef" for ch in commit), where,
            "commit is not 40 hex digits")
    d = doc["data"]
    vulns = d["vulnerabilities"]
    check_vulns(p, where, vulns)
    check_targets(p, where, d["targets"], vulns)
    ms = d["iac_misconfigurations"]["misconfigurations"]
    check_misconfigs(p, where, ms)
    p.check(d["iac_misconfigurations"]["count"] == len(ms), where, "iac count != listed")
    fs = d["findings_summary"]
    p.check(fs["total_vulnerabilities"] == len(vulns), where, "total_vulnerabilities != listed")
    p.check(fs["total_misconfigurations"] == len(ms), where, "total_misconfigurations != listed")
    # by_severity counts every finding: vulnerabilities and misconfigurations together.
    p.check(fs["by_severity"] == sev_counts(vulns + ms), where, "by_severity != listed findings")
    p.check(fs["fixable_count"] == sum(1 for v in vulns if v["fix_available"]), where,
            "fixable_count != listed")


def is_range(x):
    if isinstance(x, bool):
        return False
    if isinstance(x, (int, float)):
        return True
    return (isinstance(x, dict) and set(x) <= {"min", "max"}
            and x.get("min", 0) <= x.get("max", float("inf")))


def check_truth(p, where, doc):
    for f in ["id", "schema_version", "scenario", "description", "repo_path", "expected"]:
        p.check(f in doc, where, f"missing {f}")
    e = doc.get("expected", {})
    for k in RANGE_KEYS:
        if k in e:
            p.check(is_range(e[k]), where, f"{k} is not an int or {{min,max}}")
    if "expected_iac" in e:
        for k, v in e["expected_iac"].items():
            p.check(k in {"total", "critical", "high"} and is_range(v), where, f"expected_iac.{k} bad")
    for k in LIST_KEYS:
        if k in e:
            p.check(isinstance(e[k], list) and all(isinstance(i, str) for i in e[k]), where,
                    f"{k} is not a list of strings")
    for k in ["freshness_expected", "iac_expected"]:
        if k in e:
            p.check(isinstance(e[k], bool), where, f"{k} is not a bool")


def load(folder):
    docs = {}
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith("."):
            continue
        with path.open() as f:
            docs[path] = json.load(f)
    return docs


def lo_hi(r):
    if isinstance(r, dict):
        return r.get("min", 0), r.get("max", 999)
    return r, r


def figures(key, res, truth):
    """One line of the figures a judge should reproduce for this scenario."""
    d = res.get("data", res)
    vulns = d["vulnerabilities"]
    ids = {v["id"] for v in vulns}
    pkgs = {v["package"] for v in vulns}
    c = sev_counts(vulns)
    ms = d["iac_misconfigurations"]["misconfigurations"]
    out = [f"{key}: vulns={len(vulns)} C/H/M/L/U={c['CRITICAL']}/{c['HIGH']}/{c['MEDIUM']}/{c['LOW']}/{c['UNKNOWN']}",
           f"iac={len(ms)}"]
    fr = d.get("freshness")
    out.append(f"fresh={fr['outdated_count']}/{fr['total_packages']}={fr['outdated_pct']}%" if fr else "fresh=none")
    if truth is None:
        out.append("truth=none")
        return "  ".join(out)
    e = truth["expected"]
    known = e.get("known_cves", [])
    out.append(f"known={sum(1 for k in known if k in ids)}/{len(known)}")
    req = e.get("required_packages", [])
    out.append(f"pkgs={sum(1 for r in req if r in pkgs)}/{len(req)}")
    lo, hi = lo_hi(e.get("expected_vulnerabilities", {}))
    out.append(f"count_in_range={lo <= len(vulns) <= hi}")
    excluded = set(e.get("dev_packages", []) + e.get("test_packages", []) + e.get("excluded_packages", []))
    if excluded:
        out.append(f"non_prod_findings={sum(1 for v in vulns if v['package'] in excluded)}")
    if "required_iac_ids" in e:
        got = {m["id"] for m in ms}
        out.append(f"iac_ids={sum(1 for i in e['required_iac_ids'] if i in got)}/{len(e['required_iac_ids'])}")
    return "  ".join(out)


def main():
    here = Path(__file__).resolve().parent
    p = Problems()
    outputs = load(here / "outputs")
    truths = load(here / "expected")
    results = {}
    for path, doc in outputs.items():
        where = f"outputs/{path.name}"
        key = repo_key(doc, path.stem)
        p.check(key not in results, where, f"repo key {key} used twice")
        results[key] = doc
        if "metadata" in doc and "data" in doc:
            check_shape_c(p, where, doc)
            p.check(key != path.stem, where, "envelope file name should differ from repo_id")
        else:
            check_shape_a(p, where, doc)
    truth_by_key = {}
    for path, doc in truths.items():
        where = f"expected/{path.name}"
        check_truth(p, where, doc)
        key = doc.get("id", path.stem)
        p.check(key == path.stem, where, "truth id should equal the file stem")
        p.check(key in results, where, f"no output is keyed {key}")
        truth_by_key[key] = doc
    p.check(any(k not in truth_by_key for k in results), "outputs", "no output without ground truth")

    if "--figures" in sys.argv:
        for key in results:
            print(figures(key, results[key], truth_by_key.get(key)))
    for item in p.items:
        print("PROBLEM", item)
    print(f"{len(outputs)} outputs, {len(truths)} truth files, {len(p.items)} problems")
    return 1 if p.items else 0


if __name__ == "__main__":
    sys.exit(main())
