// A long line of code wraps (_static/book.css) and its continuation keeps the line's own
// indentation plus four columns, as an editor shows it, instead of starting at column 0 where it
// would read as a new statement ("weight_decay=config.weight_decay)" under a "for"). Each line
// becomes a block of its own with a hanging indent; its text, newline included, is untouched,
// so copying the code still gives it as written. A long name may break after an underscore, a
// dot, a slash, a bracket, a comma or "=" (an invisible <wbr>), not in the middle of a word
// ("scratch_m" / "odel" on a phone); the CSS still breaks anywhere when no such place fits.
// Only a long name may break after its underscores: lines break greedily, so a short one such
// as "per_client" would split ("per_" / "client") where a break at the space before it keeps it
// whole. A dot followed by a digit is a decimal point, never a break: the primer's docstring read
// "(0.01 at α = 0." / "05)".
const BREAK_AFTER = /(?<=[_/(,=])|(?<=\.)(?!\d)/;
const BREAK_AFTER_SHORT = /(?<=[/(,=])|(?<=\.)(?!\d)/;
const LONG_NAME = 16;

function withBreaks(piece) {
  const long = piece.textContent.length >= LONG_NAME;
  const parts = piece.textContent.split(long ? BREAK_AFTER : BREAK_AFTER_SHORT);
  if (parts.length < 2) return piece;
  const host = piece.nodeType === Node.TEXT_NODE ? document.createElement("span") : piece;
  host.textContent = "";
  parts.forEach((part, i) => {
    if (i > 0) host.append(document.createElement("wbr"));
    host.append(part);
  });
  return host;
}

document.addEventListener("DOMContentLoaded", () => {
  for (const pre of document.querySelectorAll("article.bd-article div.highlight pre")) {
    const nodes = Array.from(pre.childNodes);
    // Pygments writes flat tokens (a span holding text); anything else is left as it is.
    if (nodes.some((n) => n.nodeType === Node.ELEMENT_NODE && n.children.length > 0)) continue;
    const lines = [[]];
    for (const node of nodes) {
      const parts = node.textContent.split(/(?<=\n)/);
      parts.forEach((part) => {
        if (!part) return;
        const piece = node.nodeType === Node.TEXT_NODE ? document.createTextNode(part)
          : Object.assign(node.cloneNode(false), { textContent: part });
        lines[lines.length - 1].push(withBreaks(piece));
        if (part.endsWith("\n")) lines.push([]);
      });
    }
    if (lines[lines.length - 1].length === 0) lines.pop();
    pre.replaceChildren(...lines.map((pieces) => {
      const line = document.createElement("span");
      line.className = "code-line";
      const indent = pieces.map((p) => p.textContent).join("").match(/^ */)[0].length;
      line.style.setProperty("--indent", `${indent}ch`);
      line.append(...pieces);
      return line;
    }));
  }
});
