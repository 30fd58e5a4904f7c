"""What BMAD's own tools say of a harvested project, written before git-bmad reads it.

Run by scripts/harvest-corpus.sh with v6.12's Python environment (ruamel.yaml, BMAD's YAML
library) and v6.12's sprint_plan.py. Prints one JSON object:
  sprint_file    the sprint status BMAD reads (the config's implementation_artifacts, else
                 the places BMAD's workflows look);
  read_by        "ruamel" when BMAD's YAML library reads it, else "lines": BMAD's workflows
                 are prompts that read the file line by line;
  stories        [key, status] for every key of BMAD's story grammar (N-M-slug), in file
                 order, its status normalised as sprint_plan.py normalises (drafted ->
                 ready-for-dev, contexted -> in-progress);
  other_keys     keys outside BMAD's grammar (neither epic, retrospective nor story);
  recommendation sprint_plan.py status's story_key, when it reads the file;
  v4_stories     for a v4 project (`.bmad-core/core-config.yaml`, no sprint status): the
                 files of its devStoryLocation that BMAD v4's Scrum Master writes (named
                 `{epic}.{story}…`, or `story-{epic}.{story}…` as some projects name them, with the story template's `## Story` or `## Acceptance
                 Criteria` section; the folder itself, as v4's tasks read it), each with the
                 first line of its `## Status` section.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

STORY = re.compile(r"^(\d+)-(\d+)([a-z]?)-.+")
EPIC = re.compile(r"^epic-(\d+)$")
RETRO = re.compile(r"^epic-(\d+)-retrospective$")
LEGACY = {"drafted": "ready-for-dev", "contexted": "in-progress"}
RELEASES = Path(__file__).resolve().parent.parent / "target" / "bmad-releases"
SPRINT_PLAN = RELEASES / "6.12.0/src/bmm-skills/plan/bmad-sprint-planning/scripts/sprint_plan.py"


def sprint_file(root: Path):
    for config in ("_bmad/bmm/config.yaml", "bmad/bmm/config.yaml", ".bmad/bmm/config.yaml"):
        path = root / config
        if path.is_file():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                m = re.match(r"^(implementation_artifacts|sprint_artifacts):\s*['\"]?([^'\"#]+)", line)
                if m:
                    folder = m.group(2).strip().replace("{project-root}/", "").replace("{project-root}", "")
                    candidate = root / folder / "sprint-status.yaml"
                    if candidate.is_file():
                        return candidate
    # Where BMAD's workflows look when the config names no folder that holds it; a sprint
    # status anywhere else (an archive, a module's own) is not the project's.
    for rel in (
        "_bmad-output/implementation-artifacts/sprint-status.yaml",
        "docs/sprint-artifacts/sprint-status.yaml",
        "docs/sprint-status.yaml",
    ):
        if (root / rel).is_file():
            return root / rel
    return None


def entries_by_ruamel(text: str):
    data = YAML(typ="rt").load(text)
    dev = data.get("development_status") if hasattr(data, "get") else None
    if not hasattr(dev, "items"):
        raise ValueError("development_status is no mapping")
    return [(str(k), "" if v is None else str(v)) for k, v in dev.items()]


def entries_by_lines(text: str):
    out, inside = [], False
    for line in text.splitlines():
        if re.match(r"^development_status:\s*(#.*)?$", line):
            inside = True
            continue
        if inside and line and not line[0].isspace() and not line.startswith("#"):
            inside = False
        if not inside:
            continue
        m = re.match(r"^\s+([^\s:#][^:]*):\s*(.*?)\s*(#.*)?$", line)
        if m:
            out.append((m.group(1).strip().strip("'\""), m.group(2).strip().strip("'\"")))
    return out


def v4_stories(root: Path):
    config = root / ".bmad-core" / "core-config.yaml"
    if not config.is_file():
        return None
    location = "docs/stories"
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.match(r"^devStoryLocation:\s*['\"]?([^'\"#]+)", line)
        if m:
            location = m.group(1).strip()
    folder = root / location
    out = []
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        # The SM names a story {epic}.{story}…; some projects prefix `story-`.
        if not re.match(r"^(story-)?\d+\.\d+", path.name, re.I):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not re.search(r"^#{2,3} (story|user story|acceptance criteria):?\s*$", text, re.M | re.I):
            continue
        status, after = "", False
        for line in text.splitlines():
            if after and line.strip():
                if not line.startswith("#"):
                    status = line.strip()
                break
            if re.match(r"^#{2,3} status\s*$", line, re.I):
                after = True
        out.append([str(path.relative_to(root)), status])
    return out


def main():
    root = Path(sys.argv[1])
    path = sprint_file(root)
    result = {"sprint_file": None, "read_by": None, "stories": [], "other_keys": [], "recommendation": None}
    if path is None:
        result["v4_stories"] = v4_stories(root)
        print(json.dumps(result, indent=1, ensure_ascii=False))
        return
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    result["sprint_file"] = str(path.relative_to(root))
    try:
        entries, result["read_by"] = entries_by_ruamel(text), "ruamel"
    except Exception:
        entries, result["read_by"] = entries_by_lines(text), "lines"
    for key, status in entries:
        if STORY.match(key):
            result["stories"].append([key, LEGACY.get(status, status)])
        elif not EPIC.match(key) and not RETRO.match(key):
            result["other_keys"].append(key)
    if result["read_by"] == "ruamel":
        run = subprocess.run(
            [sys.executable, str(SPRINT_PLAN), "status", "--status-file", str(path)],
            capture_output=True,
            text=True,
        )
        try:
            status = json.loads(run.stdout)
            rec = status.get("recommendation") or {}
            result["recommendation"] = rec.get("story_key")
        except ValueError:
            pass
    print(json.dumps(result, indent=1, ensure_ascii=False))


main()
