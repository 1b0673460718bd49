"""A YAML loader that bounds a document while it is composed, before anything is built from it.

PyYAML's composer recurses once per level of nesting (a few hundred levels of `[[[...` end in a
RecursionError), gives every node of a 10^6-item list a Python object before any schema sees
the list, lets an alias stand for a whole subtree (a "billion laughs" file expands to 10^9
nodes for whoever walks the data), and hands every digit string to int() (over 4,300 digits
Python refuses with a ValueError). `BoundedLoader` composes the one document of a text within
`YamlLimits` and stops at the first node beyond one, naming its line and its field:

- depth: mappings and sequences nested at most `max_depth` deep;
- nodes: at most `max_nodes` nodes in the file, and at most that many once every alias is
  expanded (each anchored node's expanded size is counted where an alias repeats it);
- items: at most `max_items` items in one sequence or mapping;
- numbers: an integer or float literal of at most `max_number_chars` characters.

A value the constructor cannot build (a date such as 2024-13-45) is an error naming its line
too, never a ValueError.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from solver.errors import InputError

_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
# types no fleetplan document holds: refused rather than read as something else (bytes as a name)
_REFUSED_TAGS = ("binary", "set", "omap", "pairs")


@dataclass(frozen=True)
class YamlLimits:
    max_chars: int = 16 << 20  # the text (the file limit, schema/userfile.py MAX_DOC_BYTES)
    max_depth: int = 64  # the deepest shipped document nests 8 levels
    max_nodes: int = 250_000  # a problem with 1,000 services of ~60 nodes each is 60,000
    max_items: int = 50_000  # entries of one list or mapping (the longest a schema takes: current, 10,000)
    max_number_chars: int = 100  # a float64 needs 24 characters; int() stops at 4,300 digits


YAML_LIMITS = YamlLimits()
# result documents (`fleetplan simulate|deploy|canary RESULT.json`): written by fleetplan, larger
RESULT_LIMITS = YamlLimits(max_chars=64 << 20, max_nodes=4_000_000, max_items=1_000_000)


def _part(index) -> str | int | None:
    if isinstance(index, int):
        return index
    if isinstance(index, yaml.ScalarNode):
        return str(index.value)
    return None  # a mapping key is being composed


def _dotted(path: list) -> str:
    out = ""
    for part in path[:8]:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    if len(path) > 8:
        out += f"... ({len(path)} levels)"
    return out or "(top level)"


try:  # libyaml's parser when PyYAML was built with it: it scans ten times faster
    from yaml._yaml import CParser as _CParser
except ImportError:  # pragma: no cover - a PyYAML without libyaml
    _CParser = None

if _CParser is not None:
    class _Base(Composer, _CParser, SafeConstructor, Resolver):  # type: ignore[misc, valid-type]
        """The safe loader's parts with the Python composer over libyaml's events (only a
        Python composer can be bounded)."""

        def __init__(self, text: str):
            _CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:  # pragma: no cover
    class _Base(yaml.SafeLoader):  # type: ignore[no-redef]
        pass


class BoundedLoader(_Base):
    """The loader of the module docstring."""

    def __init__(self, text: str, where: str, limits: YamlLimits):
        super().__init__(text)
        self._where, self._limits = where, limits
        self._path: list[str | int] = []
        self._nodes = 0
        self._sizes: dict[int, int] = {}  # id(node) -> nodes it expands to (aliases included)

    def _fail(self, mark, text: str) -> InputError:
        line = f":{mark.line + 1}" if mark is not None else ""
        return InputError(f"{self._where}{line}: {_dotted(self._path)}: {text}")

    def compose_node(self, parent, index):
        part = _part(index)
        if part is not None:
            self._path.append(part)
        mark = self.peek_event().start_mark
        # levels: the collections around this node, and the node itself when it is one
        opens = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        if len(self._path) + opens > self._limits.max_depth:
            raise self._fail(mark, f"nested more than {self._limits.max_depth} levels deep")
        if not self.check_event(yaml.AliasEvent):
            self._nodes += 1
            if self._nodes > self._limits.max_nodes:
                raise self._fail(mark, f"more than {self._limits.max_nodes:,} YAML nodes in the file")
        node = super().compose_node(parent, index)
        self._measure(node, mark)
        if part is not None:
            self._path.pop()
        return node

    def _measure(self, node, mark) -> None:
        if id(node) in self._sizes:  # an alias (or a recursive one: its anchor counts once)
            return
        if isinstance(node, yaml.ScalarNode):
            self._sizes[id(node)] = 1
            if node.tag in _NUMBER_TAGS and len(node.value) > self._limits.max_number_chars:
                raise self._fail(mark, f"a number of {len(node.value):,} characters; at most "
                                       f"{self._limits.max_number_chars} are read")
            return
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = [n for pair in node.value for n in pair]
        size = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        self._sizes[id(node)] = size
        if size > self._limits.max_nodes:
            raise self._fail(mark, f"expands to more than {self._limits.max_nodes:,} YAML nodes "
                                   "(aliases of aliases repeat whole subtrees)")

    def _count_item(self, count: int, mark) -> None:
        if count > self._limits.max_items:
            raise self._fail(mark, f"more than {self._limits.max_items:,} entries in one list or mapping")

    def compose_sequence_node(self, anchor):
        start = self.get_event()
        tag = start.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.SequenceNode, None, start.implicit)
        node = yaml.SequenceNode(tag, [], start.start_mark, None, flow_style=start.flow_style)
        if anchor is not None:
            self.anchors[anchor] = node
        while not self.check_event(yaml.SequenceEndEvent):
            self._count_item(len(node.value) + 1, start.start_mark)
            node.value.append(self.compose_node(node, len(node.value)))
        node.end_mark = self.get_event().end_mark
        return node

    def compose_mapping_node(self, anchor):
        start = self.get_event()
        tag = start.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.MappingNode, None, start.implicit)
        node = yaml.MappingNode(tag, [], start.start_mark, None, flow_style=start.flow_style)
        if anchor is not None:
            self.anchors[anchor] = node
        while not self.check_event(yaml.MappingEndEvent):
            self._count_item(len(node.value) + 1, start.start_mark)
            key = self.compose_node(node, None)
            node.value.append((key, self.compose_node(node, key)))
        node.end_mark = self.get_event().end_mark
        return node

    def _refuse(self, node):
        kind = node.tag.rsplit(":", 1)[-1]
        raise InputError(f"{self._where}:{node.start_mark.line + 1}: a YAML !!{kind} value is not "
                         "accepted here (give plain numbers, strings, lists and mappings)")

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError, TypeError, RecursionError) as exc:
            line = node.start_mark.line + 1
            raise InputError(f"{self._where}:{line}: cannot read the value "
                             f"{str(node.value)[:40]!r} ({exc})") from None


for _tag in _REFUSED_TAGS:
    BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", BoundedLoader._refuse)
