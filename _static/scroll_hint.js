// A table wider than a phone's column scrolls inside its own box (_static/book.css), but a phone
// shows no scrollbar until the reader touches it: a short line right under such a table says
// there is more to the right (under it, not above: above it the line would sit under the table
// before, whose caption is above it). It shows only while the table is wider than its box (a
// resize, or MathJax typesetting a cell, may change that), so a table that fits has none. A
// table taller than most of the screen gets the line above it too: under it, the reader would
// meet the line only after scrolling past every row.
(() => {
  // "Swipe" where the reader has a finger, "Scroll" where a mouse or a trackpad moves the table.
  const verb = window.matchMedia("(pointer: coarse)").matches ? "Swipe" : "Scroll";
  const TEXT = `↑ ${verb} the table above sideways for more →`;
  const TEXT_ABOVE = `${verb} the table below sideways for more →`;
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const boxOf = (table) => {
    for (let a = table; a && a.tagName !== "ARTICLE"; a = a.parentElement) {
      if (scrolls(a)) return a;
    }
    return null;
  };
  const hintAt = (box, above, wanted) => {
    const where = above ? "scroll-hint-above" : "scroll-hint-below"; // never the next box's
    let hint = above ? box.previousElementSibling : box.nextElementSibling;
    if (!(hint && hint.classList.contains(where))) {
      if (!wanted) return;
      hint = document.createElement("p");
      hint.className = `scroll-hint ${where}`;
      hint.setAttribute("aria-hidden", "true"); // the table itself is what a screen reader reads
      hint.textContent = above ? TEXT_ABOVE : TEXT;
      if (above) box.before(hint);
      else box.after(hint);
    }
    hint.hidden = !wanted;
  };
  const update = (box) => {
    const wide = box.scrollWidth > box.clientWidth + 1;
    hintAt(box, false, wide);
    hintAt(box, true, wide && box.clientHeight > 0.75 * window.innerHeight);
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
