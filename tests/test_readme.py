"""The README's Python examples run as written: the layout algebra on the CPU, the GEMMs on a GPU."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_a_cpu_and_a_gpu_example() -> None:
    blocks = _blocks()
    assert len(blocks) == 2 and "cuda" not in blocks[0] and 'device="cuda"' in blocks[1]


def test_readme_layout_example_runs(capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("numpy")
    ns: dict = {}
    exec(compile(_blocks()[0], "README.md", "exec"), ns)
    tc = ns["tc"]
    L = ns["L"]
    assert (L(17), L(1, 2), L(1, (0, 1))) == (18, 18, 18)                 # as the comment says
    assert str(tc.composition(tc.Layout((6, 2), (8, 2)), tc.Layout((4, 3), (3, 1)))) == "((2,2),3):((24,2),8)"
    assert str(tc.zipped_divide(tc.Layout((6, 8), (8, 1)), (3, 4))) == "((3,4),(2,2)):((8,1),(24,4))"
    assert tuple(ns["tAgA"].shape)[:2] == (4, 1)
    assert "32" in capsys.readouterr().out                               # the printed tile's first row


@pytest.mark.gpu
def test_gpu_readme_gemm_example_runs() -> None:
    torch = pytest.importorskip("torch")
    ns: dict = {}
    exec(compile(_blocks()[1], "README.md", "exec"), ns)
    A, B, bias, D, x, pw, y = (ns[k] for k in ("A", "B", "bias", "D", "x", "pw", "y"))
    ref = torch.nn.functional.gelu(A.double() @ B.double() + bias.double())
    assert D.shape == (4096, 11008) and float((D.double() - ref).norm() / ref.norm()) < 1e-2
    ref = x.double() @ pw.dequantize(torch.float64).to(x.device)
    assert y.shape == (8, 11008) and y.dtype == torch.bfloat16
    assert float((y.double() - ref).norm() / ref.norm()) < 1e-2
