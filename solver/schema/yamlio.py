"""YAML in, with line numbers out: errors name the file, the line and the field.

`load_yaml` parses with PyYAML's safe loader and also records the line of every mapping key
and sequence item, so a pydantic error location such as ('services', 0, 'slo', 'ttft_ms') maps
back to the line a user wrote. Duplicate keys are errors (PyYAML would silently keep the last).
"""

from __future__ import annotations

import reprlib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from solver.errors import InputError
from solver.schema.suggest import did_you_mean
from solver.schema.userfile import MAX_DOC_BYTES, read_user_text
from solver.schema.yamlbound import YAML_LIMITS, BoundedLoader, YamlLimits

Loc = tuple[str | int, ...]


@dataclass
class YamlDoc:
    path: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known node on `loc` (1-based)."""
        for n in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:n]))
            if line is not None:
                return line
        return None


def _walk(node: yaml.Node, path: Loc, lines: dict[Loc, int], where: str,
          seen_nodes: set[int] | None = None) -> None:
    # An alias shares its anchor's node: walk each node once (a self-referencing alias would
    # recurse forever, a "billion laughs" file would take exponential time and memory); paths
    # under an alias then fall back to the alias's own line in line_of().
    if seen_nodes is None:
        seen_nodes = set()
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise InputError(f"{where}:{line}: {_dotted(path)}: a key must be a name, "
                                 f"not a {'list' if isinstance(key_node, yaml.SequenceNode) else 'mapping'}")
            key = key_node.value
            if key in seen:
                raise InputError(
                    f"{where}:{line}: {_dotted(path + (key,))}: duplicate key "
                    f"(first given on line {seen[key]})"
                )
            seen[key] = line
            lines[path + (key,)] = line
            _walk(value_node, path + (key,), lines, where, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), lines, where, seen_nodes)


def _syntax_error(exc: yaml.YAMLError, where: str) -> InputError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None) or ""
    opened = getattr(exc, "context_mark", None)
    if opened is not None and mark is not None and opened.line != mark.line and (
        "flow" in context or "quoted" in context
    ):
        # An unclosed '[', '{' or quote: the parser gives up lines later (or at the end of
        # the file), but the line to fix is the one where it was opened.
        mark, problem = opened, f"{context} opened here: {problem} (line {mark.line + 1})"
    line = f":{mark.line + 1}" if mark is not None else ""
    if mark is None and isinstance(exc, yaml.reader.ReaderError):
        problem = f"{exc.reason} (character {exc.character!r} at position {exc.position})"
    return InputError(f"{where}{line}: YAML syntax error: {problem}")


def parse_yaml(text: str, where: str, limits: YamlLimits = YAML_LIMITS) -> YamlDoc:
    """The document of `text`, parsed once (composed within `limits`, then constructed)."""
    if len(text) > limits.max_chars:
        raise InputError(f"{where}: {len(text):,} characters, over the {limits.max_chars:,} a YAML "
                         "document may have")
    loader = None
    try:
        loader = BoundedLoader(text, where, limits)
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, where) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[Loc, int] = {(): 1}
    if root is not None:
        _walk(root, (), lines, where)
    return YamlDoc(where, data, lines)


def load_yaml(path: str | Path, what: str = "YAML file", limits: YamlLimits = YAML_LIMITS,
              limit_bytes: int = MAX_DOC_BYTES) -> YamlDoc:
    """A YAML (or JSON) file a user named: a regular file of at most `limit_bytes`
    (schema/userfile.py), composed within `limits` (schema/yamlbound.py)."""
    text = read_user_text(path, limit_bytes, what, encoding="utf-8-sig")
    return parse_yaml(text, str(path), limits)


def _dotted(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _clean_loc(loc: tuple, data: Any = None) -> Loc:
    # pydantic adds the tag of a union member ('function-after[...]', 'str', 'ModelCard'...).
    # A part that is a key (or index) of the input at that point is the user's, whatever it
    # looks like (an unknown key 'Budget' or 'int'); only parts that are not are tested for
    # looking like a tag.
    out: list[str | int] = []
    node = data
    for p in loc:
        if isinstance(node, dict) and p in node:
            out.append(p)
            node = node[p]
        elif isinstance(node, list) and isinstance(p, int) and 0 <= p < len(node):
            out.append(p)
            node = node[p]
        elif isinstance(p, int) or not _is_union_tag(str(p)):
            out.append(p)
            node = None
    return tuple(out)


def _is_union_tag(part: str) -> bool:
    return "[" in part or part in {"str", "int", "float", "bool", "list", "dict"} or part[:1].isupper()


_short_repr = reprlib.Repr()  # keyword arguments need Python 3.12
_short_repr.maxlevel, _short_repr.maxlist, _short_repr.maxdict = 3, 8, 8
_short_repr.maxstring = _short_repr.maxother = 60


def _models_in(ann: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation may hold (through Optional, unions, lists, dicts)."""
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return [ann]
    return [m for a in typing.get_args(ann) for m in _models_in(a)]


def _known_keys(model: type[BaseModel] | None, loc: Loc) -> set[str]:
    """The keys the model accepts at `loc` (a path of the user's keys and indexes)."""
    if model is None:
        return set()
    current: list[type[BaseModel]] = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        nxt = [m for c in current for f in [c.model_fields.get(part)] if f is not None
               for m in _models_in(f.annotation)]
        current = nxt or current  # a dict's key (a sweep path): the models stay
    return {k for c in current for k, f in c.model_fields.items()} | {
        f.alias for c in current for f in c.model_fields.values() if f.alias}


def describe_validation_error(exc: ValidationError, doc: YamlDoc, prefix: Loc = (),
                              data: Any = None, model: type[BaseModel] | None = None) -> str:
    """One line per problem: file:line: field: message."""
    msgs: list[str] = []
    first: list[str] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False):
        loc = prefix + _clean_loc(tuple(err["loc"]), data)
        cause = (err.get("ctx") or {}).get("error")
        loc += tuple(getattr(cause, "loc", ()))  # a FieldError names the field inside the model
        line = doc.line_of(loc)
        kind = err["type"]
        if kind == "extra_forbidden":
            key = str(err["loc"][-1])
            text = f"unknown key '{key}'" + did_you_mean(key, _known_keys(model, loc[len(prefix):-1]))
        elif kind == "missing":
            text = "required field is missing"
        else:
            text = err["msg"]
            if "input" in err and kind not in {"model_type", "dict_type"}:
                shown = _short_repr.repr(err["input"])
                if len(shown) <= 60:
                    text += f" (got {shown})"
        msg = f"{doc.path}:{line if line is not None else '?'}: {_dotted(loc)}: {text}"
        if msg not in seen:
            seen.add(msg)
            (first if kind == "extra_forbidden" else msgs).append(msg)
    return one_line(first + msgs)


def one_line(msgs: list[str], shown: int = 3) -> str:
    """Problems on one line: the first `shown` (an unknown key first: a typo also makes its
    field missing), then how many more."""
    more = f"; and {len(msgs) - shown} more" if len(msgs) > shown else ""
    return "; ".join(msgs[:shown]) + more


def validate_doc(model: type[BaseModel], doc: YamlDoc, data: Any = None, prefix: Loc = ()) -> Any:
    """Validate `data` (default: the whole document) or raise an InputError with lines."""
    try:
        return model.model_validate(doc.data if data is None else data)
    except ValidationError as exc:
        raw = doc.data if data is None else data
        raise InputError(describe_validation_error(exc, doc, prefix, raw, model)) from None
