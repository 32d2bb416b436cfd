"""The settings a server changes on its own, found in its source (issue 30, point 4).

An *override* is a log call in the same block as an assignment to one of the server's settings:
SGLang's ``ServerArgs`` fields (``self.<field> = ...`` in ``ServerArgs`` and its argument groups,
``server_args.<field> = ...`` / ``self.server_args.<field> = ...`` anywhere), vLLM's engine
arguments and its engine, model, cache, parallel, scheduler, compilation ... configs
(``self.<field> = ...`` in a ``*Config``/``EngineArgs`` class, ``<x>_config.<field> = ...``
anywhere). The block is the list of statements the two share (a function body, an ``if``'s branch,
a loop's body): the server tests a condition, changes the setting and says so.

For each such log call (found by its line and column among the messages the miner already mined,
whose template, level, function and phase it takes) the record says

* ``setting``: the field assigned (the one the message names, by its placeholders or its words,
  else the assignment nearest the call), and ``also``: the other fields the block assigns;
* ``roles``: what each placeholder of the template holds, in order: ``requested`` (the setting
  printed before the assignment: the value asked for), ``actual`` (the setting printed after it,
  or the value assigned: the value in force), or ``other``;
* ``value``: the value assigned, when the source assigns a constant (``True``, ``16``,
  ``"triton"``): the value in force even when the text does not print it;
* ``default``: the assignment fills a setting left unset (under ``if <setting> is None`` /
  ``if not <setting>`` / ``== "auto"``): a choice, not a change of what was asked for.

Nothing of the source is copied but the templates the catalogue already holds. Shared by
``mine_sglang.py`` and ``mine_vllm.py`` (each says which assignments are to a setting).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# a target `owner.field`: the setting it is (the owner's dotted name, the field, the enclosing class),
# and whether it holds the setting's opposite (`self.enable_overlap` of `disable_overlap_schedule`),
# or None when it is no setting
IsSetting = Callable[[str, str, str], "tuple[str, bool] | None"]

_BLOCKS = ("body", "orelse", "finalbody")
_UNSET = ("None", "'auto'", '"auto"', "''")


@dataclass
class Assignment:
    setting: str
    line: int
    value: ast.AST
    default: bool
    negated: bool = False  # the target holds the setting's opposite
    owner: str = ""  # what the target is an attribute of (`self`, `server_args`, `cfg`)


@dataclass
class Found:
    """A log call next to assignments to settings (the miner joins it to its message by line, col)."""

    line: int
    col: int
    setting: str
    also: list[str]
    args: list[str]  # the call's arguments after the message (a %-format's values), unparsed
    assigned: Assignment
    before: bool  # the call comes before the assignment
    fields: set[str] = field(default_factory=set)  # every setting the block assigns
    aliases: set[str] = field(default_factory=set)  # locals holding the setting's value from before


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _targets(stmt: ast.stmt) -> list[ast.AST]:
    if isinstance(stmt, ast.Assign):
        out: list[ast.AST] = []
        for t in stmt.targets:
            out.extend(t.elts if isinstance(t, ast.Tuple) else [t])
        return out
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        return [stmt.target]
    return []


def _unset_test(test: ast.AST, target: str, flag: bool = False) -> bool:
    """``if <target> is None`` / ``== "auto"`` / ``if not <target>`` (a value, not a flag: a flag
    off is a choice the user made too), alone, with others by ``and``, or every part of an ``or``."""
    if isinstance(test, ast.BoolOp):
        parts = [_unset_test(v, target, flag) for v in test.values]
        return any(parts) if isinstance(test.op, ast.And) else all(parts)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return not flag and _dotted(test.operand) == target
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and _dotted(test.left) == target:
        op, right = test.ops[0], ast.unparse(test.comparators[0])
        return isinstance(op, (ast.Is, ast.Eq)) and right in _UNSET
    return False


class OverrideFinder:
    """Walks one module: every log call that shares a block with an assignment to a setting."""

    def __init__(self, is_setting: IsSetting, setters: frozenset[str] = frozenset()) -> None:
        self.is_setting = is_setting
        self.setters = setters  # calls that set settings by keyword: `declare_resolution(server_args, "hook", x=1)`
        self.found: list[Found] = []

    def visit(self, tree: ast.AST) -> list[Found]:
        self._walk(tree, "", [])
        return self.found

    def _walk(self, node: ast.AST, cls: str, tests: list[ast.AST]) -> None:
        """Every block under ``node``, with the class it is in and the ``if`` tests that guard it
        (an ``if``'s own test guards its body only)."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                self._walk(child, child.name, [])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._block(child.body, cls, [], init=child.name == "__init__")
                self._walk(child, cls, [])
            elif isinstance(child, ast.stmt):
                for name in _BLOCKS:
                    block = getattr(child, name, None)
                    if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                        guard = tests + ([child.test] if isinstance(child, ast.If) and name == "body" else [])
                        self._block(block, cls, guard)
                        for stmt in block:
                            self._walk_stmt(stmt, cls, guard)
                for handler in getattr(child, "handlers", []):
                    self._block(handler.body, cls, tests)
                    for stmt in handler.body:
                        self._walk_stmt(stmt, cls, tests)

    def _walk_stmt(self, stmt: ast.stmt, cls: str, tests: list[ast.AST]) -> None:
        """A statement of a block: its own blocks (and the functions and classes it defines)."""
        holder = ast.Module(body=[stmt], type_ignores=[])
        self._walk(holder, cls, tests)

    def _block(self, block: list[ast.stmt], cls: str, tests: list[ast.AST], init: bool = False) -> None:
        """``init``: the block is a constructor's own body, where `self.x = ...` sets the object up
        (`self.lora_backend = backend_type(...)`): no change of a setting."""
        assigns = [a for a in self._assignments(block, cls, tests) if not (init and a.owner == "self")]
        if not assigns:
            return
        for stmt in block:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(call, ast.Call) and not self._setter(call):
                self.found.append(self._pick(call, assigns, _aliases(block)))

    def _setter(self, call: ast.Call) -> bool:
        return _dotted(call.func).split(".")[-1] in self.setters

    def _assignments(self, block: list[ast.stmt], cls: str, tests: list[ast.AST]) -> Iterator[Assignment]:
        for stmt in block:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(call, ast.Call) and self._setter(call):
                for k in call.keywords:
                    if k.arg is not None:
                        flag = _is_flag(k.value)
                        default = any(_unset_test(t, f"{o}.{k.arg}", flag) for t in tests for o in _owners(t))
                        yield Assignment(k.arg, stmt.lineno, k.value, default)
            for target in _targets(stmt):
                if not isinstance(target, ast.Attribute):
                    continue
                owner = _dotted(target.value)
                setting = self.is_setting(owner, target.attr, cls) if owner else None
                if setting is not None and stmt.value is not None and not _no_change(stmt, target.attr):
                    value = stmt.value
                    if isinstance(stmt, ast.AugAssign):  # `x *= 0.9`: the value in force is x * 0.9
                        value = ast.BinOp(left=target, op=stmt.op, right=value)
                    name = f"{owner}.{target.attr}"
                    default = any(_unset_test(t, name, _is_flag(value)) for t in tests)
                    yield Assignment(setting[0], stmt.lineno, value, default, setting[1], owner)

    def _pick(self, call: ast.Call, assigns: list[Assignment], aliases: dict[str, str]) -> Found:
        """The setting the message is about: one its values print, else one its words name, else
        the assignment nearest the call."""
        text = ast.unparse(call).lower()
        words = re.sub(r"[\s\-]+", "_", text)

        def rank(a: Assignment) -> tuple[int, int]:
            # the setting printed first, else named first, else the nearest
            printed = re.search(rf"\.{a.setting}\b", text)
            named = words.find(a.setting.lower())
            if printed is not None:
                return (0, printed.start())
            return (1, named) if named >= 0 else (2, abs(a.line - call.lineno))

        best = min(assigns, key=rank)
        fields = {a.setting for a in assigns}
        return Found(
            line=call.lineno,
            col=call.col_offset,
            setting=best.setting,
            also=sorted(fields - {best.setting}),
            args=[ast.unparse(a) for a in call.args[1:]],
            assigned=best,
            before=call.lineno < best.line,
            fields=fields,
            aliases={name for name, setting in aliases.items() if setting == best.setting},
        )


def _aliases(block: list[ast.stmt]) -> dict[str, str]:
    """`original = cfg.chunked_prefill_size` in the block: a local that keeps a setting's value
    from before it changes (printed, it is the value asked for)."""
    out = {}
    for stmt in block:
        one = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        if one and isinstance(stmt.value, ast.Attribute):
            out[stmt.targets[0].id] = stmt.value.attr
    return out


def _no_change(stmt: ast.stmt, name: str) -> bool:
    """An assignment that changes no setting: a copy of it (`self.lora_backend = server_args.lora_backend`,
    `self.x = x`), or a total kept in it (`compilation_time += elapsed`: only a fixed step, `*= 0.9`,
    changes a setting)."""
    if isinstance(stmt, ast.AugAssign):
        return not isinstance(stmt.value, ast.Constant)
    value = getattr(stmt, "value", None)
    return isinstance(value, (ast.Name, ast.Attribute)) and _dotted(value).split(".")[-1] == name


def _is_flag(value: ast.AST) -> bool:
    return isinstance(value, ast.Constant) and isinstance(value.value, bool)


def _owners(test: ast.AST) -> set[str]:
    """The owners of the attributes a test reads (`cfg` of `cfg.x is None`)."""
    return {_dotted(n.value) for n in ast.walk(test) if isinstance(n, ast.Attribute) and _dotted(n.value)}


# -- the placeholders ----------------------------------------------------------------------------

_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_PERCENT = re.compile(r"%%|%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[sdifrgexXcaou]")


def placeholders(template: str, fmt: str, args: list[str]) -> list[str]:
    """The expressions of a template's placeholders, in order: an f-string's own, a %-format's
    and a str.format's from the call's arguments ('' when not known)."""
    if fmt == "fstring":
        return [m.group(1).split("!")[0].split(":")[0] for m in _FIELD.finditer(template) if m.group(1) is not None]
    if fmt == "percent":
        n = sum(1 for m in _PERCENT.finditer(template) if m.group(0) != "%%")
        return [args[i] if i < len(args) else "" for i in range(n)]
    if fmt == "format":
        return ["" for m in _FIELD.finditer(template) if m.group(1) is not None]
    return []


def _names(expr: str) -> set[str]:
    """The whole dotted names an expression reads (`self.x` of `min(self.x, y)`, not `self`)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return set()
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return {_dotted(n) for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in inner and _dotted(n)}


# a setting's words that say nothing of which setting it is, and the abbreviations its name uses
_STOP = {"enable", "disable", "use", "num", "max", "min", "size", "mode", "is", "the", "of", "per", "to", "by"}
_SPELLED = {"tp": "tensor", "dp": "data", "ep": "expert", "pp": "pipeline", "attn": "attention", "bs": "batch",
            "mem": "memory", "spec": "speculative", "kv": "kv", "gpu": "gpu", "cp": "context"}
_TEXT_WORD = re.compile(r"[a-z0-9]+")


def names_setting(template: str, setting: str) -> bool:
    """Whether the text speaks of the setting: at least one, and half, of the words of its name
    that say which setting it is (by their first five letters: 'scheduler' for 'schedule',
    'disabled' for 'disable'; 'tp' spelled 'tensor')."""
    words = [_SPELLED.get(w, w) for w in setting.lower().split("_") if w]
    significant = [w for w in words if w not in _STOP] or words
    text = set(_TEXT_WORD.findall(re.sub(r"[_\-]", " ", template.lower())))
    hits = sum(1 for w in significant if any(t.startswith(w[:5]) for t in text))
    return hits >= 1 and 2 * hits >= len(significant)


def related(entry: dict) -> bool:
    """Whether the message is about the setting its block changes: it prints the value asked for
    or in force, names the setting, or prints the constant assigned ('Use float16 ...')."""
    if "requested" in entry["roles"] or "actual" in entry["roles"]:
        return True
    value = entry.get("value")
    literal = re.sub(r"\{[^{}]*\}|%[-\d.]*[sdfr]", " ", entry["template"])
    if value not in (None, "None", "True", "False") and re.search(rf"\b{re.escape(value)}\b", literal):
        return True
    return names_setting(literal, entry["setting"])


def roles(found: Found, exprs: list[str]) -> list[str]:
    """What each placeholder holds: the setting before its assignment (``requested``), after it or
    what is assigned (``actual``), or ``other``."""
    value = ast.unparse(found.assigned.value)
    value_names = _names(value)
    out = []
    for expr in exprs:
        names = _names(expr) if expr else set()
        mentions = any(n.split(".")[-1] == found.setting for n in names)
        if expr in found.aliases:
            out.append("requested")
        elif expr and (expr == value or (names and names <= value_names and not mentions)):
            out.append("actual")
        elif mentions and len(names) <= 2:  # `self.x`, `self.server_args.x`, not an expression of several
            out.append("requested" if found.before else "actual")
        else:
            out.append("other")
    return out


def constant(node: ast.AST) -> str | None:
    """The value assigned, when it is a constant (as Python prints it: True, 16, triton)."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (bool, int, float, str))):
        return str(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return ast.unparse(node)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id[:1].isupper():
        return node.attr  # an enum member: CUDAGraphMode.PIECEWISE prints PIECEWISE
    return None


_FLIPPED = {"True": "False", "False": "True"}


def record(found: Found, message: dict) -> dict:
    """The catalogue's override entry: the message (template, level, function, phase) and what it
    says of the setting."""
    exprs = placeholders(message["template"], message["format"], found.args)
    entry = {
        "line": message["line"],
        "function": message["function"],
        "level": message["level"],
        "template": message["template"],
        "format": message["format"],
        "phase": message.get("phase"),
        "setting": found.setting,
        "roles": roles(found, exprs),
    }
    value = constant(found.assigned.value)
    if value is not None:
        entry["value"] = _FLIPPED.get(value, value) if found.assigned.negated else value
    if found.also:
        entry["also"] = found.also
    if found.assigned.default:
        entry["default"] = True
    return entry


def mine(tree: ast.AST, messages: list[dict], is_setting: IsSetting, setters: frozenset[str] = frozenset()) -> list[dict]:
    """The overrides of one module, joined to its mined messages (by line and column): a call that
    is no mined log call is no override."""
    at = {(m["line"], m["col"]): m for m in messages}
    out = []
    for found in OverrideFinder(is_setting, setters).visit(tree):
        message = at.get((found.line, found.col))
        if message is not None and message["level"] not in ("raise", "print", "tqdm"):
            entry = record(found, message)
            if related(entry):
                out.append(entry)
    return out
