"""The HTML report renders in real headless Chromium: screenshot taken, highlights and judgments in the DOM."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from hybrid.cli.report import main as report_main
from hybrid.cli.search import main as search_main

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (scripts/setup.sh does)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


@pytest.fixture(scope="module")
def report(tiny_index, data_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    for model in ("multifield", "bm25"):
        search_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--model", model,
                     "--output", str(tmp / f"{model}.trec"), "--spans", str(tmp / f"{model}.spans.jsonl"), "--quiet"])
    out = tmp / "report.html"
    report_main(["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.jsonl"), "--qrels",
                 str(data_dir / "tiny_qrels.txt"), "--run", str(tmp / "multifield.trec"), "--spans",
                 str(tmp / "multifield.spans.jsonl"), "--baseline", str(tmp / "bm25.trec"), "--output", str(out)])
    return out


def test_report_content(report):
    page = report.read_text()
    assert page.count("<section class='query'") == 3
    assert '<mark class="query">checked into</mark>' in page
    assert '<mark class="span">' in page and "[relevant]" in page and "[unjudged]" in page
    assert "id='delta-plot'" in page and "data:image/png;base64," in page


def test_report_renders_in_headless_chromium(report, tmp_path):
    from PIL import Image, ImageStat

    browser = chromium()
    shot = tmp_path / "report.png"
    common = [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run([browser, *common, f"--screenshot={shot}", "--window-size=1200,1600", report.as_uri()],
                   check=True, capture_output=True, timeout=120)
    image = Image.open(shot).convert("L")
    assert image.size == (1200, 1600)
    assert ImageStat.Stat(image).stddev[0] > 10  # not a blank page
    dom = subprocess.run([browser, *common, "--dump-dom", report.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    assert dom.count('class="query"') >= 3 and "<mark" in dom and 'id="delta-plot"' in dom
    keep = os.environ.get("HYBRID_TEST_ARTIFACTS")
    if keep:  # CI can keep the screenshot for people to look at
        shutil.copy(shot, keep)
