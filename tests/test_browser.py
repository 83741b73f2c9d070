"""The built book, opened page by page in headless Chromium without internet.

Fails on untypeset math (raw \\[, \\( or $$ in the visible text), a broken image, a dead internal
link, a console or script error, or a request that leaves the machine. One screenshot per page is
saved under _build/screenshots/. `make test` builds the HTML first; run alone, the fixture builds
it when _build/html is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from book_browser import check_pages, find_chromium, redirect_target

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
    shots = list(SCREENSHOTS.glob("*.png"))
    assert len(shots) >= len([p for p in pages if redirect_target(p) is None])


# --- the checker itself must catch each fault, and pass a page whose math MathJax typesets ---

_PAGES = {
    "good.html": '<p>Metric \\[ s_k = x^2 \\] and <a href="raw.html#here">a link</a>.</p>'
    '<script defer src="mathjax/tex-chtml.js"></script>',
    "raw.html": '<p id="here">Metric \\[ s_k = x^2 \\] shown raw.</p>',
    "dollars.html": "<p>Metric $$ s_k $$ shown raw.</p>",
    "image.html": '<p>A figure <img src="missing.png" alt="lost"></p>',
    "link.html": '<a href="nowhere.html">gone</a> <a href="raw.html#absent">no anchor</a>',
    "console.html": "<script>console.error('boom'); throw new Error('bang');</script>",
    "cdn.html": '<script src="https://cdn.example.org/tex-chtml.js"></script>',
    "redirect.html": '<meta http-equiv="Refresh" content="0; url=gone.html" />',
    "code.html": "<pre>re.compile(r'\\(a\\)') and $$ in code are fine</pre>",
}


def test_checker_catches_each_fault(tmp_path, built_book, chromium):
    for name, body in _PAGES.items():
        (tmp_path / name).write_text(f"<!DOCTYPE html><html><body>{body}</body></html>")
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
    assert len(list((tmp_path / "shots").glob("*.png"))) == len(_PAGES) - 1  # not the redirect
