#!/usr/bin/env python3
"""Writes the dependensee sample: tool outputs and ground truth for five invented .NET
solutions. Graph nodes, edges and summary counts are derived from the project tables, then
the deliberate faults listed in README.md are applied. Run it after any edit."""
import copy, json, os

HERE = os.path.dirname(os.path.abspath(__file__))


def proj(name, path, fw, refs=(), pkgs=()):
    return {"name": name, "path": path, "target_framework": fw,
            "project_references": list(refs),
            "package_references": [{"name": n, "version": v} for n, v in pkgs]}


def graph(projects):
    nodes, edges, seen = [], [], set()
    for p in projects:
        node = {"id": p["path"], "name": p["name"], "type": "project"}
        if p["target_framework"]:
            node["target_framework"] = p["target_framework"]
        nodes.append(node)
    for p in projects:
        for r in p["project_references"]:
            edges.append({"source": p["path"], "target": r, "type": "project_reference"})
        for k in p["package_references"]:
            nid = "nuget:" + k["name"]
            if nid not in seen:
                seen.add(nid)
                nodes.append({"id": nid, "name": k["name"], "type": "package", "version": k["version"]})
            edges.append({"source": p["path"], "target": nid, "type": "package_reference"})
    return {"nodes": nodes, "edges": edges}


SOLUTIONS = {
    "layered-api": ("Four-layer web API with a test project", [
        proj("Orders.Api", "src/Orders.Api/Orders.Api.csproj", "net8.0",
             ["src/Orders.Domain/Orders.Domain.csproj", "src/Orders.Infrastructure/Orders.Infrastructure.csproj"],
             [("Swashbuckle.AspNetCore", "6.5.0"), ("Serilog.AspNetCore", "8.0.1")]),
        proj("Orders.Domain", "src/Orders.Domain/Orders.Domain.csproj", "net8.0", [], [("FluentValidation", "11.9.0")]),
        proj("Orders.Infrastructure", "src/Orders.Infrastructure/Orders.Infrastructure.csproj", "net8.0",
             ["src/Orders.Domain/Orders.Domain.csproj"],
             [("Microsoft.EntityFrameworkCore", "8.0.4"), ("Npgsql.EntityFrameworkCore.PostgreSQL", "8.0.2")]),
        proj("Orders.Api.Tests", "tests/Orders.Api.Tests/Orders.Api.Tests.csproj", "net8.0",
             ["src/Orders.Api/Orders.Api.csproj"], [("xunit", "2.7.0"), ("FluentValidation", "11.9.0")]),
    ], []),
    "cycle-trio": ("Three finance services that reference each other in a loop", [
        proj("Billing", "src/Billing/Billing.csproj", "net6.0", ["src/Ledger/Ledger.csproj"], [("Dapper", "2.1.28")]),
        proj("Ledger", "src/Ledger/Ledger.csproj", "net6.0", ["src/Reporting/Reporting.csproj"], [("NodaTime", "3.1.11")]),
        proj("Reporting", "src/Reporting/Reporting.csproj", "net6.0", ["src/Billing/Billing.csproj"], [("ClosedXML", "0.102.2")]),
    ], [["Billing", "Ledger", "Reporting", "Billing"]]),
    "legacy-monolith": ("A .NET Framework monolith with an F# pricing library and a VB.NET report module", [
        proj("Shop.Web", "Shop.Web/Shop.Web.csproj", "net48",
             ["Shop.Core/Shop.Core.csproj", "Shop.Pricing/Shop.Pricing.fsproj"],
             [("Newtonsoft.Json", "13.0.3"), ("log4net", "2.0.15")]),
        proj("Shop.Core", "Shop.Core/Shop.Core.csproj", "net48", [], [("Newtonsoft.Json", "13.0.3")]),
        proj("Shop.Pricing", "Shop.Pricing/Shop.Pricing.fsproj", "net48", ["Shop.Core/Shop.Core.csproj"], [("FSharp.Core", "8.0.200")]),
        proj("Shop.Reports", "Shop.Reports/Shop.Reports.vbproj", "net48", ["Shop.Core/Shop.Core.csproj"], []),
    ], []),
    "empty-solution": ("A solution file with no projects yet", [], []),
}

# Solutions the tool ran on without ground truth.
UNJUDGED = {
    "plugin-host": [
        proj("PluginHost", "src/PluginHost/PluginHost.csproj", "net7.0", ["src/PluginHost.Abstractions/PluginHost.Abstractions.csproj"],
             [("McMaster.NETCore.Plugins", "1.4.0"), ("Microsoft.Extensions.Hosting", "7.0.1")]),
        proj("PluginHost.Abstractions", "src/PluginHost.Abstractions/PluginHost.Abstractions.csproj", "netstandard2.0", [], []),
    ],
}


def summary(projects, cycles):
    return {"project_count": len(projects),
            "package_count": sum(len(p["package_references"]) for p in projects),
            "reference_count": sum(len(p["project_references"]) for p in projects),
            "circular_dependency_count": len(cycles)}


def envelope(stem, projects, g, cycles, summ):
    return {"metadata": {"tool_name": "dependensee", "tool_version": "2.2.0",
                         "run_id": f"sample-{stem}", "repo_id": stem, "branch": "main",
                         "commit": "9d41b7c" + "0" * 33, "timestamp": "2026-03-04T11:20:00+00:00",
                         "schema_version": "1.0.0"},
            "data": {"tool": "dependensee", "tool_version": "2.2.0", "projects": projects,
                     "dependency_graph": g, "circular_dependencies": cycles, "summary": summ}}


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def main():
    for sid, (desc, projects, cycles) in SOLUTIONS.items():
        g = graph(projects)
        exp = dict(summary(projects, cycles))
        write(os.path.join(HERE, "expected", f"{sid}.json"), {
            "id": sid, "description": desc, "repo_path": f"solutions/{sid}",
            "expected": {"project_count": exp["project_count"], "projects": projects,
                         "package_count": exp["package_count"], "reference_count": exp["reference_count"],
                         "circular_dependency_count": len(cycles), "circular_dependencies": cycles,
                         "graph_node_count": len(g["nodes"]), "graph_edge_count": len(g["edges"])}})

        out_projects = copy.deepcopy(projects)
        out_cycles = copy.deepcopy(cycles)
        if sid == "layered-api":
            # One package version not resolved (central package management).
            out_projects[3]["package_references"][0]["version"] = ""
        if sid == "cycle-trio":
            # The cycle is reported from another starting point, and Reporting's framework
            # is read from a stale Directory.Build.props (net5.0 instead of net6.0).
            out_cycles = [["Ledger", "Reporting", "Billing", "Ledger"]]
            out_projects[2]["target_framework"] = "net5.0"
        if sid == "legacy-monolith":
            # The web project's path is absolute (Windows), the VB.NET project is named
            # without its last letter and has no framework, the F# project's reference is
            # written relative to itself with backslashes, and a two-project cycle that does
            # not exist is reported, unclosed. Every count still matches the ground truth.
            out_projects[0]["path"] = "C:\\build\\shop\\Shop.Web\\Shop.Web.csproj"
            out_projects[3]["name"] = "Shop.Report"
            out_projects[3]["target_framework"] = ""
            out_projects[2]["project_references"] = ["..\\Shop.Core\\Shop.Core.csproj"]
            out_cycles = [["Shop.Core", "Shop.Pricing"]]
        g = graph(out_projects)
        summ = summary(out_projects, out_cycles)
        if sid == "legacy-monolith":
            summ["circular_dependency_count"] = 0   # the summary disagrees with the list
        write(os.path.join(HERE, "outputs", f"{sid}.json"), envelope(sid, out_projects, g, out_cycles, summ))

    for sid, projects in UNJUDGED.items():
        g = graph(projects)
        # A build-only package node that no edge reaches: an orphan.
        g["nodes"].append({"id": "nuget:Microsoft.SourceLink.GitHub", "name": "Microsoft.SourceLink.GitHub", "type": "package", "version": "8.0.0"})
        write(os.path.join(HERE, "outputs", f"{sid}.json"), envelope(sid, projects, g, [], summary(projects, [])))


main()
