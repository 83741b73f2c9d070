// A table wider than a phone's column scrolls inside its own box (_static/book.css), but a phone
// shows no scrollbar until the reader touches it: a short line right under such a table says
// there is more to the right (under it, not above: above it the line would sit under the table
// before, whose caption is above it). It shows only while the table is wider than its box (a
// resize, or MathJax typesetting a cell, may change that), so a table that fits has none.
(() => {
  const TEXT = "↑ Swipe the table sideways for more →";
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const boxOf = (table) => {
    for (let a = table; a && a.tagName !== "ARTICLE"; a = a.parentElement) {
      if (scrolls(a)) return a;
    }
    return null;
  };
  const update = (box) => {
    const wide = box.scrollWidth > box.clientWidth + 1;
    let hint = box.nextElementSibling;
    if (!(hint && hint.classList.contains("scroll-hint"))) {
      if (!wide) return;
      hint = document.createElement("p");
      hint.className = "scroll-hint";
      hint.setAttribute("aria-hidden", "true"); // the table itself is what a screen reader reads
      hint.textContent = TEXT;
      box.after(hint);
    }
    hint.hidden = !wide;
  };
  // On "load", not "DOMContentLoaded": the theme wraps Markdown tables in their scrolling box
  // when the DOM is ready, and the line goes under that box.
  window.addEventListener("load", () => {
    const boxes = new Set();
    for (const table of document.querySelectorAll("article.bd-article table")) {
      const box = boxOf(table);
      if (box) boxes.add(box);
    }
    const observer = new ResizeObserver((entries) => {
      for (const entry of entries) update(entry.target);
    });
    for (const box of boxes) {
      update(box);
      observer.observe(box);
    }
  });
})();
