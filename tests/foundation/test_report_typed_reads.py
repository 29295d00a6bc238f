"""The site reads a stored report through its typed value only (Submission.typed_report, an
evaluator.Report), never by string key: no `x.report.get(...)`, `report.get(...)`,
`report["..."]` or `(x.report or {})` in leaderboard/ outside its migrations, which keep the code
of their day. Read from the source with ast; the check is tried on planted reads first, so that a
checker that finds nothing cannot pass."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _is_report(node: ast.AST) -> bool:
    """`report` or `<anything>.report`."""
    return (isinstance(node, ast.Name) and node.id == "report") or \
        (isinstance(node, ast.Attribute) and node.attr == "report")


def string_key_reads(source: str) -> list[int]:
    """The lines that read a report by string key."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and _is_report(node.func.value):
            lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _is_report(node.value) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            lines.append(node.lineno)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _is_report(node.values[0]) \
                and any(isinstance(v, ast.Dict) and not v.keys for v in node.values[1:]):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_check_finds_each_kind_of_read():
    planted = ("a = sub.report.get('shapes')\n"
               "b = (submission.report or {}).get('tests')\n"
               "c = report['verdict']\n"
               "d = report.get('gpu_name')\n"
               "e = entry.report['shapes']\n")
    assert string_key_reads(planted) == [1, 2, 3, 4, 5]
    typed = ("r = sub.typed_report\n"
             "a = r.shapes if r else ()\n"
             "b = row.get('shape')\n"
             "c = data['report']\n"
             "d = sub.report is None\n")
    assert string_key_reads(typed) == []


def test_no_site_module_reads_the_report_by_string_key():
    found = []
    for path in sorted((ROOT / "leaderboard").rglob("*.py")):
        if "migrations" in path.relative_to(ROOT).parts:
            continue
        found += [f"{path.relative_to(ROOT)}:{line}" for line in string_key_reads(path.read_text())]
    assert found == [], "read these through Submission.typed_report (evaluator.Report): " + ", ".join(found)
