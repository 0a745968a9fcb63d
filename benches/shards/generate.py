#!/usr/bin/env python3
"""Synthetic trivy scans for benches/shards.sh: GB gigabytes of results plus ground truth.

Usage: generate.py OUT_DIR GB [--seed N]

Writes OUT_DIR/outputs/<id>.json (trivy's flat layout: summary, vulnerabilities with
advisory text and references, targets, sbom) and OUT_DIR/expected/<id>.json (known CVEs,
some of which the scan misses, and required packages). Each repo is 2.5 to 3.5 MB, so
10 GB is about 3,300 repos. Every repo draws from its own generator seeded with
(seed, repo index): the same command writes the same bytes, and a repo does not depend on
how many came before it. Documents are written as text, not through json.dumps, which
keeps generation fast: about 17 s of CPU per GB on one core.
"""

import json
import os
import random
import sys

SEVERITIES = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "UNKNOWN"]
TYPES = ["npm", "pip", "gomod", "pom", "dotnet-deps"]
MIN_BYTES, MAX_BYTES = 2_500_000, 3_500_000
WORDS = (
    "a crafted request allows remote attackers to cause a denial of service or execute "
    "arbitrary code via a buffer overflow in the parser when handling untrusted input "
    "because of missing bounds checks in the affected versions of the package"
).split()

VULN = (
    '{{"id":"{id}","package":"pkg-{pkg}","severity":"{sev}","installed_version":"{iv}",'
    '"fixed_version":{fixed},"cvss_score":{cvss},"title":"{title}","description":"{desc}",'
    '"published_date":"20{year}-0{month}-1{day}T00:00:00Z","age_days":{age},'
    '"fix_available":{fa},"target":"{ty}/lockfile","target_type":"{ty}",'
    '"references":["https://nvd.nist.gov/vuln/detail/{id}",'
    '"https://github.com/advisories/GHSA-{ghsa}"]}}'
)


def vulnerability(rng, repo, n):
    """One finding as JSON text and its severity index, fixed flag and id."""
    s = rng.randrange(5)
    fixed = rng.randrange(4) != 0
    year = 10 + rng.randrange(15)
    vid = f"CVE-20{year}-{repo:05d}{n:05d}"
    words = rng.sample(WORDS, 24)
    text = VULN.format(
        id=vid,
        pkg=rng.randrange(400),
        sev=SEVERITIES[s],
        iv=f"{rng.randrange(5)}.{rng.randrange(20)}.{rng.randrange(30)}",
        fixed='"9.9.9"' if fixed else "null",
        cvss="null" if s == 4 else f"{rng.randrange(100) / 10}",
        title=" ".join(words[:8]),
        desc=" ".join(words + words[:12]),
        year=year,
        month=1 + rng.randrange(9),
        day=rng.randrange(10),
        age=rng.randrange(2000),
        fa="true" if fixed else "false",
        ty=TYPES[rng.randrange(5)],
        ghsa=f"{rng.getrandbits(48):012x}",
    )
    return text, s, fixed, vid


def repo_documents(seed, index):
    """The scan and the ground truth of repo `index`, both as text."""
    rng = random.Random(seed * 1_000_003 + index)
    rid = f"repo-{index:05d}"
    budget = rng.randrange(MIN_BYTES, MAX_BYTES)
    parts, size, counts, fixable, ids = [], 0, [0] * 5, 0, []
    while size < budget:
        text, s, fixed, vid = vulnerability(rng, index, len(parts))
        parts.append(text)
        size += len(text) + 1
        counts[s] += 1
        fixable += fixed
        ids.append(vid)
    total = len(parts)
    summary = {
        "total_vulnerabilities": total,
        "critical_count": counts[0],
        "high_count": counts[1],
        "medium_count": counts[2],
        "low_count": counts[3],
        "unknown_count": counts[4],
        "fix_available_count": fixable,
        "targets_scanned": len(TYPES),
    }
    targets = [{"path": f"{t}/lockfile", "type": t} for t in TYPES]
    scan = (
        f'{{"id":"{rid}","summary":{json.dumps(summary)},"vulnerabilities":['
        + ",".join(parts)
        + f'],"targets":{json.dumps(targets)},'
        + '"sbom":{"format":"trivy-json","total_packages":400}}'
    )
    # Known CVEs: most are in the scan, one in ten is not (a miss the judges count).
    known = rng.sample(ids, min(20, total))
    known += [f"CVE-2099-{index:05d}{k:05d}" for k in range(len(known) // 10)]
    truth = {
        "id": rid,
        "expected": {
            "known_cves": known,
            "required_packages": [f"pkg-{rng.randrange(400)}" for _ in range(3)],
        },
    }
    return rid, scan, json.dumps(truth)


def main():
    args = sys.argv[1:]
    seed = 20261128
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit("usage: generate.py OUT_DIR GB [--seed N]")
    out, gb = args[0], float(args[1])
    target = int(gb * 1e9)
    os.makedirs(f"{out}/outputs", exist_ok=True)
    os.makedirs(f"{out}/expected", exist_ok=True)
    written, index = 0, 0
    while written < target:
        rid, scan, truth = repo_documents(seed, index)
        with open(f"{out}/outputs/{rid}.json", "w") as f:
            f.write(scan)
        with open(f"{out}/expected/{rid}.json", "w") as f:
            f.write(truth)
        written += len(scan) + len(truth)
        index += 1
    print(f"{index} repos, {written / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
