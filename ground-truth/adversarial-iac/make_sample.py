#!/usr/bin/env python3
"""Writes the bundled sample run: invented red-team/blue-team games in the record
shape of an adversarial-IaC `progress.json`, and the `summary.json` such a run
publishes beside it.

Every game is listed below as (blue model, condition, difficulty, claimed,
confirmed, tp, tool-validated FPs, other FPs). The scoring fields are derived
from those counts with the framework's conventions, so the suite can recover the
counts from the stored ratios exactly as it does for real runs:

- ground truth is the tool-confirmed part of the manifest (`total_confirmed`),
- precision = tp / (tp + fp), recall = tp / confirmed, F1 = 2PR / (P + R),
  evasion = fn / confirmed; each 0.0 when its denominator is 0.

Run it from anywhere; it writes next to itself. Needs only the standard library.
"""

import json
import math
from pathlib import Path

RED = "example.red-author-v1"
MODELS = {
    "large": "example.blue-large-v2",
    "small": "example.blue-small-v1",
    "open": "example.open-detector-70b",
}
SCENARIOS = [
    "S3 bucket for audit logs",
    "RDS instance for an order service",
    "EKS cluster with private endpoint",
    "Lambda function behind an API gateway",
    "VPC with public and private subnets",
    "IAM roles for a CI pipeline",
]

# (model, condition, difficulty, claimed, confirmed, tp, tool_fps, true_fps)
GAMES = [
    ("large", "database", "easy", 3, 3, 3, 0, 1),
    ("large", "database", "medium", 4, 4, 4, 0, 0),
    ("large", "database", "hard", 5, 5, 5, 0, 0),
    ("large", "novel", "easy", 3, 3, 3, 1, 0),
    ("large", "novel", "medium", 3, 3, 3, 0, 1),
    ("large", "novel", "hard", 4, 4, 3, 0, 0),
    ("small", "database", "easy", 3, 3, 3, 0, 1),
    ("small", "database", "medium", 4, 4, 4, 0, 1),
    ("small", "database", "hard", 5, 4, 3, 0, 1),
    ("small", "novel", "easy", 3, 3, 2, 0, 1),
    ("small", "novel", "medium", 4, 2, 2, 0, 1),
    # Nothing the red team claimed was confirmed: empty ground truth, recall and
    # evasion both 0.0 by the framework's rule.
    ("small", "novel", "hard", 5, 0, 0, 1, 1),
    ("open", "database", "easy", 3, 3, 3, 0, 2),
    # The blue team reported nothing: precision 0.0.
    ("open", "database", "medium", 4, 4, 0, 0, 0),
    ("open", "database", "hard", 5, 5, 5, 0, 1),
    ("open", "novel", "easy", 3, 3, 3, 0, 1),
    ("open", "novel", "medium", 4, 3, 2, 0, 1),
    ("open", "novel", "hard", 5, 4, 4, 0, 1),
]
FAILED = [("open", "novel", "hard", "blue team reply was not valid JSON")]


def ratio(a, b):
    return a / b if b else 0.0


def game_record(i, model, condition, difficulty, claimed, confirmed, tp, tool_fps, true_fps):
    fp = tool_fps + true_fps
    p, r = ratio(tp, tp + fp), ratio(tp, confirmed)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    evasion = ratio(confirmed - tp, confirmed)
    accuracy = ratio(confirmed, claimed)
    gid = f"G-{i:04d}"
    return {
        "game_id": gid,
        "status": "completed",
        "config": {
            "game_id": gid,
            "scenario": SCENARIOS[i % len(SCENARIOS)],
            "difficulty": difficulty,
            "red_model": RED,
            "blue_model": MODELS[model],
            "language": "terraform",
            "cloud_provider": "aws",
            "repetition": 1,
            "experiment_type": "sample",
            "condition": condition,
            "red_vuln_source": condition,
            "use_llm_judge": True,
            "use_consensus_judge": False,
            "use_trivy": True,
            "use_checkov": True,
        },
        "scoring": {
            "precision": p,
            "adjusted_precision": ratio(tp, tp + true_fps),
            "recall": r,
            "f1_score": f1,
            "evasion_rate": evasion,
            "tool_validated_fps": tool_fps,
            "true_false_positives": true_fps,
        },
        "manifest_validation": {
            "manifest_accuracy": accuracy,
            "total_claimed": claimed,
            "total_confirmed": confirmed,
            "hallucination_rate": 1.0 - accuracy if claimed else 0.0,
            "adjusted_recall": r if confirmed else None,
            "phantom_concordance": 0.0,
        },
        "vulnerabilities_injected": claimed,
        "findings_detected": tp + fp,
        "duration_seconds": 60.0 + 7 * i,
        "timestamp": f"2026-01-15T10:{i:02d}:00",
        "output_dir": f"G-sample-{i:04d}",
    }


def running(values):
    total = 0.0
    for v in values:
        total += v
    return total


def block(games):
    """Sums and means with running totals, as the framework's summary does."""
    keys = [("precision", "precision"), ("recall", "recall"), ("f1", "f1_score"), ("evasion", "evasion_rate")]
    out = {"count": len(games)}
    for short, long in keys:
        out[short] = running(g["scoring"][long] for g in games)
    for short, _ in keys:
        out["avg_" + short] = out[short] / len(games)
    return out


def grouped(games, key):
    groups = {}
    for g in games:
        groups.setdefault(key(g), []).append(g)
    return {k: block(v) for k, v in groups.items()}


def main():
    here = Path(__file__).resolve().parent / "sample"
    games = [game_record(i + 1, *row) for i, row in enumerate(GAMES)]
    failures = [
        {
            "game_id": f"G-{len(GAMES) + 1 + j:04d}",
            "status": "failed",
            "config": {"blue_model": MODELS[m], "condition": c, "difficulty": d},
            "error": err,
        }
        for j, (m, c, d, err) in enumerate(FAILED)
    ]
    progress = {
        "experiment_id": "sample",
        "completed_games": len(games),
        "failed_games": len(failures),
        "results": games,
        "failures": failures,
        "last_updated": "2026-01-15T11:00:00",
    }
    metrics = {}
    for long in ["precision", "recall", "f1_score", "evasion_rate"]:
        xs = [g["scoring"][long] for g in games]
        mean = math.fsum(xs) / len(xs)
        metrics["avg_" + long] = mean
        metrics["std_" + long] = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    metrics["total_vulnerabilities"] = sum(g["vulnerabilities_injected"] for g in games)
    metrics["total_findings"] = sum(g["findings_detected"] for g in games)
    summary = {
        "experiment_id": "sample",
        "total_games": len(games) + len(failures),
        "completed_games": len(games),
        "failed_games": len(failures),
        "metrics": metrics,
        "by_difficulty": grouped(games, lambda g: g["config"]["difficulty"]),
        "by_condition": grouped(games, lambda g: g["config"]["condition"]),
        "by_vuln_source": grouped(games, lambda g: g["config"]["red_vuln_source"]),
        "completed_at": "2026-01-15T11:00:00",
    }
    here.mkdir(exist_ok=True)
    (here / "progress.json").write_text(json.dumps(progress, indent=2) + "\n")
    (here / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
