"""Small fixes to the HTML pages, so that a page opened in a browser logs no script error.

sphinx-thebe adds its inline configuration script once per build event it sees, so with Jupyter
Book 1.0 every page declared ``const THEBE_JS_URL`` twice (a SyntaxError in the console). This
extension keeps the first copy of every identical script. The theme's page template also reads
an unset ``default_mode``, so its script logged "Got invalid theme mode" on every page: it is set
to "auto" (follow the reader's system setting), the theme's own default.
"""


def _fix_page_context(app, pagename, templatename, context, doctree):
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        # An inline script's filename is None or "" depending on who added it.
        key = (getattr(script, "filename", None) or "", repr(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    # Late, so that the scripts other extensions add for the page are all there.
    app.connect("html-page-context", _fix_page_context, priority=999)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
