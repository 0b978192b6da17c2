"""Checks the documentation's links: every relative link and image in README.md, docs/*.md and
the other READMEs must name a file or folder of the repository and, for a markdown file, a
heading that exists (GitHub's anchors). In README.md and docs/, every repository path written in
backticks (`src/...`, `results/h200/*.md`) must exist too. Standard library only; run from
anywhere: python3 tests/scripts/doc_links_test.py"""

import glob
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINKED = ["README.md", "docs/*.md", "tests/README.md", "configs/README.md", "results/baselines/README.md"]
PATHS_CHECKED = ["README.md", "docs/*.md"]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:src|scripts|results|configs|tests|docs|cmake|\.ci)/[^`\s<>]*)`")
FENCE = re.compile(r"^(```|~~~)")


def prose_lines(text):
    """The lines outside fenced code blocks."""
    inside = False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            yield line


def anchors(markdown_file):
    """GitHub's anchors of a markdown file's headings: lower case, punctuation dropped, spaces to
    hyphens, repeats numbered."""
    seen = {}
    result = set()
    for line in prose_lines(markdown_file.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


def files(patterns):
    return sorted({Path(p) for pattern in patterns for p in glob.glob(str(ROOT / pattern))})


def main():
    problems = []
    checked = 0
    for doc in files(LINKED):
        name = doc.relative_to(ROOT)
        text = doc.read_text(encoding="utf-8")
        for line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                checked += 1
                path, _, anchor = target.partition("#")
                dest = (doc.parent / path).resolve() if path else doc
                if not dest.exists():
                    problems.append(f"{name}: {target}: no such file or folder")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{name}: {target}: no heading with the anchor #{anchor}")
        if doc in files(PATHS_CHECKED):
            for line in prose_lines(text):
                for path in CODE_PATH.findall(line):
                    checked += 1
                    if not glob.glob(str(ROOT / path.rstrip("/"))):
                        problems.append(f"{name}: `{path}`: no such file or folder")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"doc links: {checked} checked, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
