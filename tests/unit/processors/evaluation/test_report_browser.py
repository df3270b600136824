"""report.html in a real browser: headless Chromium (Debian's ``chromium`` package) renders the report of
``deidstream eval`` on the synthetic fixture; every section is there, every image decodes, and at 800 px no table
runs off the page (they scroll in their own box). The screenshot in the README comes from here:
``DEID_UPDATE_SCREENSHOT=1 pytest tests/unit/processors/evaluation/test_report_browser.py`` rewrites it.

Without chromium the tests skip, saying so, unless ``DEID_REQUIRE_BROWSER=1`` (set by ``.ci/run``, which installs
it): then they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from paths import DATA, REPO
from typer.testing import CliRunner

from streams.cli import app

SCREENSHOT = REPO / "scripts" / "results" / "report.png"
#: The section ids the report of an eval with per-note metrics and a judge panel has, in order.
SECTIONS = ["targets", "overall", "per-label", "worst-notes", "content-changed", "cir", "recall-proxy", "estimates",
            "distributions", "judges", "provenance"]
#: Flags for a headless run that touches no network and no profile but its own.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
#: Added to a copy of the page: after load, record what the browser laid out (image sizes, page width).
PROBE = """<script>window.addEventListener('load', () => {
  for (const img of document.images) { img.setAttribute('data-natural-width', String(img.naturalWidth)); }
  document.body.setAttribute('data-scroll-width', String(document.documentElement.scrollWidth));
  document.body.setAttribute('data-inner-width', String(window.innerWidth));
});</script>"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("DEID_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (apt-get install -y chromium) and DEID_REQUIRE_BROWSER=1")
        pytest.skip("chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
    return found


def _run(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile.mkdir(parents=True, exist_ok=True)
    return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture(scope="module")
def report_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    res = CliRunner().invoke(app, ["eval", "--gold", str(DATA / "synthetic_small.jsonl"), "--report", str(out),
                                   "--steps", "regex,dictionary,recovery,ensemble", "--bootstrap", "20",
                                   "--judges", "entity,string"])
    assert res.exit_code == 0, res.output
    return out / "report.html"


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.body: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id") or "")
        elif tag == "img":
            self.images.append(a)
        elif tag == "body":
            self.body = a


def _dom(browser: str, page: Path, tmp: Path, width: int) -> _Dom:
    probe = tmp / f"probe-{width}.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    res = _run(browser, tmp / f"profile-{width}", f"--window-size={width},1200", "--dump-dom", probe.as_uri())
    assert res.returncode == 0 and "<body" in res.stdout, res.stderr[-2000:]
    dom = _Dom()
    dom.feed(res.stdout)
    return dom


def test_when_chromium_renders_the_report_then_every_section_and_image_is_there(report_html: Path,
                                                                                 tmp_path: Path) -> None:
    browser = _chromium()
    dom = _dom(browser, report_html, tmp_path, 1100)
    assert dom.sections == SECTIONS
    assert len(dom.images) == 4  # per-label recall, proxy vs recall, estimates vs truth, distributions
    for img in dom.images:
        assert (img.get("src") or "").startswith("data:image/png;base64,") and img.get("alt")
        assert int(img.get("data-natural-width") or 0) > 300, img.get("alt")  # decoded, not a broken image


def test_when_the_screen_is_narrow_then_no_table_runs_off_the_page(report_html: Path, tmp_path: Path) -> None:
    browser = _chromium()
    dom = _dom(browser, report_html, tmp_path, 800)
    assert int(dom.body["data-scroll-width"] or 0) <= int(dom.body["data-inner-width"] or 0)


def test_when_chromium_takes_a_screenshot_then_it_is_a_png_of_the_page(report_html: Path, tmp_path: Path) -> None:
    browser = _chromium()
    shot = tmp_path / "shot.png"
    res = _run(browser, tmp_path / "profile-shot", "--window-size=1000,1250", f"--screenshot={shot}",
               report_html.as_uri())
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1000, 1250)
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 50  # a rendered page, not a blank one
        if os.environ.get("DEID_UPDATE_SCREENSHOT") == "1":
            # small enough to commit: 128 colours
            im.convert("RGB").quantize(colors=128).save(SCREENSHOT, optimize=True)
