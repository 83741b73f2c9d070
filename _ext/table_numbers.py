"""Number the tables that chapters print from code as Sphinx numbers those written in Markdown.

A table written with the ``{table}`` directive gets "Table 17" before its caption; a table a code
cell displays (``playerfl_core.book.reports.tables.show``: HTML with a ``<caption>``) reached
the page as raw HTML, which Sphinx does not count, so most of the book's tables had no number
and the text could not point to one. Each such output is wrapped in :class:`output_table`, an
enumerable node of the ``table`` kind, so it is numbered in page order with the Markdown tables
(one sequence for the book), and its number is written at the start of its caption.
"""

import re

from docutils import nodes

_CAPTION = re.compile(r"<caption>(.*?)</caption>", re.S)
_TAG = re.compile(r"<[^>]+>")


class output_table(nodes.General, nodes.Element):  # noqa: N801 (docutils' node naming)
    """A table a code cell displayed (raw HTML with one caption), numbered as a table."""


def _caption(node) -> str:
    match = _CAPTION.search(node.astext())
    return _TAG.sub("", match.group(1)).strip() if match else ""


def _wrap_output_tables(app, doctree) -> None:
    count = 0
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if raw.get("format") != "html" or "<table" not in text or len(_CAPTION.findall(text)) != 1:
            continue
        count += 1
        wrapper = output_table(ids=[f"output-table-{count}"])
        raw.replace_self(wrapper)
        wrapper += raw


def _visit_html(self, node) -> None:
    key = f"{self.docnames[-1]}/table" if self.builder.name == "singlehtml" else "table"
    numbers = self.builder.fignumbers.get(key, {}).get(node["ids"][0])
    if numbers:
        label = self.config.numfig_format["table"] % ".".join(map(str, numbers))
        raw = node.children[0]
        text = raw.astext().replace(
            "<caption>", f'<caption><span class="caption-number">{label} </span>', 1
        )
        raw.children = [nodes.Text(text)]
    self.body.append(f'<div class="output-table" id="{node["ids"][0]}">')


def _depart_html(self, node) -> None:
    self.body.append("</div>")


def _skip(self, node) -> None:
    pass


def setup(app):
    app.add_enumerable_node(
        output_table,
        "table",
        lambda node: _caption(node),
        html=(_visit_html, _depart_html),
        latex=(_skip, _skip),
        text=(_skip, _skip),
        man=(_skip, _skip),
        texinfo=(_skip, _skip),
    )
    app.connect("doctree-read", _wrap_output_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
