"""The elements of an HTML page (activerag's run page, or the DOM Chromium dumps of it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "source", "wbr"}


@dataclass
class Element:
    """One element: its tag, attributes and all the text inside it."""

    tag: str
    attrs: dict[str, str]
    text: str = ""
    classes: set[str] = field(default_factory=set)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def _element(self, tag: str, attrs: list[tuple[str, str | None]]) -> Element:
        values = {k: v or "" for k, v in attrs}
        element = Element(tag, values, classes=set(values.get("class", "").split()))
        self.elements.append(element)
        return element

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = self._element(tag, attrs)
        if tag not in VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].tag == tag:
                del self.open[i:]
                return

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element.text += data


def elements(html: str) -> list[Element]:
    """Every element of HTML in document order."""
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return parser.elements


def having(found: list[Element], tag: str, cls: str) -> list[Element]:
    """The elements of FOUND with TAG and class CLS."""
    return [e for e in found if e.tag == tag and cls in e.classes]


def svg_nodes(found: list[Element]) -> dict[str, Element]:
    """The graph picture's nodes by name."""
    return {e.attrs["data-node"]: e for e in having(found, "g", "node")}


def draft_tokens(found: list[Element]) -> list[Element]:
    """The coloured tokens of the sentences (the legend's sample token has no probability)."""
    return [e for e in having(found, "span", "tok") if "data-p" in e.attrs]
