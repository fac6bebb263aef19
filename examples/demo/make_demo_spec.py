"""Regenerates demo.spec.json: a ~120 KB file spec with multibyte text on chunk boundaries.

Run from the repository root: ``python examples/demo/make_demo_spec.py``; it writes
``entrypoints/demo/demo.spec.json`` (package data, so ``pi-squad demo`` works from an installed
wheel) and its ``demo.spec.json.sha256``. The content is deterministic.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SUBJECTS = [
    "naïve café crème brûlée",
    "東京の駅で待ち合わせをする人々の言葉",
    "Zürich Straße größer als Köln",
    "emoji 🙂🚀🎉🧪 sequences",
    "Ελληνικά κείμενα με τόνους",
    "русский текст с ёлками",
]


_GOAL_TEXT = (
    "Build wordfreq, a streaming Unicode word-frequency tool, from this spec alone. It reads "
    "UTF-8 text in 64 KiB blocks without ever splitting a word or a character, folds case with "
    "full Unicode case folding, keeps apostrophes inside words, and prints the top N words as "
    "text or JSON. Memory stays proportional to the number of distinct words, never to the "
    "input size. Every requirement below is numbered; each one needs a test that names its "
    "number, and the QA report must list every number it checked and how, so that a reviewer "
    "can follow the evidence from the requirement to the test to the result without guessing"
)
# Padded so that two chunk boundaries fall inside multi-byte characters (see the module doc).
GOAL = _GOAL_TEXT + "." * (631 - len(_GOAL_TEXT))


def requirements(prefix: str, count: int, verb: str) -> str:
    lines = []
    for n in range(1, count + 1):
        subject = SUBJECTS[n % len(SUBJECTS)]
        lines.append(
            f"{prefix}-{n:04d}: The word counter shall {verb} input containing {subject} exactly "
            f"as the design specifies, and a test shall verify case {n} with a fixture whose "
            f"64 KiB block boundary falls inside a multi-byte character."
        )
    return "\n".join(lines)


def main() -> None:
    spec = {
        "schemaVersion": 1,
        "goal": GOAL,
        "tasks": [
            {
                "id": "design",
                "title": "Design the interface and tokenisation",
                "description": requirements("DES", 120, "tokenise"),
                "agent": "architect",
                "depends": [],
                "inheritContext": False,
                "artifactRefs": [],
            },
            {
                "id": "build",
                "title": "Implement streaming counting",
                "description": requirements("IMP", 160, "count"),
                "agent": "backend",
                "depends": ["design"],
                "inheritContext": False,
                "artifactRefs": [],
            },
            {
                "id": "docs",
                "title": "Write the user guide",
                "description": requirements("DOC", 60, "document"),
                "agent": "docs",
                "depends": ["design"],
                "inheritContext": False,
                "artifactRefs": [],
            },
            {
                "id": "qa",
                "title": "Verify end to end",
                "description": requirements("QA", 120, "verify"),
                "agent": "qa",
                "depends": ["build", "docs"],
                "inheritContext": False,
                "artifactRefs": [],
            },
        ],
        "agents": {
            name: {"model": None, "thinking": None}
            for name in ("architect", "backend", "docs", "qa")
        },
        "config": {"maxConcurrency": 2, "autoUnblock": True, "maxRetries": 1},
        "artifacts": [],
    }
    data = (json.dumps(spec, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    demo = Path(__file__).resolve().parents[2] / "entrypoints" / "demo"
    (demo / "demo.spec.json").write_bytes(data)
    (demo / "demo.spec.json.sha256").write_text(hashlib.sha256(data).hexdigest() + "\n")
    print(len(data), hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    main()
