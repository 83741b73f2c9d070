// Inline code on a phone: a short code word with a hyphen (`--dataset-module`, `-p`,
// `test-slow`) stays on one line instead of breaking at its hyphen, where a reader sees "-" and
// "p dataset_module" on two lines. Only a class is added: the text is untouched, so copying a
// command still gives the command. Longer words (module paths) may still break where they must
// (_static/book.css), so no page scrolls sideways.
document.addEventListener("DOMContentLoaded", () => {
  for (const word of document.querySelectorAll("article.bd-article code span.pre")) {
    const text = word.textContent;
    if (text.includes("-") && text.length <= 28) word.classList.add("code-word-whole");
  }
});
