"""Opt-in check (not part of pytest): render the HTML report of a bundled example, open it in
headless Chromium with the network off, and save a screenshot and the rendered DOM.

    KB_BROWSER_TESTS=1 python scripts/html_screenshot.py [out_dir]

Exits 0 when the DOM shows the findings table, the decision path and at least one plot; 1 when
they are missing; 2 when KB_BROWSER_TESTS is not set or no Chromium is installed (said loudly,
never a silent pass).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    if os.environ.get("KB_BROWSER_TESTS") != "1":
        print("KB_BROWSER_TESTS=1 is not set: nothing checked", file=sys.stderr)
        return 2
    chrome = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                   if shutil.which(n)), None)
    if chrome is None:
        print("no Chromium on PATH (apt-get install chromium): nothing checked", file=sys.stderr)
        return 2
    out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="kb-html-"))
    out.mkdir(parents=True, exist_ok=True)
    html = out / "report.html"
    example = ROOT / "examples" / "facts" / "nccl.rank_desync_timeout.json"
    subprocess.run([sys.executable, "-m", "kb", "diagnose", "-f", str(example), "--format",
                    "html", "-o", str(html), "--force"], check=True, cwd=ROOT)
    flags = [chrome, "--headless", "--disable-gpu", "--no-sandbox", "--proxy-server=127.0.0.1:9",
             "--proxy-bypass-list=<-loopback>"]
    dom = subprocess.run(flags + ["--dump-dom", html.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    (out / "dom.html").write_text(dom)
    subprocess.run(flags + [f"--screenshot={out / 'report.png'}", "--window-size=1280,2400",
                            html.as_uri()], capture_output=True, timeout=120)
    ok = 'class="findings"' in dom and 'class="path-graph"' in dom and "<polyline" in dom or (
        'class="findings"' in dom and 'class="path-graph"' in dom and 'class="ranks"' in dom)
    print(f"{'ok' if ok else 'MISSING'}: {out / 'report.png'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
