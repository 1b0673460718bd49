"""What a batch plans: the problem files named on the command line, the key (file name) of each
planned problem, and the hash of everything a plan depends on (for `--resume`)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from solver import __version__
from solver.batch.work import Flow
from solver.catalog import shipped
from solver.catalog.calibration import DEFAULT_ENGINE, calibration_path
from solver.errors import InputError
from solver.problem.load import ResolvedProblem
from solver.profiles.format import (
    FAMILIES,
    csv_path_of,
    profile_folder,
    read_provenance,
)

SUFFIXES = (".yaml", ".yml")
_GLOB_CHARS = re.compile(r"[*?\[]")


def _is_glob(ref: str) -> bool:
    return bool(_GLOB_CHARS.search(ref)) and not os.path.exists(ref)


def discover(refs: Iterable[str], recursive: bool = False) -> list[Path]:
    """The problem files: each ref is a file, a folder (its *.yaml and *.yml files, sorted; with
    `recursive`, those of its subfolders too), a glob (`**` matches subfolders), or the name of a
    shipped problem. A ref that finds nothing is an error (exit 2) before anything is planned;
    a file given twice is planned once."""
    found: list[Path] = []
    for ref in refs:
        if _is_glob(ref):
            hits = sorted(Path(p) for p in glob.glob(ref, recursive=True)
                          if Path(p).is_file() and p.endswith(SUFFIXES))
            if not hits:
                raise InputError(f"{ref}: the pattern matches no .yaml file")
            found += hits
        elif os.path.isdir(ref):
            pattern = "**/*" if recursive else "*"
            hits = sorted(p for p in Path(ref).glob(pattern)
                          if p.is_file() and p.name.endswith(SUFFIXES))
            if not hits:
                raise InputError(f"{ref}: the folder holds no .yaml file"
                                 + ("" if recursive else " (--recursive searches its subfolders)"))
            found += hits
        elif os.path.exists(ref) or ref.endswith(SUFFIXES) or "/" in ref:
            if not os.path.isfile(ref):
                raise InputError(f"{ref}: no such file or folder")
            found.append(Path(ref))
        else:
            found.append(shipped.resolve("problems", ref))  # a shipped problem's name
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return list(unique.values())


_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+@-]")
MAX_KEY = 120  # characters of a result file's stem before it is shortened with a hash


def printable(text: str) -> str:
    """`text` as valid UTF-8 for the documents: a file name's undecodable bytes (which Python
    keeps as surrogates) become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def safe_name(text: str) -> str:
    """A file-name-safe form of a problem name (other characters become '_')."""
    key = _UNSAFE.sub("_", text).lstrip(".") or "_"
    if len(key) > MAX_KEY:
        key = f"{key[:MAX_KEY - 17]}~{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    return key


def file_keys(paths: list[Path]) -> list[str]:
    """A distinct key per file: its stem, or (where two files share a stem) its stem with as
    many parent folders as make it distinct, joined by '__'."""
    parts = [p.resolve().with_suffix("").parts for p in paths]
    depth = [1] * len(paths)
    while True:
        keys = ["__".join(pp[-d:]) for pp, d in zip(parts, depth)]
        seen: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            seen.setdefault(k, []).append(i)
        clash = [i for idx in seen.values() if len(idx) > 1 for i in idx if depth[i] < len(parts[i])]
        if not clash:
            return [safe_name(k) for k in keys]
        for i in clash:
            depth[i] += 1


def variant_key(file_key: str, values: tuple[tuple[str, float], ...]) -> str:
    from solver.schema.sweep import format_value

    if not values:
        return file_key
    return safe_name(f"{file_key}@{','.join(f'{k}={format_value(v)}' for k, v in values)}")


# ---- the input hash ----------------------------------------------------------------------------


def _sha_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _card_file(kind: str, ref: Any, base: Path | None) -> str:
    """The hash of a card given by name or path; an inline card is part of the problem."""
    if not isinstance(ref, str):
        return "inline"
    try:
        return _sha_file(shipped.resolve(kind, ref, base))  # type: ignore[arg-type]
    except InputError:
        return "missing"


def input_parts(rp: ResolvedProblem, flow: Flow) -> list[tuple[str, str]]:
    """Everything the plan of `rp` depends on, as (what, value) pairs: the problem (validated,
    with a sweep's values applied, and its name: comments and spelling do not count, so a
    file edited only there is not planned again, nor are the variants of a sweep that kept
    their values when the sweep gained others), the card files it names, the engine's
    calibration file, the measured tables' sidecars (their content hashes) for each hardware
    type, how it is planned (solver options, timings, decision record) and fleetplan's version."""
    p = rp.problem
    doc_base = Path(rp.doc.path).parent if not rp.doc.path.startswith("<") else None
    engine = p.software.engine or DEFAULT_ENGINE
    parts: list[tuple[str, str]] = [
        ("fleetplan", __version__),
        ("options", repr(flow)),
        ("name", rp.name),
        ("problem", json.dumps(p.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))),
    ]
    for i, s in enumerate(p.services):
        parts.append((f"model[{i}]", _card_file("models", s.model, doc_base)))
    for j, h in enumerate(p.hardware):
        parts.append((f"hardware[{j}]", _card_file("hardware", h.type, doc_base)))
    cal = calibration_path(engine)
    if rp.calibration_file is not None:  # the problem's own calibration file
        parts.append((f"calibration:{engine}", rp.calibration_file.sha256))
    else:
        parts.append((f"calibration:{engine}", _sha_file(cal) if cal.is_file() else "none"))
    for card in rp.hardware:
        folder = profile_folder(card.name, engine)
        for family in FAMILIES:
            if csv_path_of(folder, family) is None:
                continue
            meta = folder / f"{family}.meta.json"
            try:
                content = read_provenance(meta).content_sha256
            except InputError:
                content = "unreadable"
            parts.append((f"profile:{card.name}/{engine}/{family}", f"{content} {_sha_file(meta)}"))
    return parts


def input_sha256(rp: ResolvedProblem, flow: Flow) -> str:
    h = hashlib.sha256()
    for what, value in input_parts(rp, flow):
        h.update(f"{what}\0{value}\n".encode())
    return h.hexdigest()
