"""Every repository path the docs and the code's comments name exists in the checkout, and every
section they name in a doc (``docs/tasks.md, "Speed"``) is a heading or a bold paragraph's lead.

README.md, docs/ (with its subfolders) and every source file under pipeline/, plugins/, tools/ and
tests/ are read for things that look like a path of this repository (``pipeline/…``, ``plugins/…``,
``tests/…``, ``tools/…``, ``docs/…``, ``motions/…``); each must name a file or folder of the
checkout. ``*`` and ``<placeholder>`` parts are wildcards that must match something. Paths that name
files inside a run directory or a user's project, not this repository, are listed in
``NOT_REPOSITORY`` with the reason.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("pipeline", "plugins", "tests", "tools", "docs", "motions")
PATH = re.compile(r"(?<![\w./<>{}-])(?:" + "|".join(ROOTS) + r")/[\w./*<>{}-]*[\w*>/]")
NOT_REPOSITORY = {
    "tests/test_g1.py": "docs/robots.md: a file of the package `primebot robots new g1` writes",
}
"""Path-looking text that does not name a file of this repository, and why."""


def sources() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for root in ("pipeline", "plugins", "tools", "tests"):
        files += sorted(p for p in (REPO / root).rglob("*.py") if ".venv" not in p.parts)
    return files


def named_paths(text: str) -> set[str]:
    return {match.rstrip(".") for match in PATH.findall(text)}


def exists(path: str) -> bool:
    """Whether ``path`` names something of the checkout; ``module.Name`` (a module's attribute, as
    ``pipeline/sim/rewards.RewardManager``) and a module named without ``.py`` count."""
    pattern = re.sub(r"<[^>]*>|\{[^}]*\}", "*", path.rstrip("/"))
    module = re.sub(r"\.[A-Za-z_]\w*$", "", pattern)
    candidates = (pattern, pattern + ".py", module + ".py")
    if "*" in pattern:
        return any(any(REPO.glob(candidate)) for candidate in candidates)
    return any((REPO / candidate).exists() for candidate in candidates)


def test_every_path_named_in_docs_and_comments_exists():
    stale = []
    for source in sources():
        for path in sorted(named_paths(source.read_text(encoding="utf-8"))):
            if path not in NOT_REPOSITORY and not exists(path):
                stale.append(f"{source.relative_to(REPO)}: {path}")
    assert not stale, "paths that do not exist:\n" + "\n".join(stale)


SECTION_REFERENCE = re.compile(r"(docs/[\w/]+\.md)\)?(?:,\s*|\s+\(\s*)[\"“]([^\"”]+)[\"”]")
"""``docs/<name>.md, "Section"``; a closing parenthesis may come between:
``(docs/<name>.md), "Section"``; or the section in parentheses: ``docs/<name>.md ("Section")``."""
QUOTES = str.maketrans("", "", '"“”')


def flattened(text: str) -> str:
    """``text`` with its line breaks, comment marks and runs of spaces as single spaces, so that a
    reference wrapped over lines of a comment or a paragraph reads as one."""
    return " ".join(re.sub(r"\n\s*#?", " ", text).split())


@functools.cache
def sections(doc: Path) -> frozenset[str]:
    """The headings of ``doc`` and the bold leads its paragraphs open with, quotes left out."""
    found = set()
    for line in doc.read_text(encoding="utf-8").splitlines():
        lead = re.match(r"#+\s+(.*)|\*\*(.+?)\*\*", line)
        if lead:
            found.add((lead.group(1) or lead.group(2)).strip().translate(QUOTES))
    return frozenset(found)


def named_sections(text: str) -> set[tuple[str, str]]:
    return {(doc, section.translate(QUOTES).strip())
            for doc, section in SECTION_REFERENCE.findall(flattened(text))}


def test_every_section_named_in_docs_and_comments_exists():
    stale = []
    for source in sources():
        for doc, section in sorted(named_sections(source.read_text(encoding="utf-8"))):
            if (REPO / doc).exists() and not any(
                    found.startswith(section) for found in sections(REPO / doc)):
                stale.append(f'{source.relative_to(REPO)}: {doc}, "{section}"')
    assert not stale, "sections that do not exist:\n" + "\n".join(stale)


def test_the_section_pattern_reads_wrapped_references():
    text = ('training (docs/tasks.md,\n    # "Training at 100 Hz\n    # physics") and '
            '(docs/deploy.md), "Before you deploy" and docs/robots.md ("Gains")')
    assert named_sections(text) == {("docs/tasks.md", "Training at 100 Hz physics"),
                                    ("docs/deploy.md", "Before you deploy"),
                                    ("docs/robots.md", "Gains")}
    assert "Training at 100 Hz physics" in sections(REPO / "docs/tasks.md")
    assert "What tracked means" in sections(REPO / "docs/tasks.md")  # its heading quotes a word


def test_the_pattern_finds_paths_and_leaves_module_names_alone():
    text = "see docs/tasks.md, `tests/motion/test_author.py` and primebot.pipeline/x (not a path)"
    assert named_paths(text) == {"docs/tasks.md", "tests/motion/test_author.py"}
    assert exists("motions/*.yaml") and exists("pipeline/sim/rewards.RewardManager")
    assert not exists("tests/" + "nowhere.py")
