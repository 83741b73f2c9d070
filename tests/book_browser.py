"""Open built HTML pages in a real headless Chromium and list what a reader would see broken.

Why a browser: untypeset math, a missing image or a script error only show once JavaScript has
run. The pages are served from 127.0.0.1 and every request to another host is refused, so a page
that needs the internet (a CDN) fails here as it would in a classroom without a network.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

RAW_MATH_MARKERS = ("\\[", "\\(", "$$")
PAGE_TIMEOUT_MS = 300_000  # generous: the test machine may be shared and slow

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


def _resolve(rel: str, href: str) -> str:
    """`href` as written in the page `rel`, made absolute from the site root."""
    from urllib.parse import urljoin

    return urljoin("/" + rel, href)


def check_pages(root: Path, pages: list[Path], screenshot_dir: Path, chromium: str) -> dict:
    """Problems per page (relative path -> list of strings); empty lists mean the page is fine."""
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
                problems[rel] = _check_one(browser, base, root, page_path, rel, screenshot_dir)
        finally:
            browser.close()
    return problems


def _check_one(browser, base, root, page_path, rel, screenshot_dir) -> list[str]:
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
        # The screenshot shows the first displayed formula when there is one, else the top.
        first_math = page.query_selector("mjx-container[display='true'], div.math")
        if first_math:
            first_math.scroll_into_view_if_needed()
        shot = screenshot_dir / (rel.replace("/", "__").removesuffix(".html") + ".png")
        page.screenshot(path=str(shot))
    finally:
        context.close()
    return found
