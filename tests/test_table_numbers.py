"""Tables a code cell displays are numbered with the Markdown ones (``_ext/table_numbers.py``)."""

from pathlib import Path

from sphinx.application import Sphinx

EXT = Path(__file__).parents[1] / "_ext"
PAGE = """Page
====

.. table:: Written in the text

   ===  ===
   a    b
   ===  ===
   1    2
   ===  ===

.. raw:: html

   <table><caption>Printed by a code cell</caption><tr><td>3</td></tr></table>

.. raw:: html

   <table><tr><td>no caption, no number</td></tr></table>

.. raw:: html

   <table><caption>Printed second</caption><tr><td>4</td></tr></table>
"""


def test_a_table_printed_by_code_gets_the_next_table_number_in_its_caption(tmp_path):
    (tmp_path / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['table_numbers']\nnumfig = True\n"
    )
    (tmp_path / "index.rst").write_text(PAGE)
    out = tmp_path / "_build"
    app = Sphinx(tmp_path, tmp_path, out, out / ".doctrees", "html", status=None, warning=None)
    app.build()
    html = (out / "index.html").read_text()
    assert '<span class="caption-number">Table 1 </span>' in html  # the text's own table
    assert '<caption><span class="caption-number">Table 2 </span>Printed by a code cell' in html
    assert '<caption><span class="caption-number">Table 3 </span>Printed second' in html
    assert "Table 4" not in html  # an uncaptioned table is not counted
