"""The built book, opened page by page in headless Chromium without internet.

Fails on untypeset math (raw \\[, \\( or $$ in the visible text), a broken image, a dead internal
link, a console or script error, a request that leaves the machine, a table wider than its column
or without a caption, a figure whose text would show under MIN_TEXT_PX at a 1280 px viewport, and
raw Markdown in the prose (a '$', a list marker). Two screenshots per page are saved under
_build/screenshots/: <page>.png at 1280 px and <page>.420px.png at 420 px. `make test` builds the
HTML first; run alone, the fixture builds it when _build/html is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from book_browser import (
    FIGURE_FONT_PT,
    MIN_TEXT_PX,
    NARROW_VIEWPORT,
    check_pages,
    find_chromium,
    png_dpi,
    redirect_target,
)

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if not path or not Path(path).exists():
        pytest.fail(
            "Chromium not found: the browser test needs Debian's `chromium` "
            "(apt-get install -y chromium; `make test` installs it as root) "
            "or PLAYERFL_CHROMIUM=/path/to/chromium."
        )
    return path


@pytest.fixture(scope="module")
def built_book() -> Path:
    if not (HTML / "index.html").is_file():
        jb = Path(sys.executable).parent / "jupyter-book"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        subprocess.run(
            [str(jb), "build", str(ROOT), "-W", "-n", "--keep-going"], check=True, env=env
        )
    return HTML


def _report(problems: dict) -> str:
    lines = []
    for page, found in problems.items():
        for item in found:
            lines.append(f"{page}: {item}")
    return "\n".join(lines)


def test_every_page_renders_offline(built_book, chromium):
    pages = sorted(
        p
        for p in built_book.rglob("*.html")
        if not p.relative_to(built_book).parts[0].startswith("_")
    )
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    assert len(pages) > len(chapters), f"only {len(pages)} pages built in {built_book}"
    problems = check_pages(built_book, pages, SCREENSHOTS, chromium)
    assert not _report(problems), "pages a reader would see broken:\n" + _report(problems)
    shown = len([p for p in pages if redirect_target(p) is None])
    assert len(list(SCREENSHOTS.glob(f"*.{NARROW_VIEWPORT}px.png"))) >= shown
    assert len(list(SCREENSHOTS.glob("*.png"))) >= 2 * shown


def test_the_checker_assumes_the_styles_smallest_font():
    from playerfl_core.book import style

    assert FIGURE_FONT_PT == style.MIN_FONT_PT


# --- the checker itself must catch each fault, and pass a page whose math MathJax typesets ---

_PAGES = {
    "good.html": '<p>Metric \\[ s_k = x^2 \\] and <a href="raw.html#here">a link</a>.</p>'
    '<table><tr><td>a small</td><td>table</td></tr></table><img src="legible.png">'
    "<ul><li>a real list</li></ul><p>A dash - inside a sentence - is fine.</p>"
    '<script defer src="mathjax/tex-chtml.js"></script>',
    "table.html": '<table><tr><td style="min-width: 3000px">too wide</td></tr></table>',
    # 04b's one-row table: wider than the text column, narrower than the article with its
    # padding, so it was cut off at the column's edge and the check (against the padded width)
    # missed it.
    "uncaptioned.html": '<table class="table"><tr><td>what is this?</td></tr></table>',
    "padded.html": '<article style="width: 700px; padding: 0 40px"><div style="overflow-x: auto">'
    '<table><tr><td style="min-width: 730px">cut off</td></tr></table></div></article>',
    "tiny.html": '<p>A figure <img src="tiny.png" style="max-width: 100%"></p>',
    "dollar.html": "<p>The measure $x$ is shown raw.</p>",
    "bullets.html": "<p>Peaks: fc1 (unit 3). - Heart: fc2 (unit 4).</p><p>- Digits: raw</p>",
    "raw.html": '<p id="here">Metric \\[ s_k = x^2 \\] shown raw.</p>',
    "dollars.html": "<p>Metric $$ s_k $$ shown raw.</p>",
    "image.html": '<p>A figure <img src="missing.png" alt="lost"></p>',
    "link.html": '<a href="nowhere.html">gone</a> <a href="raw.html#absent">no anchor</a>',
    "console.html": "<script>console.error('boom'); throw new Error('bang');</script>",
    "cdn.html": '<script src="https://cdn.example.org/tex-chtml.js"></script>',
    "redirect.html": '<meta http-equiv="Refresh" content="0; url=gone.html" />',
    "code.html": "<pre>re.compile(r'\\(a\\)') and $$ in code are fine</pre>",
}


def _figure_png(path: Path, width_in: float, dpi: int) -> None:
    """A real matplotlib PNG (with its pHYs chunk), ``width_in`` inches at ``dpi``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, 1.0), dpi=dpi)
    fig.add_subplot().plot([0, 1], [0, 1])
    fig.savefig(path)  # savefig writes the dpi into pHYs, as the inline backend's PNGs have


def test_checker_catches_each_fault(tmp_path, built_book, chromium):
    for name, body in _PAGES.items():
        (tmp_path / name).write_text(f"<!DOCTYPE html><html><body>{body}</body></html>")
    _figure_png(tmp_path / "legible.png", 4.0, 100)  # 400 px shown as is: 12.5 px text
    _figure_png(tmp_path / "tiny.png", 20.0, 100)  # 2000 px squeezed into ~1264: 7.9 px text
    assert round(png_dpi(tmp_path / "tiny.png")) == 100
    (tmp_path / "mathjax").symlink_to(built_book / "_static" / "mathjax")
    pages = [tmp_path / name for name in _PAGES]
    problems = check_pages(tmp_path, pages, tmp_path / "shots", chromium)

    assert problems["good.html"] == [], problems["good.html"]
    assert problems["code.html"] == [], problems["code.html"]
    assert any("untypeset math '\\\\['" in p for p in problems["raw.html"]), problems
    assert any("untypeset math '$$'" in p for p in problems["dollars.html"]), problems
    assert any("broken image: missing.png" in p for p in problems["image.html"]), problems
    dead = [p for p in problems["link.html"] if p.startswith("dead internal link")]
    assert len(dead) == 2, problems["link.html"]
    assert any("console error: boom" in p for p in problems["console.html"]), problems
    assert any("script error" in p and "bang" in p for p in problems["console.html"]), problems
    assert any("needs the internet" in p for p in problems["cdn.html"]), problems
    assert problems["redirect.html"] == ["dead internal link: /gone.html (no such file)"]
    assert any("table wider than its column" in p for p in problems["table.html"]), problems
    assert any("in 700 px (cut off" in p for p in problems["padded.html"]), problems["padded.html"]
    assert problems["uncaptioned.html"] == ["table without a caption: what is this? ..."]
    small = [p for p in problems["tiny.html"] if p.startswith("figure text too small")]
    assert len(small) == 1 and f"< {MIN_TEXT_PX:g} px" in small[0], problems["tiny.html"]
    assert any("raw '$'" in p for p in problems["dollar.html"]), problems
    bullets = [p for p in problems["bullets.html"] if p.startswith("raw Markdown list marker")]
    assert len(bullets) == 2, problems["bullets.html"]
    shots = tmp_path / "shots"  # two per page, not for the redirect
    assert len(list(shots.glob(f"*.{NARROW_VIEWPORT}px.png"))) == len(_PAGES) - 1
    assert len(list(shots.glob("*.png"))) == 2 * (len(_PAGES) - 1)
