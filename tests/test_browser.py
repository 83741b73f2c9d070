"""The built book, opened page by page in headless Chromium without internet.

Fails on untypeset math (raw \\[, \\( or $$ in the visible text), a broken image, a dead internal
link, a console or script error, a request that leaves the machine, a table wider than its column
or without a caption, a figure whose text would show under MIN_TEXT_PX at a 1280 px viewport,
raw Markdown in the prose (a '$', a list marker), raw MyST (a directive's fence or option, a role),
a shown code cell that calls glue(), an empty table, a header row holding only the index's name,
a paragraph in bold (a glued sentence), a number in Python's exponent form in a table (5e-3),
and a table label that is a code name
(client_1, paper_median) or a float padded with zeros (0.050000); at a 420 px viewport (a
phone), on a page that scrolls sideways, on a table cut off by a box that does not scroll, on
a command-line option in inline code broken at its hyphen, on a table that scrolls sideways with
no cue under it that it does, and on code running past the right edge of its box.
The same two openings measure each page: its visible words (the main path, the intro and the
numbered chapters, at most MAX_MAIN_PATH_WORDS in all and MAX_CHAPTER_WORDS a page, and at
most MAX_RESULT_BOX_WORDS in a Result box), its bookkeeping words ("declaration", "item N",
"family": none outside the appendices), the library names in its prose (at most
MAX_MAIN_PATH_LIBRARY_NAMES on the main path), its tables wider than the page at 420 px that
hide a column or do not scroll, and its figures' tick-label height at 1280 px (at least
MIN_TICK_LABEL_PX); each test of a limit lists the pages over it with their
numbers. The built pages also link the source archive of the commit they were built from.
Two screenshots per page are saved under _build/screenshots/: <page>.png at 1280 px and
<page>.420px.png at 420 px. `make test` builds the HTML first; run alone, the fixture builds it
when _build/html is missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from book_browser import (
    FIGURE_FONT_PT,
    MAX_BOOKKEEPING_OUTSIDE_APPENDICES,
    MAX_CHAPTER_WORDS,
    MAX_HIDING_TABLES,
    MAX_MAIN_PATH_LIBRARY_NAMES,
    MAX_MAIN_PATH_WORDS,
    MAX_RESULT_BOX_WORDS,
    MIN_TEXT_PX,
    MIN_TICK_LABEL_PX,
    NARROW_VIEWPORT,
    WIDE_VIEWPORT,
    check_pages,
    find_chromium,
    hiding_tables,
    png_dpi,
    redirect_target,
    serve,
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
    if not (HTML / "index.html").is_file():  # as `make html` builds it: the source first
        jb = Path(sys.executable).parent / "jupyter-book"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        archive = [sys.executable, "-m", "playerfl_core.book.source_archive", "_build/source"]
        subprocess.run(archive, check=True, env=env, cwd=ROOT)
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


@pytest.fixture(scope="module")
def book_problems(built_book, chromium) -> tuple[list[Path], dict, dict]:
    """Every page of the built book checked and measured once (the slow part), shared by the
    tests below: the pages, their problems, their measurements."""
    pages = sorted(
        p
        for p in built_book.rglob("*.html")
        if not p.relative_to(built_book).parts[0].startswith("_")
    )
    measures: dict = {}
    return pages, check_pages(built_book, pages, SCREENSHOTS, chromium, measures), measures


def test_every_page_renders_offline(built_book, book_problems):
    pages, problems, _ = book_problems
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    assert len(pages) > len(chapters), f"only {len(pages)} pages built in {built_book}"
    assert not _report(problems), "pages a reader would see broken:\n" + _report(problems)
    shown = len([p for p in pages if redirect_target(p) is None])
    assert len(list(SCREENSHOTS.glob(f"*.{NARROW_VIEWPORT}px.png"))) >= shown
    assert len(list(SCREENSHOTS.glob("*.png"))) >= 2 * shown


def test_a_shrunk_figure_opens_full_size_on_a_phone(built_book, chromium):
    """_static/figure_zoom.js: at 420 px a chapter figure is shown at a third of its drawn width;
    a tap opens it at its natural size in a layer that scrolls sideways, on the point tapped;
    Escape closes it."""
    from playwright.sync_api import sync_playwright

    with serve(built_book) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": NARROW_VIEWPORT, "height": 900})
            page.goto(base + "chapters/00_federated_learning_in_one_hour.html", wait_until="load")
            figure = page.locator("figure img.figure-zoomable").first
            natural = figure.evaluate("img => img.naturalWidth")
            assert figure.bounding_box()["width"] < natural / 2
            hint = "figure.figure-has-zoom figcaption .caption-text"  # no hover on a phone
            said = page.locator(hint).first.evaluate(
                "el => getComputedStyle(el, '::after').content"
            )
            assert "Tap the figure to enlarge it." in said, said
            box = figure.bounding_box()
            figure.click(position={"x": 0.75 * box["width"], "y": box["height"] / 2})
            layer = page.locator(".figure-zoom")
            assert layer.count() == 1
            assert page.locator(".figure-zoom img").bounding_box()["width"] == natural
            assert layer.evaluate("el => el.scrollWidth > el.clientWidth")  # pans sideways
            # it opens on the point tapped (three quarters across), not at the left edge
            left = layer.evaluate("el => el.scrollLeft + el.clientWidth / 2")
            assert abs(left - 0.75 * natural) < 0.02 * natural, (left, natural)
            assert page.evaluate("document.documentElement.scrollWidth") <= NARROW_VIEWPORT
            page.keyboard.press("Escape")
            assert layer.count() == 0
            figure.click()
            page.locator(".figure-zoom").click(position={"x": 10, "y": 450})  # a tap closes
            assert page.locator(".figure-zoom").count() == 0
        finally:
            browser.close()


def test_code_breaks_inside_long_names_only(built_book, chromium):
    """_static/code_lines.js: a wrapped code line may break after an underscore only inside a
    long name; 03a on a phone split "per_" / "client" where the space before it was free. Never
    inside a number: the primer's constants read "(0.01 at α = 0." / "05)" at 1280 px."""
    from playwright.sync_api import sync_playwright

    names = """() => Array.from(document.querySelectorAll('article.bd-article div.highlight pre'))
      .flatMap(pre => Array.from(pre.querySelectorAll('wbr')))
      .map(w => [(w.previousSibling || {}).textContent + '|' + (w.nextSibling || {}).textContent,
                 w.parentElement.textContent])"""
    with serve(built_book) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": NARROW_VIEWPORT, "height": 900})
            page.goto(base + "chapters/03a_the_algorithm_and_its_metric.html", wait_until="load")
            breaks = page.evaluate(names)
            page.goto(base + "chapters/statistics_primer.html", wait_until="load")
            primer = page.evaluate(names)
        finally:
            browser.close()
    at_underscore = [(b, name) for b, name in breaks if b.split("|")[0].endswith("_")]
    assert at_underscore and "per_|client" not in [b for b, _ in breaks], breaks[:20]
    assert all(len(name) >= 16 for _, name in at_underscore), at_underscore  # the whole name
    in_number = [b for b, _ in breaks + primer if re.search(r"\.\|\d", b)]
    assert primer and not in_number, in_number  # "0.|05" splits a number


# --- the book measured as a reader meets it, against the limits of book_browser -----------------


def main_path(rel: str) -> bool:
    """A page of the main path: the intro and the numbered chapters (00–07, 03a and 04b)."""
    return rel == "chapters/intro.html" or bool(re.fullmatch(r"chapters/\d\d[a-z]?_.*\.html", rel))


def appendix_pages(toc: Path = ROOT / "_toc.yml") -> set[str]:
    """The pages the table of contents lists under its "Appendices" part, as built paths."""
    import yaml

    parts = yaml.safe_load(toc.read_text())["parts"]
    return {
        f"{c['file']}.html" for part in parts if part["caption"] == "Appendices"
        for c in part["chapters"]
    }  # fmt: skip


def word_offences(measures: dict) -> list[str]:
    """Main-path pages over MAX_CHAPTER_WORDS, and the main path's total over
    MAX_MAIN_PATH_WORDS."""
    words = {rel: m["words"] for rel, m in measures.items() if main_path(rel)}
    found = [f"{rel}: {n} words > {MAX_CHAPTER_WORDS}" for rel, n in words.items()
             if n > MAX_CHAPTER_WORDS]  # fmt: skip
    if sum(words.values()) > MAX_MAIN_PATH_WORDS:
        found.append(f"main path: {sum(words.values())} words > {MAX_MAIN_PATH_WORDS}")
    return found


def result_box_offences(measures: dict) -> list[str]:
    """Main-path Result boxes over MAX_RESULT_BOX_WORDS."""
    return [f"{rel}: Result box of {n} words > {MAX_RESULT_BOX_WORDS}"
            for rel, m in measures.items() if main_path(rel)
            for n in m["result_boxes"] if n > MAX_RESULT_BOX_WORDS]  # fmt: skip


def bookkeeping_offences(measures: dict, appendices: set[str]) -> list[str]:
    """Pages outside the appendices with bookkeeping words, more than allowed in all."""
    found = {rel: m["bookkeeping"] for rel, m in measures.items()
             if rel not in appendices and m["bookkeeping"]}  # fmt: skip
    if sum(sum(b.values()) for b in found.values()) <= MAX_BOOKKEEPING_OUTSIDE_APPENDICES:
        return []
    return [f"{rel}: {words}" for rel, words in found.items()]


def library_offences(measures: dict) -> list[str]:
    """The main path's library names in prose, page by page, when more than allowed in all."""
    found = {rel: m["libraries"] for rel, m in measures.items()
             if main_path(rel) and m["libraries"]}  # fmt: skip
    if sum(sum(n.values()) for n in found.values()) <= MAX_MAIN_PATH_LIBRARY_NAMES:
        return []
    return [f"{rel}: {names}" for rel, names in found.items()]


def table_offences(measures: dict) -> list[str]:
    """Tables a phone reader cannot read whole (:func:`hiding_tables`), when more than allowed."""
    found = [
        f"{rel}: {t['width']} px in {t['column']} px, "
        + (f"hides {', '.join(t['hidden'])}" if t["hidden"] else "")
        + ("" if t["scrolls"] else " in no box that scrolls")
        + f" ({t['head']} ...)"
        for rel, m in measures.items()
        for t in hiding_tables(m.get("tables", []))
    ]
    return found if len(found) > MAX_HIDING_TABLES else []


def tick_offences(measures: dict) -> list[str]:
    """Figures whose tick-label digits show under MIN_TICK_LABEL_PX at WIDE_VIEWPORT px."""
    return [f"{rel}: {f['tick_px']:.1f} px ({f['src']})" for rel, m in measures.items()
            for f in m["figures"] if f["tick_px"] < MIN_TICK_LABEL_PX]  # fmt: skip


def test_the_main_path_is_short_enough_to_teach(book_problems):
    _, _, measures = book_problems
    pages = [rel for rel in measures if main_path(rel)]
    assert len(pages) >= 10, sorted(measures)  # the intro and the numbered chapters
    per_page = "\n".join(f"  {rel}: {measures[rel]['words']}" for rel in sorted(pages))
    found = word_offences(measures)
    assert not found, "\n".join(found) + "\nvisible words per main-path page:\n" + per_page


def test_every_result_box_is_read_at_a_glance(book_problems):
    _, _, measures = book_problems
    boxes = {rel: m["result_boxes"] for rel, m in measures.items() if main_path(rel)}
    assert sum(map(len, boxes.values())) >= 10, boxes  # a Result box on each chapter
    found = result_box_offences(measures)
    assert not found, "\n".join(found) + f"\nwords per Result box: {boxes}"


def test_no_bookkeeping_words_outside_the_appendices(book_problems):
    _, _, measures = book_problems
    appendices = appendix_pages()
    assert appendices & set(measures), (appendices, sorted(measures))
    found = bookkeeping_offences(measures, appendices)
    assert not found, "bookkeeping words outside the appendices:\n" + "\n".join(found)


def test_few_library_names_in_the_main_paths_prose(book_problems):
    _, _, measures = book_problems
    found = library_offences(measures)
    assert not found, (
        f"library names in the main path's prose (at most {MAX_MAIN_PATH_LIBRARY_NAMES} in all):\n"
        + "\n".join(found)
    )


def test_no_table_hides_a_column_on_a_phone(book_problems):
    _, _, measures = book_problems
    found = table_offences(measures)
    assert not found, (
        f"tables wider than the page at {NARROW_VIEWPORT} px that hide a column or do not "
        f"scroll ({len(found)}):\n" + "\n".join(found)
    )


def test_tick_labels_are_legible_at_1280_px(book_problems):
    _, _, measures = book_problems
    assert any(m["figures"] for m in measures.values()), "no figure measured"
    found = tick_offences(measures)
    assert not found, (
        f"tick labels under {MIN_TICK_LABEL_PX:g} px at {WIDE_VIEWPORT} px:\n" + "\n".join(found)
    )


_MEASURED_PAGES = {
    # 31 visible words: 5 + "printed 2 words" + the summary + 12 + 10; not the navigation, the
    # code cell's input, the folded solution, the page's own code block or inline code
    "words.html": "<nav>Navigation words outside the article</nav><article class='bd-article'>"
    "<p>One two three four five.</p><div class='cell'><div class='cell_input'><pre>import "
    "numpy as np</pre></div><div class='cell_output'><pre>printed 2 words</pre></div></div>"
    "<details><summary>Solution</summary><p>folded words never counted</p></details>"
    "<pre>matplotlib code not counted</pre>"
    "<p>The declaration and item 3 and item 12 of the family, declared.</p>"
    "<p>PyTorch and <code>torch.nn</code> with pandas, Ray and a ray; Flower blooms.</p>"
    "</article>",
    # a Result box of 7 words (its title not counted) beside a note that is not one
    "result.html": "<article><div class='admonition'><p class='admonition-title'>Result</p>"
    "<p>The rule picks the best split: 0.18.</p></div><div class='admonition'>"
    "<p class='admonition-title'>Note</p><p>not a result</p></div></article>",
    # at 420 px: a table that fits; one that scrolls with its verdict column out of view; one
    # wider than the page in no box that scrolls
    "tables.html": "<article><table><tr><td>fits</td></tr></table>"
    "<div style='overflow-x: auto'><table><thead><tr><th style='min-width: 150px'>federation"
    "</th><th style='min-width: 150px'>mean</th><th style='min-width: 300px'>verdict</th>"
    "</tr></thead><tbody><tr><td>Heart</td><td>0.01</td><td>undecided</td></tr></tbody>"
    "</table></div><table><tr><td style='min-width: 600px'>runs off</td></tr></table>"
    "</article>",
    "figures.html": "<article><img src='legible.png'><img src='tiny.png' style='max-width: 100%'>"
    "</article>",
}


def _digit_height_em() -> float:
    """Height of the digits 1, 4, 7 in em, as matplotlib draws them in its default font."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    return TextPath((0, 0), "147", prop=FontProperties(size=100)).get_extents().height / 100


def test_each_measurement_on_pages_of_known_content(tmp_path, chromium):
    for name, body in _MEASURED_PAGES.items():
        (tmp_path / name).write_text(f"<!DOCTYPE html><html><body>{body}</body></html>")
    _figure_png(tmp_path / "legible.png", 4.0, 100)  # shown at its 400 px
    _figure_png(tmp_path / "tiny.png", 20.0, 100)  # 2000 px squeezed into the page
    measures: dict = {}
    check_pages(
        tmp_path, [tmp_path / n for n in _MEASURED_PAGES], tmp_path / "s", chromium, measures
    )

    words = measures["words.html"]
    assert words["words"] == 31, words
    assert words["bookkeeping"] == {"declaration": 1, "item N": 2, "family": 1, "declared": 1}
    assert words["libraries"] == {"PyTorch": 1, "pandas": 1, "Ray": 1, "Flower": 1}, words
    assert words["result_boxes"] == []
    assert measures["result.html"]["result_boxes"] == [7]
    tables = measures["tables.html"]["tables"]
    # a table without a header row names its columns by its widest row's cells
    assert [(t["scrolls"], t["hidden"]) for t in tables] == [
        (True, ["verdict"]),
        (False, ["runs off"]),
    ], tables
    assert len(hiding_tables(tables)) == 2
    legible, tiny = measures["figures.html"]["figures"]
    digit_em = _digit_height_em()
    assert legible["tick_px"] == pytest.approx(FIGURE_FONT_PT / 72 * 100 * digit_em, 0.01)
    assert tiny["tick_px"] < MIN_TICK_LABEL_PX <= legible["tick_px"], (legible, tiny)
    assert tick_offences(measures) == [f"figures.html: {tiny['tick_px']:.1f} px (/tiny.png)"]


def test_each_limit_fails_a_page_over_it():
    page = {"words": 10, "result_boxes": [], "bookkeeping": {}, "libraries": {}, "figures": [],
            "tables": []}  # fmt: skip
    main = {f"chapters/0{i}_x.html": dict(page, words=3_000) for i in range(8)}
    assert word_offences(main) == []  # 24,000 words, none over 4,000 on a page
    main["chapters/intro.html"] = dict(page, words=MAX_CHAPTER_WORDS + 1)
    assert word_offences(main) == [
        f"chapters/intro.html: {MAX_CHAPTER_WORDS + 1} words > {MAX_CHAPTER_WORDS}",
        f"main path: {24_000 + MAX_CHAPTER_WORDS + 1} words > {MAX_MAIN_PATH_WORDS}",
    ]
    boxed = {"chapters/05_x.html": dict(page, result_boxes=[MAX_RESULT_BOX_WORDS, 40])}
    assert result_box_offences(boxed) == []
    boxed["chapters/appendix_every_protocol.html"] = dict(page, result_boxes=[500])  # not main
    assert result_box_offences(boxed) == []
    boxed["chapters/06_x.html"] = dict(page, result_boxes=[MAX_RESULT_BOX_WORDS + 1])
    assert result_box_offences(boxed) == [
        f"chapters/06_x.html: Result box of {MAX_RESULT_BOX_WORDS + 1} words > "
        f"{MAX_RESULT_BOX_WORDS}"
    ]
    appendix = "chapters/appendix_preregistration.html"
    assert appendix in appendix_pages()
    said = {appendix: dict(page, bookkeeping={"declared": 5})}
    assert bookkeeping_offences(said, appendix_pages()) == []
    said["chapters/05_x.html"] = dict(page, bookkeeping={"item N": 1})
    assert bookkeeping_offences(said, appendix_pages()) == ["chapters/05_x.html: {'item N': 1}"]
    named = {"chapters/07_x.html": dict(page, libraries={"Ray": MAX_MAIN_PATH_LIBRARY_NAMES})}
    assert library_offences(named) == []
    named["chapters/statistics_primer.html"] = dict(page, libraries={"SciPy": 26})  # not main
    assert library_offences(named) == []
    named["chapters/intro.html"] = dict(page, libraries={"NumPy": 1})
    assert len(library_offences(named)) == 2
    wide = {"width": 600, "column": 400, "head": "a b"}
    shown = {"p.html": dict(page, tables=[dict(wide, scrolls=True, hidden=[])])}
    assert table_offences(shown) == []
    shown["q.html"] = dict(page, tables=[dict(wide, scrolls=True, hidden=["verdict"])])
    assert table_offences(shown) == ["q.html: 600 px in 400 px, hides verdict (a b ...)"]
    figure = {"src": "/f.png", "tick_px": MIN_TICK_LABEL_PX - 0.1}
    assert tick_offences({"r.html": dict(page, figures=[figure])}) == [
        f"r.html: {MIN_TICK_LABEL_PX - 0.1:.1f} px (/f.png)"
    ]


def _source_files(page: Path) -> tuple[str, dict[str, bytes], str]:
    """The note a built page quotes, and the files and pax commit of the archive it links."""
    import gzip
    import tarfile

    html = page.read_text(encoding="utf-8")
    links = sorted(set(re.findall(r'href="([^"]+/playerfl-book-source\.tar\.gz)"', html)))
    assert len(links) == 1, (
        f"{page.name} links {links or 'no source archive'}: build the book with `make html`, "
        "which writes _build/source before the HTML"
    )
    archive = (page.parent / links[0]).resolve()
    assert archive.is_relative_to(page.parents[1]) and archive.is_file(), archive
    with tarfile.open(archive) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    pax = subprocess.run(
        ["git", "get-tar-commit-id"], input=gzip.decompress(archive.read_bytes()),
        capture_output=True, check=False,
    ).stdout.decode().strip()  # fmt: skip
    return re.sub(r"<[^>]+>", "", html), files, pax


def test_the_book_links_the_source_it_was_built_from(built_book):
    """The intro and the lab handout link one archive, inside the built HTML; it unpacks into
    playerfl-book/ with the note the pages quote, and its README.md and Makefile are those of
    the commit that note names (git's own record in the archive names the same commit)."""
    notes = set()
    for name in ("intro", "lab_handout"):
        text, files, pax = _source_files(built_book / "chapters" / f"{name}.html")
        note = files["playerfl-book/playerfl-book-source.txt"].decode()
        commit = re.match(r"commit ([0-9a-f]{40}) ", note)
        assert commit, f"the archive's note names no commit: {note!r}"
        commit = commit[1]
        assert note.splitlines()[0] in text, f"{name}.html does not quote {note.splitlines()[0]}"
        assert pax == commit, (pax, commit)
        for path in ("README.md", "Makefile"):
            at_commit = subprocess.run(
                ["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True,
                check=True,
            ).stdout  # fmt: skip
            assert files[f"playerfl-book/{path}"] == at_commit, f"{path} differs from {commit}"
        notes.add(note)
    assert len(notes) == 1, notes


def test_the_checker_assumes_the_styles_smallest_font():
    from playerfl_core.book import style

    assert FIGURE_FONT_PT == style.MIN_FONT_PT


# --- the checker itself must catch each fault, and pass a page whose math MathJax typesets ---

_PAGES = {
    "good.html": '<p>Metric \\[ s_k = x^2 \\] and <a href="raw.html#here">a link</a>.</p>'
    '<table><tr><td>a small</td><td>table</td></tr></table><img src="legible.png">'
    "<ul><li>a real list</li></ul><p>A dash - inside a sentence - is fine.</p>"
    '<script defer src="mathjax/tex-chtml.js"></script>'
    # at 420 px: a table wider than the phone in a box that scrolls, with the cue that it does
    # (_static/scroll_hint.js), and long code that wraps
    '<div style="overflow-x: auto"><table><tr><td style="min-width: 600px">scrolls</td></tr>'
    '</table></div><p class="scroll-hint">Swipe the table sideways for more</p>'
    '<p><code style="overflow-wrap: anywhere">playerfl_core.stats.evidence.'
    "rank_correlation_test_of_a_long_name</code></p>"
    # a code cell that glues, collapsed (hide-input): the reader does not see it
    '<details><summary>Show code</summary><div class="cell_input"><pre>glue("n", 3)</pre>'
    "</div></details>"
    # reader-facing labels: words, short floats, a code name written as code
    "<table><thead><tr><th>dataset</th><th>0.05</th><th><code>p_holm</code></th></tr></thead>"
    "<tbody><tr><th>Heart</th><td>1</td><td>2</td></tr></tbody></table>",
    # issue 35: client_1 ... as index labels (chapters 00, 01), rule codes as headers (04b),
    # float index labels padded with zeros (chapters 00, 03), and an empty table (chapter 04)
    "labels.html": "<table><thead><tr><th>client</th><th>paper_median</th></tr></thead><tbody>"
    "<tr><th>client_1</th><td>1</td></tr><tr><th>0.050000</th><td>2</td></tr>"
    "<tr><th>16.000000</th><td>3</td></tr></tbody></table>",
    # chapter 03a: "mean ρ = -0.36" in glued prose; a flag and a range in code, a date: fine
    "minus.html": "<p>mean r = -0.36 over 5 seeds (-0.094), <code>-p seeds 0,1</code>, "
    "<code>x=-1</code>, seeds 0-9, 2026-12-02, a −0.5 drop.</p>",
    # chapter 07: Python's booleans in its equivalence tables
    "bools.html": "<table><caption>c</caption><thead><tr><th>algorithm</th><th>identical</th>"
    "</tr></thead><tbody><tr><th>FedAvg</th><td>True</td></tr><tr><th>Local</th><td>False</td>"
    "</tr></tbody></table>",
    # chapter 06: the paper's printed p "< 5e-3"; chapter 05: a caption's "(×1e3)" is prose
    "exponent.html": "<table><caption>c</caption><thead><tr><th>table</th><th>p printed</th>"
    "</tr></thead><tbody><tr><th>accuracy</th><td>&lt; 5e-3</td></tr><tr><th>loss</th>"
    "<td>8.1e-05</td></tr><tr><th>Heart</th><td>0.005 (2e3 runs1e3)</td></tr></tbody></table>",
    "repr.html": "<div class='admonition'><p>At a larger size:</p><div class='output'><pre>"
    "&lt;IPython.core.display.Markdown object&gt;</pre></div></div>",
    "empty.html": "<p>Each pooling variant against the paper's mean:</p><table><thead><tr>"
    "<th>variant</th><th>regret</th></tr></thead><tbody></tbody></table>",
    "table.html": '<table><tr><td style="min-width: 3000px">too wide</td></tr></table>',
    # 04b's one-row table: wider than the text column, narrower than the article with its
    # padding, so it was cut off at the column's edge and the check (against the padded width)
    # missed it.
    "uncaptioned.html": '<table class="table"><tr><td>what is this?</td></tr></table>',
    "unnumbered.html": '<table class="dataframe"><caption>Mean regret per rule</caption>'
    "<tr><td>0.1</td></tr></table>",
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
    # The primer's dropdown: a backtick fence whose title held a backtick stayed a paragraph, and
    # the fence after it swallowed the rest of the page (its last table shown as source).
    "myst.html": "<p>````{admonition} <code>decide</code>\n:class: dropdown</p>"
    "<p>| {doc}<code>02_layerwise_divergence</code> | {ref}<code>primer-holm</code> |</p>",
    # Long inline code (Sphinx's span.pre does not wrap) pushes a phone's page sideways.
    "sideways.html": '<p>See <code><span style="white-space: nowrap">playerfl_core.measure.'
    "averaging_check.averaging_cost_of_every_unit</span></code>.</p>",
    # A table in a box that clips instead of scrolling: its right-hand part is cut off at 420 px.
    "clipped.html": '<div style="width: 300px; overflow: hidden"><table><tr>'
    '<td style="min-width: 360px">cut off on a phone</td></tr></table></div>',
    # pydata-sphinx-theme 0.17's header search field above the book theme's sidebar one
    "search.html": '<header><button class="search-button__button">Search</button></header>'
    '<nav><button class="search-button__button">Search</button></nav>',
    # 03a's displayed Δℓ_k expansion, cut at a phone's right edge
    "equation.html": '<mjx-container display="true" style="display: block; overflow: hidden">'
    '<span style="display: inline-block; width: 600px">wide formula</span></mjx-container>',
    # chapter 03's pruning expansion on one line: it scrolled inside its box on a phone
    "eqscroll.html": '<mjx-container display="true" style="display: block; overflow-x: auto">'
    '<span style="display: inline-block; width: 600px">wide formula</span></mjx-container>',
    "glue.html": '<div class="cell"><div class="cell_input"><pre>n = 3\nglue("n", n)</pre>'
    "</div></div>",
    # chapter 03's agreement table: named column levels push the index's name to a row of its own
    "indexrow.html": "<table><caption>agreement</caption><thead><tr><th>dataset</th>"
    "<th>Heart</th></tr><tr><th>threshold</th><th>&nbsp;</th></tr></thead>"
    "<tbody><tr><th>0.5</th><td>1.00</td></tr></tbody></table>",
    # issue 35: a table that scrolls on a phone with nothing saying so, and a code cell's line
    # running past the right edge of its box
    "nohint.html": '<div style="overflow-x: auto"><table><caption>wide</caption><tr>'
    '<td style="min-width: 600px">more to the right</td></tr></table></div>',
    "codewide.html": '<pre style="overflow-x: auto">'
    "display(captioned(R.grid_sizes(grid, table, datasets), "
    '"The grid\'s sizes per dataset and profile"))</pre>',
    # chapter 07's Result box and the appendix: a glued sentence myst-nb prints in bold; a glued
    # number in bold is fine
    "bold.html": "<article><p><strong>12</strong> of the <b>12</b> algorithms agree. "
    '<span style="font-weight: bold">A PLayer-FL silo uploads 3.9 kB per round, 36% of '
    "FedAvg's 10.9 kB, and reports 4 numbers once (its sensitivities). Local sends 0 kB: "
    "nothing leaves its silos at all.</span></p></article>",
    # an option in inline code at a line's end on a phone: "--dataset-" / "module"
    "flag.html": '<p style="width: 150px">pass it with <code class="literal">'
    '<span class="pre">--dataset-module</span></code> and a file</p>',
    # a table taller than the screen: its cue under it only, which the reader meets last
    "tallhint.html": '<div style="overflow-x: auto"><table><caption>tall</caption>'
    + "".join(f'<tr><td style="min-width: 600px">row {i}</td></tr>' for i in range(60))
    + '</table></div><p class="scroll-hint">Swipe the table sideways for more</p>',
    # 03's "−θ·g" then "." on a line of its own (a formula that fills the line)
    "lonedot.html": '<p style="width: 120px">so <mjx-container style="display: inline-block; '
    'width: 100px">theta g</mjx-container>. Then more</p><p style="width: 120px">as '
    '<span class="math"><mjx-container style="display: inline-block; width: 100px">in a span'
    "</mjx-container></span>, as MyST writes it</p>",
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
    assert problems["unnumbered.html"] == ["table without a number: Mean regret per rule ..."]
    small = [p for p in problems["tiny.html"] if p.startswith("figure text too small")]
    assert len(small) == 1 and f"< {MIN_TEXT_PX:g} px" in small[0], problems["tiny.html"]
    assert any("raw '$'" in p for p in problems["dollar.html"]), problems
    bullets = [p for p in problems["bullets.html"] if p.startswith("raw Markdown list marker")]
    assert len(bullets) == 2, problems["bullets.html"]
    myst = problems["myst.html"]
    assert any("raw MyST directive '````{a'" in p for p in myst), myst
    assert any("raw MyST directive option ':class:'" in p for p in myst), myst
    assert sum("raw MyST role" in p for p in myst) == 2, myst
    sideways = problems["sideways.html"]
    assert len(sideways) == 1 and "playerfl_core.measure" in sideways[0], sideways
    assert sideways[0].startswith(f"scrolls sideways at {NARROW_VIEWPORT} px"), sideways
    clipped = problems["clipped.html"]  # 360 px of cell, plus the table's spacing
    assert len(clipped) == 1 and clipped[0].startswith(f"table cut off at {NARROW_VIEWPORT} px"), (
        clipped
    )
    assert "px in a box of 300 px that does not scroll (cut off on a ...)" in clipped[0], clipped
    assert problems["glue.html"] == ['code cell with a glue() call shown: glue("n", n)']
    assert problems["labels.html"] == [
        "code name as a table label: 'paper_median' (client paper_median client_1 1 ...)",
        "code name as a table label: 'client_1' (client paper_median client_1 1 ...)",
        "float label padded with zeros: '0.050000' (client paper_median client_1 1 ...)",
        "float label padded with zeros: '16.000000' (client paper_median client_1 1 ...)",
    ], problems["labels.html"]
    assert problems["minus.html"] == [
        "hyphen as a minus sign: ...mean r = -0.36 over 5...",
        "hyphen as a minus sign: ...mean r = -0.36 over 5 seeds (-0.094), , ,...",
    ], problems["minus.html"]
    assert problems["bools.html"] == [
        "Python's True in a table cell (write yes/no): c algorithm identical FedAvg ...",
        "Python's False in a table cell (write yes/no): c algorithm identical FedAvg ...",
    ], problems["bools.html"]
    assert problems["exponent.html"] == [
        "Python's exponent form in a table: '5e-3' (c table p printed ...)",
        "Python's exponent form in a table: '8.1e-05' (c table p printed ...)",
        "Python's exponent form in a table: '2e3' (c table p printed ...)",
    ], problems["exponent.html"]
    assert problems["repr.html"] == [
        "a Python object's repr on the page: <IPython.core.display.Markdown object>"
    ], problems["repr.html"]
    cut = problems["equation.html"]
    assert len(cut) == 1 and cut[0].startswith(f"equation cut off at {NARROW_VIEWPORT} px"), cut
    assert problems["eqscroll.html"] == [
        f"equation scrolls sideways at {NARROW_VIEWPORT} px: wide formula ..."
    ], problems["eqscroll.html"]
    assert problems["search.html"] == ["2 search buttons on one screen"], problems["search.html"]
    assert problems["indexrow.html"] == [
        "table header row holding only the index's name: threshold"
    ], problems["indexrow.html"]
    assert problems["flag.html"] == [
        f"code word broken at its hyphen at {NARROW_VIEWPORT} px: --dataset-module"
    ], problems["flag.html"]
    assert problems["empty.html"] == ["empty table (a header, no rows): variant regret ..."]
    assert problems["bold.html"] == [
        "a paragraph in bold: A PLayer-FL silo uploads 3.9 kB per round, 36% of ..."
    ], problems["bold.html"]
    assert problems["nohint.html"] == [
        f"table scrolls at {NARROW_VIEWPORT} px, no cue under it: wide more to the ..."
    ], problems["nohint.html"]
    assert problems["tallhint.html"] == [
        f"table scrolls at {NARROW_VIEWPORT} px, no cue above it: tall row 0 row ..."
    ], problems["tallhint.html"]
    assert problems["lonedot.html"] == [
        f"punctuation starts a line after math at {w} px: {math}"
        for w in (WIDE_VIEWPORT, NARROW_VIEWPORT)
        for math in ("theta g", "in a span")
    ], problems["lonedot.html"]
    assert problems["codewide.html"] == [
        f"code runs past its box at {NARROW_VIEWPORT} px: display(captioned(R.grid_sizes(grid, tab"
    ], problems["codewide.html"]
    assert any(p.startswith("table cut off at") for p in problems["table.html"]), problems
    shots = tmp_path / "shots"  # two per page, not for the redirect
    assert len(list(shots.glob(f"*.{NARROW_VIEWPORT}px.png"))) == len(_PAGES) - 1
    assert len(list(shots.glob("*.png"))) == 2 * (len(_PAGES) - 1)
