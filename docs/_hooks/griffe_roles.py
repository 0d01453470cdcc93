"""A Griffe extension of this site (mkdocs.yml, mkdocstrings' ``extensions``): the package's docstrings
are written for Sphinx and pytest's own documentation (``:class:`X```, ``:meth:`check```, a literal block
after ``::``); on the site each role is its name as code and ``::`` one colon."""

from __future__ import annotations

import re
from typing import Any

import griffe

#: a Sphinx role: ``:class:`~a.b.C``` (``~``: show ``C`` only) or ``:meth:`check```
ROLE = re.compile(r":(?:class|meth|func|attr|data|mod|exc|obj|ref):`(~?)([^`]+)`")


def plain(text: str) -> str:
    text = ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)
    return re.sub(r"(?<=\S)::$", ":", text, flags=re.M)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
