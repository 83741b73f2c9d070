// A full stop or comma right after inline math stays on the math's line: the browser may break
// between the typeset formula (an inline box) and the punctuation, and a line then starts with
// a lone "." (03's "−θ·g" / "."). Once MathJax has typeset the page, each inline formula and
// the punctuation that follows it are wrapped in one span that does not break.
window.addEventListener("load", () => {
  const typeset = window.MathJax && MathJax.startup && MathJax.startup.promise;
  (typeset || Promise.resolve()).then(() => {
    const formulas = document.querySelectorAll("article.bd-article mjx-container:not([display='true'])");
    for (const formula of formulas) {
      // MyST writes inline math as <span class="math">\(…\)</span>: the punctuation follows
      // that span, whose only content is now the typeset formula.
      const parent = formula.parentElement;
      const math = parent.classList.contains("math") && parent.childNodes.length === 1
        ? parent : formula;
      const next = math.nextSibling;
      if (!next || next.nodeType !== Node.TEXT_NODE) continue;
      const mark = next.data.match(/^[.,;:!?)\]]+/);
      if (!mark) continue;
      const keep = document.createElement("span");
      keep.className = "math-with-punctuation";
      math.before(keep);
      keep.append(math, mark[0]);
      next.data = next.data.slice(mark[0].length);
    }
  });
});
