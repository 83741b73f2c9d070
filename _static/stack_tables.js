// On a phone, a table wider than its column is read as cards: one block per row, each cell
// under its column's name (_static/book.css, "table.stacked"), so no column a sentence depends
// on is out of view. A table that fits keeps its grid; at 960 px and wider nothing changes.
(() => {
  const NARROW = window.matchMedia("(max-width: 599.98px)");

  // Each column's name: the texts of the header rows above it, colspans spread, repeats dropped.
  const columnNames = (table) => {
    const grid = [];
    for (const tr of table.querySelectorAll("thead tr")) {
      const line = [];
      for (const cell of tr.children) {
        for (let k = 0; k < (cell.colSpan || 1); k++) line.push(cell.textContent.trim());
      }
      grid.push(line);
    }
    const width = Math.max(0, ...grid.map((line) => line.length));
    return Array.from({length: width}, (_, i) =>
      grid.map((line) => line[i] || "").filter((t, j, all) => t && all.indexOf(t) === j)
        .join(", "));
  };

  // Label every body cell with its column's name, minding cells that span rows above it.
  const label = (table) => {
    const names = columnNames(table);
    const taken = [];
    Array.from(table.querySelectorAll("tbody tr")).forEach((tr, r) => {
      let col = 0;
      for (const cell of tr.children) {
        while (taken[r] && taken[r][col]) col++;
        if (cell.tagName === "TD" && names[col]) cell.dataset.label = names[col];
        for (let dr = 1; dr < (cell.rowSpan || 1); dr++) {
          (taken[r + dr] = taken[r + dr] || [])[col] = true;
        }
        col += cell.colSpan || 1;
      }
    });
  };

  // The width a table may take: its column's, less the column's padding.
  const room = (table) => {
    const col = table.closest("article, main") || document.body;
    const cs = getComputedStyle(col);
    return col.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  };
  const update = () => {
    for (const table of document.querySelectorAll("article.bd-article table")) {
      table.classList.remove("stacked");
      if (!NARROW.matches || !table.querySelector("thead")) continue;
      if (Math.max(table.scrollWidth, table.getBoundingClientRect().width) > room(table) + 1) {
        if (!table.dataset.labelled) {
          label(table);
          table.dataset.labelled = "yes";
        }
        table.classList.add("stacked");
      }
    }
  };
  window.addEventListener("load", update);
  NARROW.addEventListener("change", update);
})();
