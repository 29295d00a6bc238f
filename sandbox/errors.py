"""The one exception the sandbox raises on purpose."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (no engine, image missing, GPU busy, I/O error): not the
    submission's fault, so the caller may retry the evaluation later or elsewhere."""
