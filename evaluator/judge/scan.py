"""Source flags: constructs an honest kernel does not need and a cheating one does.

AST-based and standard library only. A finding flags the submission for review (`suspicious_source`);
it never rejects, because the runtime checks decide correctness and timing. Obfuscated code can
hide from a scan, which is why the runtime checks (thread count, wall clock, output checks) exist.
"""
from __future__ import annotations

import ast

from evaluator.contract import upload

MAX_FINDINGS = 8

# module (first component) -> why importing it is suspicious
MODULES = {
    "threading": "creates threads",
    "_thread": "creates threads",
    "multiprocessing": "creates processes",
    "concurrent": "creates threads or processes",
    "subprocess": "starts processes",
    "pty": "starts processes",
    "signal": "handles signals",
    "gc": "walks the interpreter's objects",
    "ctypes": "calls native memory and functions directly",
    "cffi": "calls native memory and functions directly",
    "inspect": "reads the caller's frames",
    "importlib": "imports modules dynamically",
    "builtins": "can replace builtins",
    "evaluator": "reaches into the evaluator",
    "operator": "reaches attributes by computed names (attrgetter)",
}

# dotted name -> why
ATTRIBUTES = {
    "sys._getframe": "reads the caller's frames",
    "sys._current_frames": "reads other threads' frames",
    "sys.modules": "reaches other modules (the evaluator's) through sys.modules",
    "sys.settrace": "traces the interpreter",
    "sys.setprofile": "traces the interpreter",
    "sys.addaudithook": "hooks the interpreter",
    "sys.meta_path": "hooks imports",
    "os.fork": "creates processes",
    "os.forkpty": "creates processes",
    "os.system": "starts processes",
    "os.popen": "starts processes",
    "os.posix_spawn": "starts processes",
    "os.posix_spawnp": "starts processes",
    "os.kill": "sends signals",
    "os.killpg": "sends signals",
    "os.setsid": "leaves its process group",
    "os._exit": "exits the process without finishing the evaluation",
}
ATTRIBUTE_PREFIXES = {"os.spawn": "starts processes", "os.exec": "replaces the process"}

# attribute names that create or switch CUDA streams
STREAM_ATTRS = {"Stream", "ExternalStream", "stream", "set_stream"}
DISPATCH_NAMES = {"__torch_function__", "__torch_dispatch__", "TorchDispatchMode", "TorchFunctionMode",
                  "_python_dispatch"}
BUILTIN_CALLS = {
    "__import__": "imports modules dynamically",
    "exec": "executes generated code",
    "eval": "executes generated code",
    "compile": "compiles generated code",
}
# builtins that reach objects by computed names: called directly they are judged by their
# arguments; bound to another name (`_get = getattr`) they hide every later use
REFLECTION = {"getattr", "setattr", "delattr", "hasattr", "vars", "globals", "locals", "__import__",
              "exec", "eval", "compile"}
# assignments under these are configuration, not patching
ALLOWED_ASSIGN_PREFIXES = ("os.environ", "torch.backends")


def scan(source: str) -> list[str]:
    """Human-readable findings, each naming its line; empty for a clean source."""
    try:
        tree = upload.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    visitor = _Scanner()
    visitor.visit(tree)
    findings = sorted(set(visitor.findings))
    out = [f"line {line}: {text}" for line, text in findings[:MAX_FINDINGS]]
    if len(findings) > MAX_FINDINGS:
        out.append(f"and {len(findings) - MAX_FINDINGS} more suspicious constructs")
    return out


def needs_gpu(source: str) -> bool:
    """True when the submission compiles CUDA source (torch.utils.cpp_extension / load_inline)."""
    return "cpp_extension" in source or "load_inline" in source


class _Scanner(ast.NodeVisitor):
    def __init__(self):
        self.findings: list[tuple[int, str]] = []
        self.imported: dict[str, str] = {}  # local name -> dotted origin

    def add(self, node: ast.AST, text: str) -> None:
        self.findings.append((getattr(node, "lineno", 0), text))

    # ---- imports -------------------------------------------------------------------------
    def visit_Import(self, node):
        for alias in node.names:
            self._module(node, alias.name)
            if alias.asname:
                self.imported[alias.asname] = alias.name
            else:
                root = alias.name.split(".")[0]
                self.imported[root] = root

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:
            self.add(node, "relative import (reaches outside the submission)")
        self._module(node, module)
        for alias in node.names:
            origin = f"{module}.{alias.name}" if module else alias.name
            if alias.name in DISPATCH_NAMES:
                self.add(node, f"imports {origin} (intercepts torch operations)")
            self._dotted(node, origin)
            self.imported[alias.asname or alias.name] = origin

    def _module(self, node, dotted: str) -> None:
        root = dotted.split(".")[0]
        if root in MODULES:
            self.add(node, f"imports {dotted} ({MODULES[root]})")
        if any(part in DISPATCH_NAMES for part in dotted.split(".")):
            self.add(node, f"imports {dotted} (intercepts torch operations)")

    # ---- names and attributes ------------------------------------------------------------
    def visit_Name(self, node):
        if (node.id in REFLECTION and node.id not in self.imported
                and not getattr(node, "_called", False)):
            self.add(node, f"uses {node.id} as a value (an alias hides what it reaches)")
        if node.id == "__builtins__":
            self.add(node, "uses __builtins__ (can replace builtins)")
        elif node.id in DISPATCH_NAMES:
            self.add(node, f"uses {node.id} (intercepts torch operations)")

    def visit_Attribute(self, node):
        dotted = self._resolve(node)
        if dotted:
            self._dotted(node, dotted)
            if node.attr in STREAM_ATTRS and dotted.startswith("torch."):
                self.add(node, f"uses {dotted} (work on a side stream)")
        if node.attr in DISPATCH_NAMES:
            self.add(node, f"uses {node.attr} (intercepts torch operations)")
        if node.attr in ("__dict__", "__globals__", "__closure__", "__code__", "__subclasses__",
                         "f_back", "f_locals", "f_globals", "gi_frame", "tb_frame"):
            self.add(node, f"uses .{node.attr} (reaches interpreter internals)")
        self.generic_visit(node)

    def _dotted(self, node, dotted: str) -> None:
        if dotted in ATTRIBUTES:
            self.add(node, f"uses {dotted} ({ATTRIBUTES[dotted]})")
        for prefix, why in ATTRIBUTE_PREFIXES.items():
            if dotted.startswith(prefix):
                self.add(node, f"uses {dotted} ({why})")

    def visit_Call(self, node):
        func = node.func
        func._called = True
        if isinstance(func, ast.Name):
            if func.id in BUILTIN_CALLS and func.id not in self.imported:
                self.add(node, f"calls {func.id}() ({BUILTIN_CALLS[func.id]})")
            if func.id in ("setattr", "delattr") and node.args:
                target = self._resolve(node.args[0])
                if target:
                    self.add(node, f"{func.id} on {target} (patches a module)")
            if (func.id in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) >= 2
                    and not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))
                    and func.id not in self.imported):
                self.add(node, f"{func.id} with a computed name (hides what it reaches)")
            if func.id in ("vars", "globals", "locals") and func.id not in self.imported:
                self.add(node, f"calls {func.id}() (reaches namespaces directly)")
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        for base in node.bases:
            dotted = self._resolve(base)
            if dotted == "torch.Tensor":
                self.add(node, f"class {node.name} subclasses torch.Tensor (lazy outputs)")
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node.name in DISPATCH_NAMES:
            self.add(node, f"defines {node.name} (intercepts torch operations)")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    # ---- assignments ---------------------------------------------------------------------
    def visit_Assign(self, node):
        for target in node.targets:
            self._patch_target(node, target)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._patch_target(node, node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._patch_target(node, node.target)
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._patch_target(node, target)
        self.generic_visit(node)

    def _patch_target(self, node, target) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._patch_target(node, t)
            return
        if isinstance(target, ast.Subscript):
            target = target.value
        if not isinstance(target, ast.Attribute):
            return
        dotted = self._resolve(target)
        if dotted and not dotted.startswith(ALLOWED_ASSIGN_PREFIXES):
            self.add(node, f"assigns {dotted} (patches a module)")

    def _resolve(self, node) -> str | None:
        """Dotted name of an attribute chain rooted at an imported name, else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call):  # e.g. torch.Tensor.__dict__ via vars(); keep the chain
            return None
        if not isinstance(node, ast.Name) or node.id not in self.imported:
            return None
        return ".".join([self.imported[node.id], *reversed(parts)])
