"""Open built HTML pages in a real headless Chromium and list what a reader would see broken.

Why a browser: untypeset math, a missing image or a script error only show once JavaScript has
run, and whether a table or a figure fits the column only shows once the page is laid out. The
pages are served from 127.0.0.1 and every request to another host is refused, so a page that
needs the internet (a CDN) fails here as it would in a classroom without a network.

Figures: a matplotlib PNG carries its dpi in the pHYs chunk (``savefig`` writes it; the inline
backend saves at ``figure.dpi``, which :mod:`playerfl_core.book.style` sets). Its natural width
over that dpi is the figure's width in inches; the browser shrinks it to the column, so the
figure's smallest text (the style's ``MIN_FONT_PT``) is MIN_FONT_PT / 72 × dpi × rendered /
natural pixels high. Images without pHYs (not matplotlib's) are not judged.

A phone: each page is opened a second time at NARROW_VIEWPORT px. There the page must not scroll
sideways, a table wider than its box must sit in a box that scrolls (or it is cut off), and a
short code word with a hyphen (a command-line option) must not break over two lines.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import struct
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

RAW_MATH_MARKERS = ("\\[", "\\(", "$$")
PAGE_TIMEOUT_MS = 300_000  # generous: the test machine may be shared and slow
WIDE_VIEWPORT, NARROW_VIEWPORT = 1280, 420  # a laptop, a phone held upright
MIN_TEXT_PX = 9.0
"""The smallest text height (CSS px at the 1280 px viewport) a figure may show: body text is
16 px; below about 9 px labels are unreadable on a projector or a phone."""
FIGURE_FONT_PT = 10.0
"""The smallest font the figures draw, their tick labels' (``playerfl_core.book.style.MIN_FONT_PT``;
kept here as a number so the checker does not import the library it checks). A figure's PNG does
not record it: a chapter executed under an older style is measured as if drawn with this one."""
_LIST_MARKER = re.compile(r"(?:^|\n)\s*[-*] \S|[.:;)]\s+[-*] \S")
"""Markdown list markers a reader should never see: a line starting with '- ' or '* ', or a
bullet collapsed into the paragraph ('... (unit 3). - Heart: ...')."""

_RAW_MYST = re.compile(
    r"(?P<fence>(?:`{3,}|:{3,}|~{3,})\{[a-z])"  # a directive's fence: ```{admonition}, :::{note}
    r"|(?P<role>\{[a-z][a-z0-9-]*(?::[a-z0-9-]+)*\}(?=[`\s]|$))"  # a role: {doc}`…`, {cite:p}`…`
    r"|(?P<option>(?:^|\s):[a-z][a-z-]*:(?=\s))"  # a directive's option line: :class: dropdown
)
"""MyST source a reader should never see: it shows when a directive or a role was not parsed (a
backtick fence whose title holds a backtick is a paragraph, and the fence that follows swallows
the rest of the page). The role's backticked argument becomes inline code, which the visible
text leaves out, so a role is recognised by its braces followed by a backtick, a space or the
end of the text."""

# Text a reader sees, outside code blocks and typeset math.
_VISIBLE_TEXT_JS = """() => {
  const skip = 'PRE, CODE, SCRIPT, STYLE, NOSCRIPT, TEXTAREA, MJX-CONTAINER';
  const root = document.body || document.documentElement;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const parts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    if (el.getClientRects().length === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    parts.push(n.textContent);
  }
  return parts.join(' ');
}"""

# Resolves once MathJax (if the page loads it) has typeset the page.
_MATHJAX_DONE_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    return 'typeset';
  }
  return window.MathJax ? 'configured but not loaded' : 'absent';
}"""

# Paragraph-like blocks outside code, as the reader sees them (innerText keeps line breaks).
_PARAGRAPHS_JS = """() => Array.from(document.querySelectorAll('p, li, dd, figcaption, caption'))
  .filter(el => !el.closest('pre, code, mjx-container, .highlight, script, style'))
  .filter(el => el.getClientRects().length > 0)
  .map(el => el.innerText)"""

# The same blocks without their code and math: the prose a reader reads as words and numbers.
_PROSE_JS = """() => Array.from(document.querySelectorAll('p, li, dd, figcaption, caption'))
  .filter(el => !el.closest('pre, code, mjx-container, .highlight, script, style'))
  .filter(el => el.getClientRects().length > 0)
  .map(el => {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('code, .pre, mjx-container, .math').forEach(c => c.remove());
    return copy.textContent;
  })"""

_HYPHEN_MINUS = re.compile(r"(?<![\w.\-\u2013\u2014/:])-\d")
"""A negative number written with a hyphen ("ρ = -0.36"): a minus sign (−) reads as one."""

# Tables wider than the column they sit in (article or main, else the body).
_WIDE_TABLES_JS = """() => Array.from(document.querySelectorAll('table'))
  .filter(t => t.getClientRects().length > 0)
  .map(t => {
    const col = t.closest('article, main') || document.body;
    const style = getComputedStyle(col);  // the text column: the article without its padding
    const column = col.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const width = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
    const head = (t.innerText || '').trim().split(/\\s+/).slice(0, 4).join(' ');
    return {width: Math.round(width), column: Math.round(column), head: head};
  })
  .filter(r => r.width > r.column + 1)"""

# Every displayed table of the book's own (a chapter's output, a Markdown table) without a caption.
_UNCAPTIONED_TABLES_JS = """() => Array.from(
    document.querySelectorAll('table.dataframe, table.table'))
  .filter(t => t.getClientRects().length > 0 && !t.querySelector('caption'))
  .map(t => (t.innerText || '').trim().split(/\\s+/).slice(0, 4).join(' '))"""

# Captioned tables whose caption has no number ("Table 18"), so the text cannot point to them
# (_ext/table_numbers.py numbers the ones a code cell prints).
_UNNUMBERED_TABLES_JS = """() => Array.from(
    document.querySelectorAll('table.dataframe, table.table'))
  .filter(t => t.getClientRects().length > 0 && t.querySelector('caption')
               && !t.querySelector('caption .caption-number'))
  .map(t => t.querySelector('caption').innerText.trim().split(/\\s+/).slice(0, 6).join(' '))"""

# Every shown table: its header and index cells as the reader sees them (inline code left out:
# a code name written as code is meant), and how many rows its body has.
_TABLE_LABELS_JS = """() => Array.from(document.querySelectorAll('table'))
  .filter(t => t.getClientRects().length > 0)
  .map(t => {
    const shown = el => {
      const copy = el.cloneNode(true);
      copy.querySelectorAll('code, .pre').forEach(c => c.remove());
      return copy.textContent.trim();
    };
    return {
      labels: Array.from(t.querySelectorAll('th')).map(shown).filter(s => s),
      cells: Array.from(t.querySelectorAll('td')).map(shown).filter(s => s),
      header: t.querySelector('thead') !== null,
      rows: t.querySelectorAll('tbody tr').length,
      head: (t.innerText || '').trim().split(/\\s+/).slice(0, 4).join(' '),
    };
  })"""

# Header rows that hold nothing but the index's name (pandas puts it in a row of its own when
# the column levels are named too): a row of blank cells under the column names.
_NAME_ONLY_HEADER_ROWS_JS = """() => Array.from(document.querySelectorAll('table'))
  .filter(t => t.getClientRects().length > 0)
  .flatMap(t => Array.from(t.querySelectorAll('thead tr'))
    .map(tr => Array.from(tr.children).map(c => c.textContent.trim()))
    .filter(cells => cells.length > 1 && cells[0] && cells.slice(1).every(c => !c))
    .map(cells => cells[0]))"""

_CODE_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
"""A table label that is a code name: ``client_1``, ``paper_median``, ``fairness_f1``."""
_TRAILING_ZEROS = re.compile(r"[-\u2212]?\d+\.\d*00")
"""A float label printed with padding zeros: ``0.050000``, ``16.000000``."""
_PYTHON_EXPONENT = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[-+\u2212]?\d+\b")
"""A number in Python's exponent form: ``5e-3``, ``8.1e-05``, ``1e3`` (the book writes
``0.005``, ``8.1 × 10⁻⁵``, ``10³``)."""

# Displayed code cells that call glue(): the call only feeds a number to the prose, a reader
# should not have to read past it (tag the cell remove-input, or hide-input).
_GLUE_CELLS_JS = """() => Array.from(document.querySelectorAll('div.cell_input'))
  .filter(el => el.getClientRects().length > 0)
  .map(el => el.innerText || '')
  .filter(src => src.includes('glue('))
  .map(src => src.split('\\n').find(line => line.includes('glue(')).trim())"""

# How much wider than the viewport the page is laid out, and the elements that stick out of it
# (the innermost ones: not inside a box that scrolls or clips, not fixed on screen).
_SEARCH_BUTTONS_JS = """() => Array.from(document.querySelectorAll('button.search-button__button'))
    .filter(b => { const r = b.getBoundingClientRect(), s = getComputedStyle(b);
                   return r.width > 0 && r.height > 0 && s.visibility !== 'hidden'; }).length"""
"""How many search buttons the reader sees (the theme's header and its sidebar can both hold
one)."""

_SIDEWAYS_JS = """() => {
  const view = document.documentElement.clientWidth;
  const width = Math.max(document.documentElement.scrollWidth,
                         document.body ? document.body.scrollWidth : 0);
  if (width <= view + 1) return {view: view, width: width, culprits: []};
  const contained = el => {
    for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.position === 'fixed') return true;
      if (a !== el && s.overflowX !== 'visible') return true;
    }
    return false;
  };
  const out = el => el.getClientRects().length > 0 && el.getBoundingClientRect().right > view + 1;
  const culprits = Array.from(document.querySelectorAll('body *'))
    .filter(el => out(el) && !contained(el) && !Array.from(el.children).some(out))
    .slice(0, 3)
    .map(el => el.tagName.toLowerCase() + ' ' +
         JSON.stringify((el.innerText || el.getAttribute('src') || '').trim().slice(0, 40)));
  return {view: view, width: width, culprits: culprits};
}"""

# Tables wider than their own box (the parent's content box) with no box that scrolls sideways
# between them and the text column (the table itself included): their right-hand part is cut off
# or runs off the page.
_CUT_TABLES_JS = """() => Array.from(document.querySelectorAll('table'))
  .filter(t => t.getClientRects().length > 0)
  .map(t => {
    const col = t.closest('article, main') || document.body;
    for (let a = t; a && a !== col.parentElement; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return null;
    }
    const box = t.parentElement;
    const style = getComputedStyle(box);
    const inner = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const width = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
    const head = (t.innerText || '').trim().split(/\\s+/).slice(0, 4).join(' ');
    return {width: Math.round(width), box: Math.round(inner), head: head};
  })
  .filter(r => r && r.width > r.box + 1)"""

# Displayed equations wider than their box with nothing around them that scrolls: cut off.
_CUT_EQUATIONS_JS = """() => Array.from(document.querySelectorAll('mjx-container[display="true"]'))
  .filter(m => m.getClientRects().length > 0 && m.scrollWidth > m.clientWidth + 1)
  .filter(m => {
    const col = m.closest('article, main') || document.body;
    for (let a = m; a && a !== col.parentElement; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return false;
    }
    return true;
  })
  .map(m => ({width: m.scrollWidth, box: m.clientWidth,
              text: (m.textContent || '').trim().slice(0, 30)}))"""

# Displayed equations that scroll sideways in their own box: a phone shows no scrollbar until
# touched, so the right-hand side is as good as hidden; such an equation is broken over lines
# (``aligned``), as chapters 03 and 03a break theirs.
_SCROLLING_EQUATIONS_JS = """() => Array.from(
    document.querySelectorAll('mjx-container[display="true"]'))
  .filter(m => m.getClientRects().length > 0)
  .map(m => {
    for (let a = m; a && a !== document.body; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)
          && a.scrollWidth > a.clientWidth + 1) {
        return (m.textContent || '').trim().slice(0, 30);
      }
    }
    return null;
  })
  .filter(t => t !== null)"""

# A short inline code word with a hyphen (a command-line option) broken over two lines.
_BROKEN_CODE_WORDS_JS = """() => Array.from(document.querySelectorAll('code span.pre'))
  .filter(s => s.textContent.includes('-') && s.textContent.length <= 28
               && s.getClientRects().length > 1)
  .map(s => s.textContent)"""

# Tables that scroll sideways in their box with no visible cue right under the box that they do
# (a phone shows no scrollbar until touched; _static/scroll_hint.js writes the cue), and tables
# taller than most of the screen with no cue above them too (under such a table the reader meets
# the cue only after every row). Each as {where, head}.
_UNHINTED_SCROLLERS_JS = """() => Array.from(document.querySelectorAll('table'))
  .filter(t => t.getClientRects().length > 0)
  .flatMap(t => {
    let box = null;
    for (let a = t; a && a !== document.body && !box; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) box = a;
    }
    if (!box || box.scrollWidth <= box.clientWidth + 1) return [];
    const shown = h => h && h.classList.contains('scroll-hint') && h.getClientRects().length > 0;
    const head = (t.innerText || '').trim().split(/\\s+/).slice(0, 4).join(' ');
    const missing = [];
    if (!shown(box.nextElementSibling)) missing.push({where: 'under', head});
    if (box.clientHeight > 0.75 * window.innerHeight && !shown(box.previousElementSibling)) {
      missing.push({where: 'above', head});
    }
    return missing;
  })"""

_NEXT_FRAME_JS = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"

# Punctuation that starts a line right after inline math: the browser broke between the formula
# and its full stop (_static/math_punctuation.js keeps them together).
_LONE_PUNCTUATION_JS = """() => Array.from(document.querySelectorAll(
    "mjx-container:not([display='true'])"))
  .filter(m => m.getClientRects().length > 0)
  .map(formula => {
    const parent = formula.parentElement;
    const m = parent.classList.contains('math') && parent.childNodes.length === 1
      ? parent : formula;  // MyST's <span class="math"> around the typeset formula
    const next = m.nextSibling;
    if (!next || next.nodeType !== Node.TEXT_NODE || !/^[.,;:]/.test(next.data)) return null;
    const range = document.createRange();
    range.setStart(next, 0);
    range.setEnd(next, 1);
    const mark = range.getBoundingClientRect(), math = m.getBoundingClientRect();
    return mark.top >= math.bottom - 1 ? (formula.textContent || '').slice(0, 30) : null;
  })
  .filter(t => t !== null)"""

# Runs of bold text longer than a sentence outside headings, table headers and admonition titles
# (a glued sentence that myst-nb prints in bold, a long **...** in the prose): a wall a reader
# skips. Only the outermost bold element of a run counts.
_LONG_BOLD_JS = """() => {
  const bold = el => parseInt(getComputedStyle(el).fontWeight, 10) >= 600;
  const exempt = 'h1, h2, h3, h4, h5, h6, th, caption, dt, summary, .admonition-title, nav, header';
  return Array.from(document.querySelectorAll('article span, article strong, article b'))
    .filter(el => el.getClientRects().length > 0 && bold(el) && !el.closest(exempt))
    .filter(el => !(el.parentElement && bold(el.parentElement)))
    .map(el => (el.textContent || '').trim())
    .filter(text => text.length > 160)
    .map(text => text.slice(0, 50).trim());
}"""

# Code (a <pre>) whose lines run past the right edge of its box.
_CUT_CODE_JS = """() => Array.from(document.querySelectorAll('pre'))
  .filter(p => p.getClientRects().length > 0 && p.scrollWidth > p.clientWidth + 1)
  .map(p => (p.textContent || '').trim().split('\\n')[0].slice(0, 40))"""

# Every displayed <img> with its natural and its rendered width.
_IMAGE_SIZES_JS = """() => Array.from(document.images)
  .filter(img => img.naturalWidth > 0 && img.getClientRects().length > 0)
  .map(img => ({src: img.src, natural: img.naturalWidth,
                rendered: img.getBoundingClientRect().width}))"""

# Every <img>: forced to load now (no lazy loading), then decoded; a broken one fails to decode.
_BROKEN_IMAGES_JS = """async () => {
  const broken = [];
  for (const img of Array.from(document.images)) {
    img.loading = 'eager';
    try { await img.decode(); } catch (e) { broken.push(img.getAttribute('src')); continue; }
    if (img.naturalWidth === 0) broken.push(img.getAttribute('src'));
  }
  return broken;
}"""


# --- measurements of the book as a reader meets it, and the limits a course can teach from ------

MAX_MAIN_PATH_WORDS = 25_000
"""Visible words on the main path (the intro and chapters 00–07, 03a and 04b included) in all:
a course can read it."""
MAX_CHAPTER_WORDS = 4_000
"""Visible words on any one page of the main path."""
MAX_BOOKKEEPING_OUTSIDE_APPENDICES = 0
"""Bookkeeping words ("declaration", "declared", "item N", "family") on pages outside the
appendices: the history of what was declared when belongs to the pre-registration appendix."""
MAX_MAIN_PATH_LIBRARY_NAMES = 10
"""Library names in the prose (visible text outside code) of the whole main path."""
MAX_RESULT_BOX_WORDS = 120
"""Words in a chapter's Result box (its title left out): the answer, its effect size and the sizes
it was tested at, read at a glance."""
MAX_HIDING_TABLES = 0
"""Tables wider than the column at NARROW_VIEWPORT px that sit in no box that scrolls, or that
hide a column (a column not wholly in view until the reader scrolls sideways)."""
MIN_TICK_LABEL_PX = 9.0
"""The smallest height, in CSS px at WIDE_VIEWPORT, of a figure's tick-label digits."""
DIGIT_HEIGHT_EM = 0.73
"""Height of a digit (flat-topped: 1, 4, 7) in em of DejaVu Sans, the figures' font (its cap
height, 1493 of 2048 units): the ink a reader sees of a tick label."""

BOOKKEEPING = re.compile(r"\b(?:declarations?|declared|item \d+|famil(?:y|ies))\b", re.IGNORECASE)
"""Words that keep the study's books rather than answer its questions."""

LIBRARY_NAMES = {
    "PyTorch": r"PyTorch|torch(?:vision)?",
    "NumPy": r"NumPy|numpy",
    "pandas": r"[Pp]andas",
    "SciPy": r"SciPy|scipy",
    "scikit-learn": r"scikit-learn|sklearn|scikit-posthocs",
    "matplotlib": r"[Mm]atplotlib|seaborn",
    "papermill": r"[Pp]apermill",
    "Flower": r"Flower|flwr",
    "Ray": r"Ray",
    "Jupyter": r"Jupyter(?: Book)?|JupyterLab|myst-nb|MyST|Sphinx",
    "nbval": r"nbval",
    "pytest": r"pytest",
    "PyArrow": r"PyArrow|pyarrow",
    "Playwright": r"Playwright|playwright",
    "PyHessian": r"PyHessian|pyhessian",
    "baycomp": r"baycomp",
    "tqdm": r"tqdm",
    "ruff": r"ruff",
}
"""The libraries the book's code uses, as prose would name them (case matters where the name is
also an English word: Ray, Flower)."""
_LIBRARY = re.compile(
    "|".join(rf"(?<![\w.-])(?P<n{i}>{p})(?![\w-])" for i, p in enumerate(LIBRARY_NAMES.values()))
)
_WORD = re.compile(r"[^\W_][\w'’.,%-]*")
"""A word as a reader counts it: starts with a letter or a digit (a number is a word)."""

# The visible text of the page's article: every text a reader sees (prose, tables, printed
# output), without the code cells' inputs, the page's own code blocks, typeset math and whatever
# is folded away; and the prose alone (no code, no printed output).
_ARTICLE_TEXT_JS = """() => {
  const root = document.querySelector('article.bd-article') || document.querySelector('main')
    || document.body;
  const skip = '.cell_input, script, style, noscript, mjx-container, .headerlink, .scroll-hint';
  const code = 'pre, code, .highlight';
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const visible = [], prose = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || el.getClientRects().length === 0) continue;
    // folded content (a closed <details>) keeps its boxes: checkVisibility sees it is not shown
    if (!el.checkVisibility({visibilityProperty: true, contentVisibilityAuto: true})) continue;
    const inCode = el.closest(code) !== null;
    if (inCode && !el.closest('.cell_output')) continue;
    visible.push(n.textContent);
    if (!inCode) prose.push(n.textContent);
  }
  return {visible: visible.join(' '), prose: prose.join(' ')};
}"""

# The text of each Result box (an admonition titled "Result"), without its title.
_RESULT_BOXES_JS = """() => Array.from(document.querySelectorAll('.admonition'))
  .filter(box => (box.querySelector('.admonition-title')?.innerText || '').trim() === 'Result')
  .map(box => {
    const copy = box.cloneNode(true);
    copy.querySelectorAll('.admonition-title, script, style, mjx-container, .headerlink')
      .forEach(c => c.remove());
    return copy.textContent;
  })"""

# Tables wider than the article's text column: whether a box between them and the column scrolls
# sideways, and which columns (header labels, else "column N") are not wholly in view.
_NARROW_TABLES_JS = """() => Array.from(document.querySelectorAll('table'))
  .filter(t => t.getClientRects().length > 0)
  .map(t => {
    const col = t.closest('article, main') || document.body;
    const cs = getComputedStyle(col);
    const column = col.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const width = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
    let box = null;
    for (let a = t; a && a !== col.parentElement && !box; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) box = a;
    }
    const colRect = col.getBoundingClientRect();
    const right = Math.min(window.innerWidth,
      box ? box.getBoundingClientRect().right : colRect.right - parseFloat(cs.paddingRight));
    const rows = Array.from(t.querySelectorAll('tr'));
    const widest = rows.reduce((a, r) => (r.children.length > a.children.length ? r : a), rows[0]);
    const heads = t.querySelectorAll('thead tr');
    const labelRow = heads.length ? heads[heads.length - 1] : widest;
    const hidden = widest ? Array.from(widest.children)
      .map((c, i) => ({right: c.getBoundingClientRect().right, i: i}))
      .filter(c => c.right > right + 1)
      .map(c => {
        const cell = labelRow && labelRow.children.length === widest.children.length
          ? labelRow.children[c.i] : null;
        const label = cell ? cell.textContent.trim() : '';
        return label || 'column ' + (c.i + 1);
      }) : [];
    const head = (t.innerText || '').trim().split(/\\s+/).slice(0, 4).join(' ');
    return {width: Math.round(width), column: Math.round(column), scrolls: box !== null,
            hidden: hidden, head: head};
  })
  .filter(r => r.width > r.column + 1)"""


def count_words(text: str) -> int:
    """Words a reader reads in ``text`` (a number counts as a word)."""
    return len(_WORD.findall(text))


def bookkeeping_words(text: str) -> dict[str, int]:
    """How often each bookkeeping word (:data:`BOOKKEEPING`) occurs, by its lower-case form
    ("item 3" and "item 12" both as "item N")."""
    found: dict[str, int] = {}
    for match in BOOKKEEPING.finditer(text):
        word = re.sub(r"\d+", "N", match.group().lower())
        found[word] = found.get(word, 0) + 1
    return found


def library_names(prose: str) -> dict[str, int]:
    """How often each library of :data:`LIBRARY_NAMES` is named in ``prose``."""
    names = list(LIBRARY_NAMES)
    found: dict[str, int] = {}
    for match in _LIBRARY.finditer(prose):
        name = names[int(match.lastgroup[1:])]
        found[name] = found.get(name, 0) + 1
    return found


def tick_label_px(natural: float, rendered: float, dpi: float) -> float:
    """Height in CSS px of a tick label's digits as the browser shows a figure drawn at ``dpi``
    with ticks of FIGURE_FONT_PT, ``natural`` px wide, shown ``rendered`` px wide."""
    return figure_text_px(natural, rendered, dpi) * DIGIT_HEIGHT_EM


def _figure_ticks(page, root: Path, base: str) -> list[dict]:
    """Each matplotlib figure (a PNG with its dpi) on the page: its tick labels' height in px."""
    figures = []
    for img in page.evaluate(_IMAGE_SIZES_JS):
        src = img["src"]
        path = root / unquote(urlparse(src).path).lstrip("/") if src.startswith(base) else None
        dpi = png_dpi(path) if path is not None else None
        if dpi:
            px = tick_label_px(img["natural"], img["rendered"], dpi)
            figures.append({"src": src.replace(base, "/", 1), "tick_px": round(px, 2)})
    return figures


def _wide_measures(page, root: Path, base: str) -> dict:
    """The page at WIDE_VIEWPORT px: its visible words, the words of each Result box, bookkeeping
    words, library names in its prose, and the tick-label height of each figure."""
    text = page.evaluate(_ARTICLE_TEXT_JS)
    return {
        "words": count_words(text["visible"]),
        "result_boxes": [count_words(box) for box in page.evaluate(_RESULT_BOXES_JS)],
        "bookkeeping": bookkeeping_words(text["visible"]),
        "libraries": library_names(text["prose"]),
        "figures": _figure_ticks(page, root, base),
    }


def hiding_tables(tables: list[dict]) -> list[dict]:
    """The tables of :data:`_NARROW_TABLES_JS` a phone reader cannot read whole: in no box that
    scrolls, or with a column out of view."""
    return [t for t in tables if not t["scrolls"] or t["hidden"]]


def find_chromium() -> str | None:
    """The Chromium binary: $PLAYERFL_CHROMIUM, else Debian's `chromium` on PATH."""
    explicit = os.environ.get("PLAYERFL_CHROMIUM")
    if explicit:
        return explicit
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@contextmanager
def serve(root: Path):
    """Serve `root` on a free loopback port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@functools.cache
def _ids_in(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return frozenset(re.findall(r"""\bid=["']([^"']+)["']""", text))


def dead_internal_links(root: Path, page: Path, hrefs: list[str]) -> list[str]:
    """Links of `page` to a file of the book that does not exist, or to a missing #anchor."""
    dead = []
    for href in sorted(set(hrefs)):
        parsed = urlparse(href)
        if parsed.scheme in ("http", "https") and parsed.hostname not in ("127.0.0.1", None):
            continue  # external: not this test's business
        if parsed.scheme not in ("http", "https", ""):
            continue  # mailto:, javascript:, data:
        url, fragment = urldefrag(href)
        target = root / unquote(urlparse(url).path).lstrip("/") if url else page
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            dead.append(f"{href} (no such file)")
        elif fragment and target.suffix == ".html" and unquote(fragment) not in _ids_in(target):
            dead.append(f"{href} (no anchor #{fragment})")
    return dead


def redirect_target(page: Path) -> str | None:
    """The URL of a page that only redirects (meta refresh), else None."""
    match = re.search(
        r"""<meta[^>]+http-equiv=["']refresh["'][^>]+content=["'][^"']*url=([^"']+)["']""",
        page.read_text(encoding="utf-8", errors="replace"),
        re.IGNORECASE,
    )
    return match.group(1).strip() if match else None


def png_dpi(path: Path) -> float | None:
    """Horizontal dots per inch from a PNG's pHYs chunk; None when absent (or not a PNG)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"pHYs" and length == 9:
            per_x, _, unit = struct.unpack(">IIB", data[at + 8 : at + 17])
            return per_x * 0.0254 if unit == 1 else None  # unit 1: pixels per metre
        if kind in (b"IDAT", b"IEND"):  # pHYs must come before the image data
            return None
        at += 12 + length
    return None


def figure_text_px(natural: float, rendered: float, dpi: float) -> float:
    """Height in CSS px of the figure's smallest text as the browser shows the image."""
    return FIGURE_FONT_PT / 72 * dpi * rendered / natural


def _resolve(rel: str, href: str) -> str:
    """`href` as written in the page `rel`, made absolute from the site root."""
    from urllib.parse import urljoin

    return urljoin("/" + rel, href)


def check_pages(
    root: Path, pages: list[Path], screenshot_dir: Path, chromium: str, measures=None
) -> dict:
    """Problems per page (relative path -> list of strings); empty lists mean the page is fine.
    Given a dict ``measures``, it also receives each shown page's measurements (relative path ->
    :func:`_wide_measures`' numbers and ``tables``, the tables wider than the column at
    NARROW_VIEWPORT px), from the same two openings of the page."""
    from playwright.sync_api import sync_playwright

    screenshot_dir.mkdir(parents=True, exist_ok=True)
    problems: dict[str, list[str]] = {}
    with serve(root) as base, sync_playwright() as pw:
        # Every host but the loopback resolves to nothing: the page runs as if offline.
        offline = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", offline])
        try:
            for page_path in pages:
                rel = page_path.relative_to(root).as_posix()
                target = redirect_target(page_path)
                if target is not None:  # a bare redirect (the book's index.html): no content
                    dead = dead_internal_links(root, page_path, [_resolve(rel, target)])
                    problems[rel] = [f"dead internal link: {d}" for d in dead]
                    continue
                problems[rel] = _check_one(
                    browser, base, root, page_path, rel, screenshot_dir, measures
                )
        finally:
            browser.close()
    return problems


def _check_one(browser, base, root, page_path, rel, screenshot_dir, measures) -> list[str]:
    found: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()

    page.set_default_timeout(PAGE_TIMEOUT_MS)

    def note_outside(request):
        if urlparse(request.url).hostname not in ("127.0.0.1", None):
            found.append(f"needs the internet: {request.url}")

    page.on("request", note_outside)

    def note_console(msg):
        # The browser's own favicon probe is not part of the book.
        if msg.type == "error" and not msg.location.get("url", "").endswith("/favicon.ico"):
            found.append(f"console error: {msg.text} ({msg.location.get('url', '')})")

    page.on("console", note_console)
    page.on("pageerror", lambda err: found.append(f"script error: {err}"))
    page.on(
        "response",
        lambda r: found.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
    )
    try:
        page.goto(base + rel, wait_until="load")
        mathjax = page.evaluate(_MATHJAX_DONE_JS)
        if mathjax == "configured but not loaded":
            found.append("MathJax is configured but its script did not load")
        text = page.evaluate(_VISIBLE_TEXT_JS)
        for marker in RAW_MATH_MARKERS:
            at = text.find(marker)
            if at >= 0:
                found.append(f"untypeset math {marker!r}: ...{text[max(0, at - 30) : at + 50]}...")
        for src in page.evaluate(_BROKEN_IMAGES_JS):
            found.append(f"broken image: {src}")
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")
        local = [h.replace(base, "/", 1) if h.startswith(base) else h for h in hrefs]
        for dead in dead_internal_links(root, page_path, local):
            found.append(f"dead internal link: {dead}")
        found.extend(_layout_problems(page, root, base, text))
        if measures is not None:
            measures[rel] = _wide_measures(page, root, base)
        # The screenshot shows the first displayed formula when there is one, else the top.
        first_math = page.query_selector("mjx-container[display='true'], div.math")
        if first_math:
            first_math.scroll_into_view_if_needed()
        stem = rel.replace("/", "__").removesuffix(".html")
        page.screenshot(path=str(screenshot_dir / f"{stem}.png"))
    finally:
        context.close()
    shot = screenshot_dir / f"{stem}.{NARROW_VIEWPORT}px.png"
    measured = measures[rel] if measures is not None else None
    found.extend(_narrow_problems(browser, base + rel, shot, measured))
    return found


def table_label_problems(tables: list[dict]) -> list[str]:
    """Tables a reader would stumble on (from :data:`_TABLE_LABELS_JS`): an empty one (a header
    and no rows), Python's True/False in a cell, a number in Python's exponent form (5e-3), a
    header or index label that is a code name, a float label padded with zeros."""
    found = []
    for t in tables:
        if t["header"] and t["rows"] == 0:
            found.append(f"empty table (a header, no rows): {t['head']} ...")
        for cell in dict.fromkeys(c for c in t.get("cells", []) if c in ("True", "False")):
            found.append(f"Python's {cell} in a table cell (write yes/no): {t['head']} ...")
        for text in dict.fromkeys([*t.get("cells", []), *t["labels"]]):
            if number := _PYTHON_EXPONENT.search(text):
                found.append(f"Python's exponent form in a table: {number[0]!r} ({t['head']} ...)")
        for label in dict.fromkeys(t["labels"]):
            if _CODE_NAME.fullmatch(label):
                found.append(f"code name as a table label: {label!r} ({t['head']} ...)")
            elif _TRAILING_ZEROS.fullmatch(label):
                found.append(f"float label padded with zeros: {label!r} ({t['head']} ...)")
    return found


_PYTHON_REPR = re.compile(r"<(?:IPython|matplotlib|pandas)\.[\w.]+ (?:object|at 0x[0-9a-f]+)[^>]*>")
"""A Python object's repr where its content should be: a glued ``Markdown`` read from another
page shows as ``<IPython.core.display.Markdown object>``."""


def python_reprs(text: str) -> list[str]:
    """Python object reprs anywhere on the page (code output included), once each."""
    return [f"a Python object's repr on the page: {m}" for m in
            dict.fromkeys(_PYTHON_REPR.findall(text))]  # fmt: skip


def raw_myst(text: str) -> list[str]:
    """MyST source (a directive's fence or option, a role) in the visible text, with context."""
    found = []
    for match in _RAW_MYST.finditer(text):
        kind = {"fence": "directive", "role": "role", "option": "directive option"}[match.lastgroup]
        snippet = text[max(0, match.start() - 30) : match.end() + 40].replace("\n", " ")
        found.append(f"raw MyST {kind} {match.group().strip()!r}: ...{snippet.strip()}...")
    return found


def _layout_problems(page, root: Path, base: str, text: str) -> list[str]:
    """What the reader sees badly laid out at the wide viewport: more than one search button,
    tables wider than the column or without a caption or with a header row holding only the
    index's name, figures whose text is too small, raw
    Markdown ($, list markers) or raw MyST in the prose, negative numbers with a hyphen, code
    cells that call glue()."""
    found = raw_myst(text) + python_reprs(page.inner_text("body"))
    if (searches := page.evaluate(_SEARCH_BUTTONS_JS)) > 1:
        found.append(f"{searches} search buttons on one screen")
    for line in page.evaluate(_GLUE_CELLS_JS):
        found.append(f"code cell with a glue() call shown: {line}")
    for line in page.evaluate(_CUT_CODE_JS):
        found.append(f"code runs past its box at {WIDE_VIEWPORT} px: {line}")
    page.evaluate(_NEXT_FRAME_JS)  # the page's own scripts finish what they do on "load"
    for math in page.evaluate(_LONE_PUNCTUATION_JS):
        found.append(f"punctuation starts a line after math at {WIDE_VIEWPORT} px: {math}")
    for t in page.evaluate(_WIDE_TABLES_JS):
        found.append(
            f"table wider than its column: {t['width']} px in {t['column']} px ({t['head']} ...)"
        )
    for head in page.evaluate(_UNCAPTIONED_TABLES_JS):
        found.append(f"table without a caption: {head} ...")
    for caption in page.evaluate(_UNNUMBERED_TABLES_JS):
        found.append(f"table without a number: {caption} ...")
    for start in page.evaluate(_LONG_BOLD_JS):
        found.append(f"a paragraph in bold: {start} ...")
    found.extend(table_label_problems(page.evaluate(_TABLE_LABELS_JS)))
    for name in page.evaluate(_NAME_ONLY_HEADER_ROWS_JS):
        found.append(f"table header row holding only the index's name: {name}")
    for img in page.evaluate(_IMAGE_SIZES_JS):
        src = img["src"]
        path = root / unquote(urlparse(src).path).lstrip("/") if src.startswith(base) else None
        dpi = png_dpi(path) if path is not None else None
        if not dpi:
            continue
        px = figure_text_px(img["natural"], img["rendered"], dpi)
        if px < MIN_TEXT_PX:
            inches = img["natural"] / dpi
            found.append(
                f"figure text too small: {px:.1f} px < {MIN_TEXT_PX:g} px "
                f"({img['natural']} px at {dpi:.0f} dpi = {inches:.1f} in, shown "
                f"{img['rendered']:.0f} px wide): {src.replace(base, '/', 1)}"
            )
    at = text.find("$")
    if at >= 0:
        found.append(f"raw '$' in the text: ...{text[max(0, at - 30) : at + 40]}...")
    for para in page.evaluate(_PROSE_JS):
        for match in _HYPHEN_MINUS.finditer(para):
            snippet = para[max(0, match.start() - 30) : match.end() + 10].replace("\n", " ")
            found.append(f"hyphen as a minus sign: ...{snippet}...")
    for para in page.evaluate(_PARAGRAPHS_JS):
        match = _LIST_MARKER.search(para)
        if match:
            start = max(0, match.start() - 30)
            snippet = para[start : match.end() + 30].replace("\n", " ")
            found.append(f"raw Markdown list marker: ...{snippet}...")
    return found


def _narrow_problems(browser, url: str, path: Path, measured: dict | None = None) -> list[str]:
    """The page as a phone shows it: its screenshot, and whether it scrolls sideways or cuts a
    table or a displayed equation off; into ``measured`` (when given) its wide tables."""
    found = []
    context = browser.new_context(viewport={"width": NARROW_VIEWPORT, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.goto(url, wait_until="load")
        page.evaluate(_MATHJAX_DONE_JS)
        sideways = page.evaluate(_SIDEWAYS_JS)
        if sideways["width"] > sideways["view"] + 1:
            found.append(
                f"scrolls sideways at {NARROW_VIEWPORT} px: {sideways['width']} px wide in "
                f"{sideways['view']} px ({'; '.join(sideways['culprits'])})"
            )
        for t in page.evaluate(_CUT_TABLES_JS):
            found.append(
                f"table cut off at {NARROW_VIEWPORT} px: {t['width']} px in a box of {t['box']} px "
                f"that does not scroll ({t['head']} ...)"
            )
        for m in page.evaluate(_CUT_EQUATIONS_JS):
            found.append(
                f"equation cut off at {NARROW_VIEWPORT} px: {m['width']} px in a box of "
                f"{m['box']} px that does not scroll ({m['text']} ...)"
            )
        for text in page.evaluate(_SCROLLING_EQUATIONS_JS):
            found.append(f"equation scrolls sideways at {NARROW_VIEWPORT} px: {text} ...")
        for word in page.evaluate(_BROKEN_CODE_WORDS_JS):
            found.append(f"code word broken at its hyphen at {NARROW_VIEWPORT} px: {word}")
        page.evaluate(_NEXT_FRAME_JS)
        for t in page.evaluate(_UNHINTED_SCROLLERS_JS):
            where, head = t["where"], t["head"]
            found.append(f"table scrolls at {NARROW_VIEWPORT} px, no cue {where} it: {head} ...")
        for math in page.evaluate(_LONE_PUNCTUATION_JS):
            found.append(f"punctuation starts a line after math at {NARROW_VIEWPORT} px: {math}")
        for line in page.evaluate(_CUT_CODE_JS):
            found.append(f"code runs past its box at {NARROW_VIEWPORT} px: {line}")
        if measured is not None:
            measured["tables"] = page.evaluate(_NARROW_TABLES_JS)
        page.screenshot(path=str(path))
    finally:
        context.close()
    return found
