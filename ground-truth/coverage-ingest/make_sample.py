#!/usr/bin/env python3
"""Writes the coverage-ingest sample: tool outputs, per-scenario ground truth, the
cross-format equivalence file and an evaluation-results file. Run it after any edit;
it rewrites every JSON file of this folder from the tables below."""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))


def rec(path, total, covered, btotal=None, bcovered=None, pct=None, bpct=None, missed=None):
    """One file record; percentages from the counts (2 dp) unless given."""
    if pct is None:
        pct = round(covered / total * 100, 2) if total else None
    if bpct is None and btotal:
        bpct = round(bcovered / btotal * 100, 2)
    return {
        "relative_path": path,
        "lines_total": total,
        "lines_covered": covered,
        "lines_missed": total - covered if missed is None else missed,
        "line_coverage_pct": pct,
        "branches_total": btotal,
        "branches_covered": bcovered,
        "branch_coverage_pct": bpct,
    }


# (format, scenario, description, truth files)
TRUTH = [
    ("lcov", "basic", "One Python module, three of twelve lines uncovered", [
        rec("src/app.py", 12, 9)]),
    ("cobertura", "basic", "The same module as a Cobertura report", [
        rec("src/app.py", 12, 9)]),
    ("jacoco", "basic", "The same module in Java, one class", [
        rec("src/App.java", 12, 9)]),
    ("istanbul", "basic", "The same module in JavaScript", [
        rec("src/app.js", 12, 9)]),
    ("lcov", "services", "Four service modules spread over the tiers", [
        rec("src/billing/invoice.py", 40, 10),
        rec("src/billing/tax.py", 30, 6),
        rec("src/api/routes.py", 50, 45),
        rec("src/api/auth.py", 200, 149)]),
    ("cobertura", "services", "The services report as Cobertura XML", [
        rec("src/billing/invoice.py", 40, 10),
        rec("src/billing/tax.py", 30, 6),
        rec("src/api/routes.py", 50, 45),
        rec("src/api/auth.py", 200, 149)]),
    ("cobertura", "branches", "Branch counters in a Cobertura report", [
        rec("src/rules/discount.py", 18, 15, 6, 3)]),
    ("jacoco", "counters", "Line and branch counters of two Java classes", [
        rec("src/com/shop/Cart.java", 20, 16, 10, 7),
        rec("src/com/shop/Checkout.java", 35, 28, 12, 12)]),
    ("istanbul", "edge", "An empty entry point and an untested legacy module", [
        rec("src/index.js", 0, 0),
        rec("src/legacy/old-widgets.js", 10, 0)]),
]

# Tool outputs: (file stem, format, source_file, files); each file a truth record or a
# deliberately wrong one.
OUTPUTS = [
    ("lcov-basic", "lcov", "fixtures/lcov/basic.info", [rec("src/app.py", 12, 9)]),
    ("cobertura-basic", "cobertura", "fixtures/cobertura/basic.xml", [rec("src/app.py", 12, 9)]),
    # JaCoCo: one covered line lost (LINE counter read from the method, not the class).
    ("jacoco-basic", "jacoco", "fixtures/jacoco/basic.xml", [rec("src/App.java", 12, 8)]),
    ("istanbul-basic", "istanbul", "fixtures/istanbul/basic.json", [rec("src/app.js", 12, 9)]),
    # lcov services: auth.py gains one line (74.5 -> 75.0, across the MEDIUM/LOW boundary).
    ("lcov-services", "lcov", "fixtures/lcov/services.info", [
        rec("src/billing/invoice.py", 40, 10),
        rec("src/billing/tax.py", 30, 6),
        rec("src/api/routes.py", 50, 45),
        rec("src/api/auth.py", 200, 150)]),
    # Cobertura services: an absolute path and a Windows separator; tax.py's hits read
    # from the wrong column (6 -> 16 covered, CRITICAL -> MEDIUM).
    ("cobertura-services", "cobertura", "fixtures/cobertura/services.xml", [
        rec("src/billing\\invoice.py", 40, 10),
        rec("src/billing/tax.py", 30, 16),
        rec("/src/api/routes.py", 50, 45),
        rec("src/api/auth.py", 200, 149)]),
    # JaCoCo counters: Checkout.java dropped, a package-info file that is not in the
    # truth added, and Cart.java's missed count left stale.
    ("jacoco-counters", "jacoco", "fixtures/jacoco/counters.xml", [
        rec("src/com/shop/Cart.java", 20, 16, 10, 7, missed=5),
        rec("src/com/shop/package-info.java", 1, 0)]),
    # Istanbul edge: the empty file gets a percentage, the untested one loses it.
    ("istanbul-edge", "istanbul", "fixtures/istanbul/edge.json", [
        rec("src/index.js", 0, 0, pct=0.0),
        rec("src/legacy/old-widgets.js", 10, 0, pct=None)]),
    # A nightly lcov report with no scenario in the ground truth.
    ("lcov-nightly", "lcov", "reports/nightly.info", [
        rec("src/app.py", 12, 11),
        rec("src/jobs/cleanup.py", 25, 5)]),
]
# The istanbul edge output's old-widgets record must stay without a percentage.
OUTPUTS[7][3][1]["line_coverage_pct"] = None

EQUIVALENCE = {
    "metadata": {"format": "cross-format", "scenario": "equivalence",
                 "description": "Invented equivalence cases for the sample outputs"},
    "test_cases": [
        {"name": "basic_module_equivalence",
         "description": "The basic module parses to the same counts in every format",
         "scenarios": {"lcov": "basic.info", "cobertura": "basic.xml",
                       "jacoco": "basic.xml", "istanbul": "basic.json"},
         "expected_common": {"lines_total": 12, "lines_covered": 9, "lines_missed": 3,
                             "line_coverage_pct": 75.0}},
        {"name": "services_file_count",
         "description": "Both services reports list four files",
         "scenarios": {"lcov": "services.info", "cobertura": "services.xml"},
         "expected_common": {"file_count": 4}},
        {"name": "branch_counters",
         "description": "Branch counters survive parsing where a format has them",
         "scenarios": {"cobertura": "branches.xml", "jacoco": "counters.xml"},
         "expected_common": {"branches_total": 10, "branches_covered": 7}},
        {"name": "untested_file",
         "description": "A file without any covered line reads 0% everywhere",
         "expected_common": {"lines_covered": 0, "line_coverage_pct": 0.0}},
    ],
    "validation_rules": [
        {"rule": "path_normalization", "description": "Paths are relative to the repository root",
         "check": "not path.startswith('/')"},
        {"rule": "posix_separators", "description": "Paths use forward slashes",
         "check": "'\\\\' not in path"},
        {"rule": "invariant_covered_le_total", "description": "Covered never exceeds total",
         "check": "lines_covered <= lines_total"},
        {"rule": "invariant_missed_equals_diff", "description": "Missed is total minus covered",
         "check": "lines_missed == lines_total - lines_covered"},
        {"rule": "percentage_range", "description": "A percentage is null or within 0-100",
         "check": "line_coverage_pct is None or 0 <= line_coverage_pct <= 100"},
    ],
}


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    for fmt, scenario, desc, files in TRUTH:
        write(os.path.join(HERE, "expected", f"{fmt}-{scenario}.json"), {
            "metadata": {"format": fmt, "scenario": scenario, "description": desc,
                         "created": "2026-03-02"},
            "expected": {"file_count": len(files), "files": files},
        })
    for i, (stem, fmt, source, files) in enumerate(OUTPUTS):
        scored = [f["line_coverage_pct"] for f in files if f["line_coverage_pct"] is not None]
        write(os.path.join(HERE, "outputs", f"{stem}.json"), {
            "metadata": {"tool_name": "coverage-ingest", "tool_version": "1.2.0",
                         "run_id": f"sample-run-{i + 1:02d}", "repo_id": "shop-monorepo",
                         "branch": "main", "commit": "3f9c2e7" + "0" * 33,
                         "timestamp": "2026-03-02T09:15:00+00:00", "schema_version": "1.0.0"},
            "data": {"tool": "coverage-ingest", "tool_version": "1.2.0",
                     "source_format": fmt, "source_file": source,
                     "file_count": len(files), "files": files,
                     "summary": {"total_files": len(files),
                                 "overall_line_coverage_pct": round(sum(scored) / len(scored), 2) if scored else None}},
        })
    write(os.path.join(HERE, "equivalence.json"), EQUIVALENCE)
    write(os.path.join(HERE, "evaluation_results.json"),
          {"tool": "coverage-ingest", "passed": 41, "total": 44, "score": 93.2})


main()
