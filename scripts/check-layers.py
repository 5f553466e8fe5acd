#!/usr/bin/env python3
"""Checks that no include in runtime/ runs back up the layers.

The runtime is built in floors (docs/architecture.md, "Layout and
boundaries"), bottom up:

  base -> plan, data, collectives -> core -> backends, checkpoint -> job

A file may include its own folder and the floors below it, never its own
floor's other folders or a floor above; the backends never include each
other (the cpu and cuda backends never include the reference backend); nothing in runtime/ includes
compiler/, dialects/ or frontends/ (the runtime never links MLIR).

Usage: check-layers.py [REPO_ROOT]. Prints every violation as
`file:line: includes X (floor ...)` and exits 1 if there is any.
"""

import pathlib
import re
import sys

FLOORS = {
    "base": 0,
    "plan": 1,
    "data": 1,
    "collectives": 1,
    "core": 2,
    "backends": 3,
    "checkpoint": 3,
    "job": 4,
}
OUTSIDE = ("compiler/", "dialects/", "frontends/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = {".h", ".cpp", ".cu", ".cuh"}


def folder_of(path):
    """('core', None) for runtime/core/X; ('backends', 'cpu') for a backend."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "runtime":
        return None, None
    if parts[1] == "backends":
        return "backends", parts[2] if len(parts) > 3 else None
    return parts[1], None


def violations(root):
    found = []
    for file in sorted((root / "runtime").rglob("*")):
        if file.suffix not in SOURCES or not file.is_file():
            continue
        rel = file.relative_to(root).as_posix()
        floor, backend = folder_of(rel)
        if floor not in FLOORS:
            found.append(f"{rel}:1: runtime/{floor} is on no floor of "
                         "scripts/check-layers.py")
            continue
        for number, line in enumerate(file.read_text(errors="replace")
                                      .splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if target.startswith(OUTSIDE):
                found.append(f"{rel}:{number}: includes {target}: the runtime "
                             "never includes compiler/, dialects/ or "
                             "frontends/")
                continue
            tfloor, tbackend = folder_of(target)
            if tfloor is None:
                continue  # a system header, or the build's generated ones
            if tfloor not in FLOORS:
                found.append(f"{rel}:{number}: includes {target}, on no floor")
            elif tfloor == floor:
                if floor == "backends" and tbackend != backend:
                    found.append(
                        f"{rel}:{number}: includes {target}: backends/"
                        f"{backend} may not include backends/{tbackend}")
            elif FLOORS[tfloor] >= FLOORS[floor]:
                found.append(
                    f"{rel}:{number}: includes {target}: runtime/{floor} "
                    f"(floor {FLOORS[floor]}) may include only floors below "
                    f"it, not runtime/{tfloor} (floor {FLOORS[tfloor]})")
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    found = violations(root)
    for v in found:
        print(v)
    print(f"check-layers: {len(found)} include(s) against the layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
