"""Sphinx configuration for the skbayes_search documentation."""

import os
import socket

project = "skbayes_search"
author = "skbayes_search developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
autosummary_generate = True
numpydoc_show_class_members = False
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
    "numpy": ("https://numpy.org/doc/stable", None),
}


def _online(host: str = "scikit-learn.org") -> bool:
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError:
        return False
    return True


# Without network the inventories cannot be fetched, which Sphinx reports as an
# untyped warning that -W turns into an error: an offline build (no network, or
# SKBAYES_DOC_OFFLINE=1) drops the cross-project links instead. The glossary
# terms scikit-learn's inherited docstrings use (:term:`fit`) then have no
# target, so their warnings are silenced too.
if os.environ.get("SKBAYES_DOC_OFFLINE") or not _online():
    intersphinx_mapping = {}
    suppress_warnings = ["ref.term"]

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    # alphabetical by file name: the examples do not build on each other
    "within_subsection_order": "FileNameSortKey",
    # the last expression of a cell is not printed (plot functions return axes)
    "capture_repr": (),
}
html_theme = "pydata_sphinx_theme"
html_title = "skbayes_search"
exclude_patterns = ["_build", "sg_execution_times.rst"]
