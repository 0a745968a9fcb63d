#!/usr/bin/env python3
"""Writes the pmd-cpd sample: per-language ground truth and three CPD runs (python, java,
and a nightly Kotlin run without ground truth). Summaries are derived from the files and
clones below; the faults listed in README.md are part of the tables. Run it after any edit."""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))


def plain(lo, hi, plo, phi, desc, **extra):
    d = {"expected_clone_count": lo, "expected_clone_range": [lo, hi],
         "duplication_percentage_range": [plo, phi], "description": desc}
    d.update(extra)
    return d


def semantic(flag, desc):
    return {"expected_clones_standard": {"count": 0, "count_range": [0, 1]},
            "expected_clones_semantic": {"count": 2, "count_range": [1, 3], flag: True},
            "description": desc}


def truth(lang, ext, names):
    u, h, a, b, si, sl = names
    return {
        "language": lang, "version": "1.0",
        "description": f"Invented {lang} fixtures for clone detection",
        "files": {
            u + ext: plain(0, 0, 0, 5, "Helpers with no repeated logic"),
            h + ext: plain(2, 5, 30, 60, "A report builder that repeats its formatting blocks"),
            a + ext: plain(0, 3, 0, 50, "Order totals, first copy", is_cross_file_source=True, cross_file_partner=b + ext),
            b + ext: plain(0, 3, 0, 50, "Order totals, second copy", is_cross_file_source=False, cross_file_partner=a + ext),
            si + ext: semantic("requires_ignore_identifiers", "The same loops with renamed variables"),
            sl + ext: semantic("requires_ignore_literals", "The same checks with other constants"),
        },
        "cross_file_expectations": {
            "orders_pair": {"expected_cross_file_clones": 3, "expected_cross_file_clone_range": [2, 5],
                            "files": [a + ext, b + ext], "description": "Order total calculation copied between modules"}},
    }


def occ(f, s, e, full=True):
    o = {"file": f, "line_start": s, "line_end": e}
    if full:
        o.update({"column_start": 1, "column_end": 40})
    return o


def clone(cid, lines, tokens, frag, occs):
    c = {"clone_id": cid, "lines": lines}
    if tokens is not None:
        c["tokens"] = tokens
    c["code_fragment"] = frag
    c["occurrences"] = occs
    return c


def fileinfo(path, total, dup, blocks, lang):
    return {"path": path, "total_lines": total, "duplicate_lines": dup, "duplicate_blocks": blocks,
            "duplication_percentage": round(dup / total * 100, 2) if total else 0.0, "language": lang}


def run(stem, lang, config, files, clones, meta_extra=None):
    total = sum(f["total_lines"] for f in files)
    dup = sum(f["duplicate_lines"] for f in files)
    cross = sum(1 for c in clones if len({o["file"] for o in c["occurrences"]}) > 1)
    data = {"tool": "pmd-cpd", "config": config, "elapsed_seconds": 2.4,
            "summary": {"total_files": len(files), "total_clones": len(clones),
                        "duplication_percentage": round(dup / total * 100, 2) if total else 0.0,
                        "cross_file_clones": cross},
            "files": files, "duplications": clones}
    meta = {"tool_name": "pmd-cpd", "tool_version": "7.2.0", "run_id": f"sample-{stem}",
            "repo_id": "fixture-repo", "branch": "main", "commit": "5be0c41" + "0" * 33,
            "timestamp": "2026-03-05T08:00:00+00:00", "schema_version": "1.0.0"}
    meta.update(meta_extra or {})
    return {"metadata": meta, "data": data}


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


PY = ("unique_helpers", "report_builder", "orders_a", "orders_b", "semantic_renamed", "semantic_constants")
JV = ("UniqueHelpers", "ReportBuilder", "OrdersA", "OrdersB", "SemanticRenamed", "SemanticConstants")


def main():
    write(os.path.join(HERE, "expected", "python.json"), truth("python", ".py", PY))
    write(os.path.join(HERE, "expected", "java.json"), truth("java", ".java", JV))

    # Python: semantic identifiers on; every count in range.
    p = "fixtures/python/"
    files = [fileinfo(p + "unique_helpers.py", 80, 0, 0, "python"),
             fileinfo(p + "report_builder.py", 120, 54, 3, "python"),
             fileinfo(p + "orders_a.py", 90, 36, 3, "python"),
             fileinfo(p + "orders_b.py", 95, 36, 3, "python"),
             fileinfo(p + "semantic_renamed.py", 70, 24, 2, "python"),
             fileinfo(p + "semantic_constants.py", 66, 0, 0, "python")]
    clones = [
        clone("CPD-0001", 18, 96, "def format_row(row):\n    cells = [str(c) for c in row]\n    return ' | '.join(cells)",
              [occ(p + "report_builder.py", 12, 29), occ(p + "report_builder.py", 48, 65)]),
        clone("CPD-0002", 18, 90, "def format_header(cols):\n    return ' | '.join(c.upper() for c in cols)",
              [occ(p + "report_builder.py", 70, 87), occ(p + "report_builder.py", 95, 112)]),
        clone("CPD-0003", 12, 70, "def add_totals(rows):\n    return sum(r.amount for r in rows)",
              [occ(p + "report_builder.py", 1, 10), occ(p + "report_builder.py", 114, 120)]),
        clone("CPD-0004", 12, 64, "def order_total(order):\n    total = 0\n    for line in order.lines:\n        total += line.qty * line.price",
              [occ(p + "orders_a.py", 5, 16), occ(p + "orders_b.py", 8, 19)]),
        clone("CPD-0005", 12, 60, "def apply_discount(total, pct):\n    return total * (1 - pct / 100)",
              [occ(p + "orders_a.py", 30, 41), occ(p + "orders_b.py", 33, 44)]),
        clone("CPD-0006", 12, 58, "def tax(total, rate):\n    return round(total * rate, 2)",
              [occ(p + "orders_a.py", 60, 71), occ(p + "orders_b.py", 70, 81)]),
        clone("CPD-0007", 12, 55, "for idx, value in enumerate(values):\n    acc[idx] = value * factor",
              [occ(p + "semantic_renamed.py", 3, 14), occ(p + "semantic_renamed.py", 40, 51)]),
    ]
    write(os.path.join(HERE, "outputs", "python.json"),
          run("python", "python", {"min_tokens": 50, "ignore_identifiers": True, "ignore_literals": False}, files, clones))

    # Java: standard mode. UniqueHelpers shows a clone, ReportBuilder is under-reported,
    # the order pair shares only one clone, one clone lacks tokens and an empty fragment,
    # one occurrence lacks line_end.
    j = "src/main/java/com/example/"
    files = [fileinfo(j + "UniqueHelpers.java", 60, 10, 1, "java"),
             fileinfo(j + "ReportBuilder.java", 150, 30, 1, "java"),
             fileinfo(j + "OrdersA.java", 110, 14, 1, "java"),
             fileinfo(j + "OrdersB.java", 115, 14, 1, "java"),
             fileinfo(j + "SemanticRenamed.java", 75, 0, 0, "java"),
             fileinfo(j + "SemanticConstants.java", 72, 0, 0, "java")]
    clones = [
        clone("CPD-0001", 10, 52, "", [occ(j + "UniqueHelpers.java", 20, 29), occ(j + "ReportBuilder.java", 100, 109)]),
        clone("CPD-0002", 20, None, "String line = String.format(\"%-20s %10s\", name, amount);",
              [occ(j + "ReportBuilder.java", 10, 29), occ(j + "ReportBuilder.java", 60, 79, full=False)]),
        clone("CPD-0003", 14, 66, "BigDecimal total = lines.stream().map(OrderLine::amount).reduce(BigDecimal.ZERO, BigDecimal::add);",
              [occ(j + "OrdersA.java", 40, 53), occ(j + "OrdersB.java", 44, 57)]),
    ]
    # Standard mode still pairs up the constant-only variants in SemanticConstants.java.
    clones.append(clone("CPD-0004", 9, 51, "if (amount.compareTo(LIMIT_A) > 0) { return Tier.GOLD; }",
                        [occ(j + "SemanticConstants.java", 10, 18), occ(j + "SemanticConstants.java", 30, 38)]))
    clones.append(clone("CPD-0005", 9, 50, "if (amount.compareTo(LIMIT_B) > 0) { return Tier.SILVER; }",
                        [occ(j + "SemanticConstants.java", 40, 48), occ(j + "SemanticConstants.java", 55, 63)]))
    files[5] = fileinfo(j + "SemanticConstants.java", 72, 36, 2, "java")
    del clones[1]["occurrences"][1]["line_end"]
    write(os.path.join(HERE, "outputs", "java.json"),
          run("java", "java", {"min_tokens": 50, "ignore_identifiers": False, "ignore_literals": False}, files, clones))

    # A nightly Kotlin run with no ground truth; settings without min_tokens.
    k = "app/src/main/kotlin/"
    files = [fileinfo(k + "Checkout.kt", 200, 40, 2, "kotlin"), fileinfo(k + "Cart.kt", 140, 20, 1, "kotlin")]
    clones = [clone("CPD-0001", 20, 110, "val subtotal = items.sumOf { it.price * it.qty }",
                    [occ(k + "Checkout.kt", 30, 49), occ(k + "Cart.kt", 12, 31)]),
              clone("CPD-0002", 20, 104, "require(items.isNotEmpty()) { \"empty cart\" }",
                    [occ(k + "Checkout.kt", 90, 109), occ(k + "Checkout.kt", 150, 169)])]
    # Written by an older wrapper in the bare shape: no envelope, run facts in the
    # document's own `metadata` (with the CPD version), and no `config`.
    doc = run("nightly-kotlin", "kotlin", {}, files, clones)["data"]
    del doc["config"], doc["elapsed_seconds"]
    doc = {"metadata": {"version": "0.9.1", "cpd_version": "7.2.0",
                        "analyzed_at": "2026-03-05T02:00:00+00:00", "elapsed_seconds": 3.1,
                        "ignore_identifiers": False, "ignore_literals": False}, **doc}
    write(os.path.join(HERE, "outputs", "nightly-kotlin.json"), doc)


main()
