"""References between the docs resolve: a section named after a file (`realtime.md,
"Design decisions"`, `docs/building.md, "What `make test` does"`) is a heading of that
file, and a link `file.md#anchor` names one of its headings (GitHub's slugs). Checked in
README.md and docs/*.md, so that a page rewritten (docs/realtime.md, issue 35) leaves no
reference dangling."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAMED = re.compile(r'([\w-]+\.md)(?:\]\([^)]*\))?,?\s+"([^"\n]{3,80})"')
ANCHOR = re.compile(r'\]\(([\w./-]*\.md)#([\w-]+)\)')


def _target(source, name):
    for path in (source.parent / name, ROOT / name, ROOT / "docs" / Path(name).name):
        if path.is_file():
            return path
    raise AssertionError(f"{source.name} refers to {name}, which does not exist")


def _headings(path):
    return [line.lstrip("#").strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")]


def _slug(heading):
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_named_sections_and_anchors_exist():
    checked, missing = 0, []
    for source in DOCS:
        text = source.read_text(encoding="utf-8")
        for name, title in NAMED.findall(text):
            heads = _headings(_target(source, name))
            checked += 1
            if not any(title in h for h in heads):
                missing.append(f'{source.name}: {name}, "{title}"')
        for name, anchor in ANCHOR.findall(text):
            checked += 1
            if anchor not in {_slug(h) for h in _headings(_target(source, name))}:
                missing.append(f"{source.name}: {name}#{anchor}")
    assert checked >= 5, checked          # the patterns still find the references
    assert not missing, missing
