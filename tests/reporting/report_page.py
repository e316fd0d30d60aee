"""Read a written report back: its tables (by id) as rows of (text, classes), its images
and its text, for the report tests."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path


class Page(HTMLParser):
    """Tables (by id) as lists of rows of (text, classes), image sources, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, str]]]] = {}
        self.marks: dict[str, list[str]] = {}
        # each cell's attributes (style, title), row by row as in tables
        self.attrs: dict[str, list[list[dict[str, str | None]]]] = {}
        self.images: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self._table: str | None = None
        self._row: list[tuple[str, str]] | None = None
        self._cell: list[str] | None = None
        self._classes = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"table{len(self.tables)}"
            self.tables[self._table] = []
            self.marks[self._table] = []
            self.attrs[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
            self.attrs[self._table].append([])
            self.marks[self._table].append(a.get("class") or "")
        elif tag in ("td", "th") and self._row is not None:
            self._cell, self._classes = [], ""
            if self._table is not None:
                self.attrs[self._table][-1].append(a)
        elif tag == "span" and self._cell is not None:
            self._classes = a.get("class") or ""
        elif tag == "img":
            self.images.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(("".join(self._cell).strip(), self._classes))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def rows(self, table: str) -> list[dict[str, tuple[str, str]]]:
        header, *body = self.tables[table]
        return [dict(zip([h for h, _ in header], row, strict=True)) for row in body]


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page
