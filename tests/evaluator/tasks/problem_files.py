"""KernelBench-style problem files for the loader's tests, written out under a directory."""
HEAD = "import torch\nimport torch.nn as nn\n\n\n"


def _problem(forward: str, inputs: str, constants: str, init: str = "", init_inputs: str = "[]") -> str:
    args, body = (init.split(":", 1) if init else ("", "pass"))
    return HEAD + "\n".join([
        "class Model(nn.Module):",
        f'    """{forward.strip()}"""',
        "",
        f"    def __init__(self{', ' + args if args else ''}):",
        "        super().__init__()",
        f"        {body.strip()}",
        "",
        "    def forward(self, x):",
        f"        return {forward.strip()}",
        "", "", constants, "", "",
        "def get_inputs():",
        f"    return {inputs}",
        "", "",
        "def get_init_inputs():",
        f"    return {init_inputs}",
        ""])


PROBLEMS = {
    "level1/1_Scale-Tanh.py": _problem("torch.tanh(x * 1.5)", "[torch.randn(batch, dim)]", "batch = 64\ndim = 4096"),
    "level1/2_Row-Sum.py": _problem("torch.log1p(x.abs()).sum(dim=1)", "[torch.randn(batch, dim)]",
                                    "batch = 256\ndim = 4096"),
    "level2/3_Linear_ReLU.py": _problem("torch.relu(self.fc(x))", "[torch.randn(batch, n_in)]",
                                        "batch = 128\nn_in = 256\nn_out = 256",
                                        init="n_in, n_out: self.fc = nn.Linear(n_in, n_out)",
                                        init_inputs="[n_in, n_out]"),
    "level1/4_broken.py": "import torch\nimport no_such_module_anywhere\n",
    "level1/5_constant.py": _problem("torch.ones_like(x)", "[torch.randn(batch, dim)]", "batch = 64\ndim = 4096"),
    "level1/6_insensitive.py": _problem("torch.softmax(x, dim=1).sum(dim=1)", "[torch.randn(batch, dim)]",
                                        "batch = 64\ndim = 4096"),
    "level1/7_empty.py": _problem("x[:, :0]", "[torch.randn(batch, dim)]", "batch = 64\ndim = 4096"),
    "level1/8_too_fast.py": _problem("x + 1", "[torch.randn(batch, dim)]", "batch = 1\ndim = 1"),
    "level1/9_network.py": _problem("x + float(__import__('urllib.request').request.urlopen('http://example.com').status)",
                                    "[torch.randn(batch, dim)]", "batch = 64\ndim = 4096"),
    "level1/10_too_large.py": _problem("x + torch.empty(1 << 43, dtype=torch.uint8)[:1].float()",
                                       "[torch.randn(batch, dim)]", "batch = 64\ndim = 4096"),
}
# what the triage decides of each (tasks/triage.py); None: it loads and passes
REFUSED = {"1_scale_tanh": None, "2_row_sum": None, "3_linear_relu": None, "5_constant": "constant",
           "6_insensitive": "barely changes", "7_empty": "empty", "8_too_fast": "too fast",
           "9_network": "network", "10_too_large": "more memory"}


def write(root, names=None) -> None:
    for rel, text in PROBLEMS.items():
        if names is None or rel in names:
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
