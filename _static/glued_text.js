// myst-nb prints every glued value in bold (span.pasted-text): that marks a computed number in a
// sentence, but a glued sentence or list in bold is a wall a reader skips. Past a few words a
// glued value reads as the prose around it (_static/book.css).
document.addEventListener("DOMContentLoaded", () => {
  for (const span of document.querySelectorAll("span.pasted-text")) {
    if (span.textContent.trim().length > 40) span.classList.add("pasted-sentence");
  }
});
