"""The documentation holds together: README.md stays a short user's guide that opens with the two commands, every
relative link in README.md and docs/*.md reaches a file of the repository (and a heading, when it names one), and
no code comment sends the reader to notes outside the repository."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README_MAX_BYTES = 20_000
TWO_COMMANDS = """```bash
scripts/run     # install into .venv, migrate, demo user + live demo flow, serve http://127.0.0.1:8000 with the worker
scripts/test    # install test dependencies and run the whole suite (exactly what CI runs)
```"""

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
# Notes that live outside the repository; docs/design.md and docs/architecture.md restate what the code needs.
OUTSIDE_NOTES = re.compile(r"\b(DESIGN|ENVIRONMENT)\.md|(?<![\w.-])" + "spec/")
SOURCE_DIRS = ("flows", "pentagi_web", "summarizer", "tests", "scripts", "bench", ".ci")


def _prose(text: str) -> str:
    """The text without code: links inside code blocks and spans are examples, not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def _relative_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(path.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]  # http:, https:, mailto: ...


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_heading_of_the_repository(doc):
    broken = []
    for target in _relative_links(doc):
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if ROOT not in dest.parents and dest != ROOT:
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_is_a_short_guide():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move details into docs/ (limit {README_MAX_BYTES})"


def test_the_readme_opens_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    title, _, rest = text.partition("\n")
    assert title.startswith("# "), "README.md starts with its title"
    assert rest.lstrip("\n").startswith(TWO_COMMANDS + "\n"), "the two-command block follows the title"


def test_the_readme_indexes_every_document():
    links = {(README.parent / t.partition("#")[0]).resolve() for t in _relative_links(README)}
    missing = [d.name for d in DOCS if d.resolve() not in links]
    assert not missing, f"README.md 'Where to read more' does not link {missing}"


def _texts(paths: Iterable[Path], skip_suffixes: set[str]) -> Iterator[tuple[Path, str]]:
    """(path, text) of every UTF-8 file among `paths` but this one and those with a skipped suffix."""
    here = Path(__file__).resolve()
    for path in paths:
        if not path.is_file() or path.resolve() == here or path.suffix in skip_suffixes:
            continue
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def _source_files() -> list[Path]:
    return [p for folder in SOURCE_DIRS for p in sorted((ROOT / folder).rglob("*"))]


def test_no_comment_cites_notes_outside_the_repository():
    hits = []
    for path, text in _texts(_source_files(), {".json", ".png", ".pyc"}):
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_NOTES.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}")
    assert not hits, "cite docs/design.md or docs/architecture.md instead: " + ", ".join(hits)


# A merge that kept both sides' lines once landed with its markers in bench/README.md: the table rendered broken.
CONFLICT_MARKER = re.compile(r"^(<{7}|>{7})( |$)|^={7}$", re.M)


def test_no_file_keeps_merge_conflict_markers():
    files = [README, *DOCS, *_source_files()]
    hits = [str(path.relative_to(ROOT)) for path, text in _texts(files, {".png", ".pyc", ".sqlite3"})
            if CONFLICT_MARKER.search(text)]
    assert not hits, f"merge conflict markers left in {hits}"
