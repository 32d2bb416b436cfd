"""The grammars' regular messages compiled into Python regular expressions, by a program.

Lark's LALR parser costs ~0.2 ms a line (its lexer and parser run in Python, a tree is built, then
flattened); most messages of the packs are regular (a fixed sequence of literals, fields and
repeated ``key=value`` tails), and a regular expression recognises them in microseconds. This module
derives, from each grammar as Lark loaded it (its BNF rules, its LALR table and its contextual
lexers), one regular expression per grammar with one alternative per message rule, and reads the
match back into the :class:`Parsed` Lark's parse would have given (same rule, tokens, fields,
values). The ``.lark`` files stay the one source; Lark stays the reference and the parser of what is
not regular (the configuration dump, nested values): ``tests/test_recognisers.py`` checks on every
example line of every message and on every fixture line that both give the same event.

How a Lark parse becomes a regular expression, exactly:

* Lark's lexer is greedy and never backtracks: at each position it takes the first terminal, in its
  own order (priority, width, length, name), among those the parser's current state accepts. So each
  terminal of a rule is an atomic group, ``(?>...)``, behind a negative lookahead of every terminal
  the lexer would try before it there: the expression lexes the same tokens, one way only.
* The terminals the parser's state accepts at each terminal of a rule are read from Lark's own
  table: the rule is walked with the set of parser stacks that can reach each point (reductions
  included), starting from the grammar's start state, so a prefix shared with another message
  (uvicorn's level) sees that message's terminals too. Where the stacks reaching a point disagree,
  the lookahead takes the union: the expression may then refuse a line Lark reads (Lark is asked),
  never accept one Lark refuses. A grammar whose every message compiled with one lexer order at every
  point is *complete*: what its expression refuses, Lark refuses too, and Lark is not asked.
* Repetition (Lark's left-recursive ``__x_star_n`` helper rules) is ``(?:...)*`` in one group; its
  iterations are read back one by one with the repeated part's own expression (allowed only when an
  iteration's first token decides its length). Recursion of any other kind, ``?rule`` and aliases are
  not regular here: those messages stay Lark's.
* ``%ignore`` terminals (Gloo's spaces) are skipped before every token as the lexer skips them.

Which reads a line depends on the grammar and the line only, never on what the process read before:
the compiled expressions of the messages that can start as the line does (its first token, lexed as
Lark's lexer lexes it). Their match is the reading; their refusal is final when each of those
messages compiled exactly, else Lark parses the line (gloo's and torch's inexact messages, the
configuration dump). So a line is read the same way in a 50-line log, as the 1000th line of a long
``follow`` or in a second log of the same process.

A grammar's derivation (every message walked and emitted for each terminal it can start with, and a
plan of how a match is read back) is plain data, kept on disk by ``packs/derived.py`` under a hash
of the grammars, of Lark's and logphase's versions and of this module: a start reads it back (~0.5
ms a grammar) and builds no Lark parser for a grammar whose lines its expressions decide; each
expression is compiled on first use (``packs/kept_regex.py``). Deriving costs 1-5 ms a message, once
per machine and version (sglang's 64 messages: ~80 ms).

The derivation reads Lark's internals (its parse table, ``_parse_table``, and its contextual lexers,
``lexer.lexers``), which Lark does not promise to keep: pyproject.toml bounds Lark to the versions
``.ci/run`` checks (the lowest and the newest allowed, each running ``tests/test_recognisers.py``).
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from logphase.packs import kept_regex
from logphase.packs.derived import cached, digest
from logphase.packs.grammars import Parsed, grammars_key, parse, parser
from logphase.vocabulary.errors import LogphaseError

if TYPE_CHECKING:  # Lark itself is imported only where a recogniser is built (~30 ms of a start)
    from lark import Lark
    from lark.grammar import Rule, Terminal
    from lark.lexer import TerminalDef

try:  # Python 3.11+: the parser re itself uses (sre_parse warns there)
    import re._parser as _sre  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef,unused-ignore]

Stack = tuple[int, ...]
# a parser stack, and the rules the structure closed since the last token (the parser must reduce
# exactly those before shifting the next one: else the structure is a derivation Lark does not take)
Config = tuple[Stack, tuple[str, ...]]
Configs = frozenset[Config]
_END = "$END"
# bounds of the walk over parser stacks: a rule that needs more is not regular here
_MAX_DEPTH = 64
_MAX_CONFIGS = 256


class NotRegularError(LogphaseError):
    """A rule this compiler does not turn into a regular expression (Lark parses it)."""


# -- the rule's structure, from Lark's BNF rules ----------------------------------------------------


@dataclass
class _Term:
    name: str
    kept: bool  # in the tree (Lark filters anonymous literals and _TERMINALS out)
    ident: int
    before: set[str] = field(default_factory=set)  # terminals the lexer tries first here
    ignore_before: dict[str, set[str]] = field(default_factory=dict)  # per %ignore terminal
    orders: set[frozenset[str]] = field(default_factory=set)  # what precedes it, per stack (exactness)
    table_literal: str = ""  # the literal's text, when ``via``
    live: int = 0  # walks that reached it the way Lark's parser does
    conflicts: int = 0  # walks that reached it by a derivation Lark's parser does not take
    group: str = ""  # its group's name in the expression, when read back
    first: bool = False  # lexed in the start state: the dispatch's scan lexed it (no lookahead)
    via: str | None = None  # a literal the lexer produces through this pattern terminal (Lark's 'unless')
    unless: set[str] = field(default_factory=set)  # values that would make this pattern terminal a literal


@dataclass
class _Seq:
    items: list[_Node]


@dataclass
class _Alt:
    options: list[_Seq]
    ident: int
    reduces: str | None = None  # a repetition helper's: each option is one reduction of it


@dataclass
class _Sub:
    rule: str
    inline: bool  # an _inlined rule: its children go to its parent
    inner: _Node
    reduces: bool = True  # False for a repetition helper (its options count its reductions)


@dataclass
class _Loop:
    body: _Alt
    ident: int
    at_least_one: bool = False
    iteration: str = ""  # one iteration's expression (set by the emitter), to read the iterations back


_Node = _Term | _Seq | _Alt | _Sub | _Loop


def _names_rule(symbol: Any, name: str) -> bool:
    """Whether a Lark symbol is the rule ``name`` (``NonTerminal(name)``, which compares so)."""
    return not symbol.is_term and symbol.name == name


class _Structure:
    """A grammar's rules as nodes, numbered for the groups of the expression."""

    def __init__(self, lark: Lark) -> None:
        self.by_origin: dict[str, list[Rule]] = {}
        for rule in lark.rules:
            self.by_origin.setdefault(str(rule.origin.name), []).append(rule)
        self.count = 0
        self.merge_repeats = True

    def repeats(self, name: str) -> bool:
        return any(_names_rule(s, name) for r in self.by_origin[name] for s in r.expansion)

    def ident(self) -> int:
        self.count += 1
        return self.count

    def rule(self, name: str, visiting: tuple[str, ...] = ()) -> _Node:
        if name in visiting:
            raise NotRegularError(f"{name} is recursive")
        rules = self.by_origin[name]
        for r in rules:
            if r.options.expand1 or r.alias:
                raise NotRegularError(f"{name}: ?rule or alias")
        recursive = [r for r in rules if any(_names_rule(s, name) for s in r.expansion)]
        if not recursive:
            return self._alt(rules, (*visiting, name))
        # Lark's repetition helper: R: base | R rest  (inlined, so the iterations are siblings)
        if not name.startswith("_") or any(
            not _names_rule(r.expansion[0], name) or any(_names_rule(s, name) for s in r.expansion[1:]) for r in recursive
        ):
            raise NotRegularError(f"{name}: recursion other than a repetition")
        base_rules = [r for r in rules if r not in recursive]
        rest = self._alt(recursive, (*visiting, name), skip_first=True)
        rest.reduces = name
        if self.merge_repeats and [list(r.expansion) for r in base_rules] == [list(r.expansion[1:]) for r in recursive]:
            return _Loop(rest, self.ident(), at_least_one=True)  # x+ (x* is "x+ or nothing"): one copy of x
        base = self._alt(base_rules, (*visiting, name))
        base.reduces = name
        return _Seq([base, _Loop(rest, self.ident())])

    def _alt(self, rules: list[Rule], visiting: tuple[str, ...], skip_first: bool = False) -> _Alt:
        options = []
        for r in rules:
            keep_all = bool(r.options.keep_all_tokens)
            items: list[_Node] = []
            for symbol in r.expansion[1:] if skip_first else r.expansion:
                if symbol.is_term:
                    terminal = cast("Terminal", symbol)
                    items.append(_Term(str(terminal.name), keep_all or not terminal.filter_out, self.ident()))
                else:
                    sub = str(symbol.name)
                    inner = self.rule(sub, visiting)
                    items.append(_Sub(sub, sub.startswith("_"), inner, not self.repeats(sub)))
            options.append(_Seq(items))
        return _Alt(options, self.ident())


# -- the parser's states along a rule (Lark's LALR table) -------------------------------------------


class _Table:
    """Lark's parse table and contextual lexers, read to know what the lexer tries at each point."""

    def __init__(self, lark: Lark) -> None:
        frontend: Any = lark.parser
        table = frontend.parser._parse_table
        self.states: dict[int, dict[str, tuple[Any, Any]]] = table.states
        self.start: int = table.start_states["start"]
        self.end: int = table.end_states["start"]
        self.lexers: dict[int, Any] = frontend.lexer.lexers
        self.terminals: dict[str, TerminalDef] = {t.name: t for t in lark.terminals}
        self.ignore: tuple[str, ...] = tuple(lark.lexer_conf.ignore)
        self._orders: dict[int, tuple[tuple[str, ...], dict[str, dict[str, str]]]] = {}

    def order(self, state: int) -> tuple[tuple[str, ...], dict[str, dict[str, str]]]:
        """The terminals the lexer tries in this state, in its order, and those whose type a
        callback may change (Lark's 'unless': a literal matched whole by a pattern terminal is that
        literal's token): pattern terminal -> {literal terminal: its text}."""
        lexer = self.lexers[state]
        key = id(lexer)
        if key not in self._orders:
            self._orders[key] = _unless(lexer.terminals, lexer.g_regex_flags)
        return self._orders[key]

    def step(self, stack: Stack, terminal: str) -> tuple[Stack, tuple[str, ...]] | None:
        """The stack after the parser is fed ``terminal`` (None: an error), and the rules it
        reduced first."""
        reduced: list[str] = []
        while True:
            action = self.states[stack[-1]].get(terminal)
            if action is None:
                return None
            kind, arg = action
            if kind.name == "Shift":
                if len(stack) >= _MAX_DEPTH:
                    raise NotRegularError("the parser's stack keeps growing")
                return (*stack, arg), tuple(reduced)
            if terminal == _END and stack[-1] == self.end:
                return stack, tuple(reduced)
            reduced.append(str(arg.origin.name))
            stack = stack[: len(stack) - len(arg.expansion)]
            goto = self.states[stack[-1]][str(arg.origin.name)]
            stack = (*stack, goto[1])

    def accepts(self, config: Config) -> bool:
        """True when the input may end here, the parser reducing what the structure closed."""
        stack, pending = config
        reduced: list[str] = []
        while stack[-1] != self.end:
            action = self.states[stack[-1]].get(_END)
            if action is None or action[0].name == "Shift":
                return False
            reduced.append(str(action[1].origin.name))
            stack = stack[: len(stack) - len(action[1].expansion)]
            stack = (*stack, self.states[stack[-1]][str(action[1].origin.name)][1])
        return tuple(reduced) == (*pending, "start")


def _unless(terminals: list[TerminalDef], flags: int) -> tuple[tuple[str, ...], dict[str, dict[str, str]]]:
    """What Lark's ``_create_unless`` makes of a lexer's terminals (in its order): the terminals its
    scanner tries, and for each pattern terminal the literals it reads whole (their token then has
    the literal's type). The same tests, but a literal that cannot start as the pattern does is not
    matched against it (Lark matches every pair: ~0.1 ms each, most of a short log's start-up here)."""
    literals_of: dict[str, dict[str, str]] = {}
    embedded: set[str] = set()
    strings = [t for t in terminals if t.pattern.type == "str"]
    for retok in terminals:
        if retok.pattern.type != "re":
            continue
        first = _terminal_first(retok)
        for strtok in strings:
            text = str(strtok.pattern.value)
            if strtok.priority != retok.priority or (first is not None and text[:1] not in first):
                continue
            m = kept_regex.compile(retok.pattern.to_regexp(), flags).match(text)
            if m is not None and m.group(0) == text:
                literals_of.setdefault(retok.name, {})[strtok.name] = text
                if set(strtok.pattern.flags) <= set(retok.pattern.flags):
                    embedded.add(strtok.name)
    return tuple(t.name for t in terminals if t.name not in embedded), literals_of


def _closing(configs: Configs, rule: str) -> Configs:
    return frozenset((stack, (*pending, rule)) for stack, pending in configs)


class _Walk:
    """Walks a rule's nodes with the parser stacks that reach each point, noting what the lexer
    tries before each terminal."""

    def __init__(self, table: _Table) -> None:
        self.table = table
        self.exact = True

    def _before(self, stack: Stack, terminal: str, node: _Term | None = None) -> tuple[str, ...]:
        order, callbacks = self.table.order(stack[-1])
        lexed = terminal
        if terminal not in order:  # a literal Lark's lexer reads through a pattern terminal
            lexed = next((name for name, literals in callbacks.items() if terminal in literals), "")
            if node is None or not lexed or node.via not in (None, lexed):
                raise NotRegularError(f"{terminal}: produced by a lexer callback")
            node.via = lexed
            node.table_literal = str(self.table.terminals[terminal].pattern.value)
        elif terminal in callbacks:
            if node is None:
                raise NotRegularError(f"{terminal}: produced by a lexer callback")
            # the expression reads any text of the pattern here, and the reading back refuses the
            # literals' (Lark is asked then): what it refuses, Lark refuses too
            node.unless.update(callbacks[terminal].values())
        return order[: order.index(lexed)]

    def ignores(self, configs: Configs) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for name in self.table.ignore:
            seen = {self._before(s, name) for s, _ in configs}
            if len(seen) > 1:
                self.exact = False
            out[name] = {t for before in seen for t in before}
        return out

    def walk(self, node: _Node, configs: Configs) -> Configs:
        if len(configs) > _MAX_CONFIGS:
            raise NotRegularError("too many parser configurations")
        if isinstance(node, _Term):
            return self._term(node, configs)
        if isinstance(node, _Seq):
            for item in node.items:
                configs = self.walk(item, configs)
            return configs
        if isinstance(node, _Alt):
            out = frozenset().union(*(self.walk(option, configs) for option in node.options))
            return _closing(out, node.reduces) if node.reduces else out
        if isinstance(node, _Sub):
            out = self.walk(node.inner, configs)
            return _closing(out, node.rule) if node.reduces else out
        return self._loop(node, configs)

    def _term(self, node: _Term, configs: Configs) -> Configs:
        out = set()
        for stack, pending in configs:
            stepped = self.table.step(stack, node.name)
            if stepped is None:
                continue  # a stack this path cannot take (a merged state's other context)
            following, reduced = stepped
            if reduced != pending:
                node.conflicts += 1  # Lark's parser shifts where this structure reduces, or so
                continue
            node.live += 1
            before = self._before(stack, node.name, node)
            node.first = node.first or stack == (self.table.start,)
            lexed = self.table.terminals[node.via or node.name]
            # what the lexer tries first that can match here at all: the lookahead's terminals
            node.orders.add(frozenset(t for t in before if _may_overlap(self.table.terminals[t], lexed)))
            node.before.update(before)
            out.add((following, ()))
        if node.live and node.conflicts:
            raise NotRegularError(f"{node.name}: reached by a derivation Lark's parser does not take")
        if len(node.orders) > 1:
            self.exact = False
        for name, skipped in self.ignores(configs).items():
            node.ignore_before.setdefault(name, set()).update(skipped)
        return frozenset(out)

    def _loop(self, node: _Loop, configs: Configs) -> Configs:
        reached = self.walk(node.body, configs) if node.at_least_one else configs
        while True:
            grown = reached | self.walk(node.body, reached)
            if grown == reached:
                return reached
            reached = grown


# -- the expression ---------------------------------------------------------------------------------


def _first_terminals(node: _Node) -> set[str] | None:
    """The terminals an iteration can start with; None when it can be empty."""
    if isinstance(node, _Term):
        return {node.name}
    if isinstance(node, _Seq):
        for item in node.items:
            first = _first_terminals(item)
            if first is not None:
                return first
        return None
    if isinstance(node, _Sub):
        return _first_terminals(node.inner)
    if isinstance(node, _Alt):
        found: set[str] = set()
        for option in node.options:
            first = _first_terminals(option)
            if first is None:
                return None
            found |= first
        return found
    return None  # a loop may be empty


def _decided_by_first(node: _Node) -> bool:
    """True when one iteration's tokens are fixed once its first token is known: each choice's
    options start with distinct terminals, and nothing inside repeats or is optional."""
    if isinstance(node, _Term):
        return True
    if isinstance(node, _Seq):
        return all(_decided_by_first(item) for item in node.items)
    if isinstance(node, _Sub):
        return _decided_by_first(node.inner)
    if isinstance(node, _Alt):
        firsts = [_first_terminals(option) for option in node.options]
        if any(first is None for first in firsts):
            return False
        seen: set[str] = set()
        for first in firsts:
            assert first is not None
            if seen & first:
                return False
            seen |= first
        return all(_decided_by_first(option) for option in node.options)
    return False


def _first_chars(pattern: str) -> frozenset[str] | None:
    """The characters a match of ``pattern`` can start with; None when any (or not worked out)."""
    try:
        parsed = _sre.parse(pattern)
    except re.error:
        return None
    return None if parsed.state.flags & re.IGNORECASE else _first_of(list(parsed))


def _first_of(items: list[Any]) -> frozenset[str] | None:
    if not items:
        return None
    op, arg = items[0]
    if op is _sre.LITERAL:
        return frozenset({chr(arg)})
    if op is _sre.IN:
        chars: set[str] = set()
        for kind, value in arg:
            if kind is _sre.LITERAL:
                chars.add(chr(value))
            elif kind is _sre.RANGE and value[1] - value[0] < 256:
                chars.update(chr(c) for c in range(value[0], value[1] + 1))
            elif kind is _sre.CATEGORY and value is _sre.CATEGORY_DIGIT:
                chars.update("0123456789")
            else:
                return None
        return frozenset(chars)
    if op is _sre.SUBPATTERN:
        return None if arg[1] & re.IGNORECASE else _first_of(list(arg[-1]))
    if op is _sre.BRANCH:
        found: set[str] = set()
        for branch in arg[1]:
            first = _first_of(list(branch))
            if first is None:
                return None
            found |= first
        return frozenset(found)
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT) and arg[0] >= 1:
        return _first_of(list(arg[2]))
    if op is _sre.ATOMIC_GROUP:
        return _first_of(list(arg))
    return None


@functools.cache
def _terminal_first(definition: TerminalDef) -> frozenset[str] | None:
    if definition.pattern.type == "str":
        value = str(definition.pattern.value)
        return frozenset({value[0]}) if value and not definition.pattern.flags else None
    return _first_chars(str(definition.pattern.to_regexp()))


def _may_overlap(other: TerminalDef, terminal: TerminalDef) -> bool:
    """False when ``other`` cannot match where ``terminal`` matches (two literals neither of which
    starts the other, or patterns that start with different characters)."""
    if other.pattern.type == "str" and terminal.pattern.type == "str" and not (other.pattern.flags or terminal.pattern.flags):
        a, b = str(other.pattern.value), str(terminal.pattern.value)
        return a.startswith(b) or b.startswith(a)
    first_other, first_terminal = _terminal_first(other), _terminal_first(terminal)
    return first_other is None or first_terminal is None or bool(first_other & first_terminal)


class _Emitter:
    def __init__(self, table: _Table) -> None:
        self.table = table

    def pattern(self, name: str) -> str:
        return str(self.table.terminals[name].pattern.to_regexp())

    def _not(self, names: set[str], before: str | None = None) -> str:
        """A lookahead refusing ``names`` at this point; those that cannot match where the
        terminal ``before`` matches are left out (the expression stays small)."""
        terminals = self.table.terminals
        ordered = sorted(n for n in names if before is None or _may_overlap(terminals[n], terminals[before]))
        if not ordered:
            return ""
        return "(?!" + "|".join(f"(?:{self.pattern(n)})" for n in ordered) + ")"

    def skip(self, ignore_before: dict[str, set[str]]) -> str:
        if not ignore_before:
            return ""
        options = "|".join(f"{self._not(before)}(?>{self.pattern(name)})" for name, before in ignore_before.items())
        return f"(?:{options})*+"

    def emit(self, node: _Node, first: str | None = None) -> str:
        """The expression of a node; ``first``: the terminal the dispatch lexed at the start (a
        terminal lexed there is that one or none, with no lookahead: the scan was Lark's lexer's)."""
        if isinstance(node, _Term):
            if not node.live:
                return "(?!)"  # Lark's parser never reads the line this way
            lexed = node.via or node.name
            atom = f"(?>{self.pattern(lexed)})"
            if node.kept or node.via or node.unless:  # read back, and checked (Lark's 'unless')
                node.group = f"t{node.ident}"
                atom = f"(?P<{node.group}>{atom})"
            if node.via:
                atom += f"(?<={re.escape(str(self.table.terminals[node.name].pattern.value))})"
            if node.first and first is not None:
                return self.skip(node.ignore_before) + (atom if first == lexed else "(?!)")
            return self.skip(node.ignore_before) + self._not(node.before, lexed) + atom
        if isinstance(node, _Seq):
            return "".join(self.emit(item, first) for item in node.items)
        if isinstance(node, _Sub):
            return self.emit(node.inner, first)
        if isinstance(node, _Alt):
            if len(node.options) == 1:
                return self.emit(node.options[0], first)
            options = "|".join(f"(?P<a{node.ident}_{k}>){self.emit(o, first)}" for k, o in enumerate(node.options))
            return f"(?:{options})"
        if not _decided_by_first(node.body):
            raise NotRegularError("a repetition whose iterations its first token does not decide")
        body = self.emit(node.body)
        node.iteration = body
        return f"(?P<l{node.ident}>(?:{body}){'+' if node.at_least_one else '*'})"


class _Mismatch(LogphaseError):
    """A repetition read back differently from the whole match: ask Lark (never seen; a guard)."""


# -- how a match is read back: a plan, derived once, turned into closures ------------------------------

# A match is read back into the Parsed record that Lark's parse and grammars.flatten_node give. What to
# read is derived from the nodes once, as a plan of plain data (kept on disk with the expressions:
# a start neither builds Lark's parser nor walks its table for them), and the plan becomes one closure
# per node, built once per message, that adds the node's tokens and sub-rules to the record being
# built, in the order of the text (walking the nodes per line was ~40 % of a line's cost). Plans:
#   None                                       nothing to read (anonymous literals only)
#   ["t", group, terminal, kept, unless, literal]   a token (its text refused when in ``unless``, or
#                                              when it is not ``literal``: Lark's lexer types it otherwise)
#   ["s", [plan, ...]]                         a sequence
#   ["a", ident, [[group, plan], ...]]         a choice: the option whose empty group matched
#   ["r", rule, plan]                          a named sub-rule: its own record, adopted
#   ["l", group, ident, iteration, plan]       a repetition: each iteration matched again by ``iteration``
Plan = list[Any] | None
_Reader = Callable[[re.Match[str], str, Parsed], None]


def _plan(node: _Node) -> Plan:
    """What reading a match of ``node`` takes (after the emitter named its groups)."""
    if isinstance(node, _Term):
        if not node.group:
            return None
        return ["t", node.group, node.name, node.kept, sorted(node.unless), node.table_literal if node.via else None]
    if isinstance(node, _Seq):
        parts = [p for p in map(_plan, node.items) if p is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ["s", parts]
    if isinstance(node, _Alt):
        if len(node.options) == 1:
            return _plan(node.options[0])
        return ["a", node.ident, [[f"a{node.ident}_{k}", _plan(o)] for k, o in enumerate(node.options)]]
    if isinstance(node, _Sub):
        inner = _plan(node.inner)
        return inner if node.inline else ["r", node.rule, inner]
    return ["l", f"l{node.ident}", node.ident, node.iteration, _plan(node.body)]


def _checked_plan(plan: object) -> Plan:
    """``plan`` when it has a plan's shape (it was read from disk), else TypeError."""
    if plan is None:
        return None
    if not isinstance(plan, list) or not plan:
        raise TypeError(f"plan: {plan!r}")
    kind, args = plan[0], plan[1:]
    if kind == "t" and len(args) == 5:
        group, name, kept, unless, literal = args
        if (
            isinstance(group, str) and isinstance(name, str) and isinstance(kept, bool) and isinstance(unless, list)
            and all(isinstance(u, str) for u in unless) and (literal is None or isinstance(literal, str))
        ):
            return plan
    elif kind == "s" and len(args) == 1 and isinstance(args[0], list) and all(p is not None for p in args[0]):
        for part in args[0]:
            _checked_plan(part)
        return plan
    elif kind == "a" and len(args) == 2 and isinstance(args[0], int) and isinstance(args[1], list):
        for option in args[1]:
            if not (isinstance(option, list) and len(option) == 2 and isinstance(option[0], str)):
                raise TypeError(f"plan: {option!r}")
            _checked_plan(option[1])
        return plan
    elif kind == "r" and len(args) == 2 and isinstance(args[0], str):
        _checked_plan(args[1])
        return plan
    elif kind == "l" and len(args) == 4 and isinstance(args[0], str) and isinstance(args[1], int) and isinstance(args[2], str):
        _checked_plan(args[3])
        return plan
    raise TypeError(f"plan: {plan!r}")


def _reader(plan: Plan) -> _Reader:
    if plan is None:
        return _nothing
    kind = plan[0]
    if kind == "t":
        return _term_reader(*plan[1:])
    if kind == "s":
        return _seq_reader([_reader(p) for p in plan[1]])
    if kind == "a":
        return _alt_reader(plan[1], [(group, _reader(p)) for group, p in plan[2]])
    if kind == "r":
        return _sub_reader(plan[1], _reader(plan[2]))
    return _loop_reader(plan[1], plan[2], plan[3], _reader(plan[4]))


def _nothing(m: re.Match[str], text: str, into: Parsed) -> None:
    return None


def _term_reader(group: str, name: str, kept: bool, unless_values: list[str], literal: str | None) -> _Reader:
    unless = frozenset(unless_values)

    def read(m: re.Match[str], text: str, into: Parsed) -> None:
        value = m.group(group)
        if value in unless or (literal is not None and value != literal):
            raise _Mismatch(f"{name}: Lark's lexer gives this text another terminal")
        if kept:
            into.add_token(name, value)

    return read


def _seq_reader(parts: list[_Reader]) -> _Reader:
    steps = tuple(parts)

    def read(m: re.Match[str], text: str, into: Parsed) -> None:
        for step in steps:
            step(m, text, into)

    return read


def _alt_reader(ident: int, options: list[tuple[str, _Reader]]) -> _Reader:
    choices = tuple(options)

    def read(m: re.Match[str], text: str, into: Parsed) -> None:
        for group, option in choices:
            if m.group(group) is not None:
                option(m, text, into)
                return
        raise _Mismatch(f"no option of choice {ident} matched")

    return read


def _sub_reader(rule: str, inner: _Reader) -> _Reader:
    def read(m: re.Match[str], text: str, into: Parsed) -> None:
        child = Parsed(rule)
        inner(m, text, child)
        into.adopt(child)

    return read


def _loop_reader(group: str, ident: int, iteration: str, body: _Reader) -> _Reader:
    pattern = kept_regex.compile(iteration)

    def read(m: re.Match[str], text: str, into: Parsed) -> None:
        start, end = m.span(group)
        while start < end:
            one = pattern.match(text, start)
            if one is None or one.end() > end or one.end() == start:
                raise _Mismatch(f"repetition {ident} read back differently")
            body(one, text, into)
            start = one.end()

    return read


# -- a grammar's derivation: what its recogniser is built from --------------------------------------


class Derivation(NamedTuple):
    """What a grammar's recogniser is built from, derived from Lark's loaded grammar by
    :func:`derive`: plain data, kept on disk (``packs/derived.py``) under a hash of the grammars, of
    Lark's and logphase's versions and of this module, so that a start reads it back instead of
    building Lark's parser and walking its table. Fresh or read back, it is the same data and the
    recogniser is built from it the same way."""

    messages: list[str]  # the alternatives of ``start``, in order
    why: dict[str, str]  # the messages left to Lark, and why ("start": the grammar's)
    any_first: bool  # every message is tried on every line (a first token the dispatch cannot place)
    ignore: list[str]  # the %ignore terminals
    scan: str  # the start state's terminals in the lexer's order, one named group each ("": none)
    by_first: dict[str, list[str]]  # first terminal -> the messages that can start with it, in order
    exact: dict[str, bool]  # message -> its expressions' refusal is Lark's too (the messages walked)
    plans: dict[str, Plan]  # message -> how a match is read back
    expressions: dict[str, dict[str, str]]  # message -> first terminal -> its expression

    def data(self) -> dict[str, object]:
        return dict(self._asdict())


def _strings(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError("derivation: not a list of strings")
    return value


def _mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise TypeError("derivation: not an object")
    return value


def _derivation_from_data(data: object) -> Derivation:
    """The derivation kept on disk, checked (a file of another shape is derived again)."""
    fields = _mapping(data)
    if set(fields) != set(Derivation._fields):
        raise TypeError("derivation: other fields")
    why, exact = _mapping(fields["why"]), _mapping(fields["exact"])
    if not all(isinstance(v, str) for v in why.values()) or not all(isinstance(v, bool) for v in exact.values()):
        raise TypeError("derivation: why or exact")
    expressions = {rule: _mapping(by) for rule, by in _mapping(fields["expressions"]).items()}
    if not all(isinstance(e, str) for by in expressions.values() for e in by.values()):
        raise TypeError("derivation: an expression that is not text")
    if not isinstance(fields["any_first"], bool) or not isinstance(fields["scan"], str):
        raise TypeError("derivation: any_first or scan")
    derived = Derivation(
        messages=_strings(fields["messages"]),
        why=why,
        any_first=fields["any_first"],
        ignore=_strings(fields["ignore"]),
        scan=fields["scan"],
        by_first={first: _strings(rules) for first, rules in _mapping(fields["by_first"]).items()},
        exact=exact,
        plans={rule: _checked_plan(plan) for rule, plan in _mapping(fields["plans"]).items()},
        expressions=expressions,
    )
    # what the recogniser looks up for a message it tries is there
    messages = set(derived.messages)
    if not (
        all(set(rules) <= messages for rules in derived.by_first.values())
        and set(derived.expressions) <= set(derived.plans) & set(derived.exact)
    ):
        raise TypeError("derivation: a message without its expression, plan or exactness")
    return derived


class _Deriver:
    """Derives one grammar's recogniser from the grammar as Lark loaded it (its BNF rules, LALR
    table and contextual lexers): every message walked, and its expression emitted for each
    terminal it can start with."""

    def __init__(self, source: str) -> None:
        lark = parser(source)
        self.table = _Table(lark)
        self.emitter = _Emitter(self.table)
        self.structure = _Structure(lark)
        self.why: dict[str, str] = {}
        self.by_first: dict[str, list[str]] = {}
        self.messages: list[str] = []
        self.order, callbacks = self.table.order(self.table.start)
        # a literal the start state's lexer reads through a pattern terminal would need the walk to
        # place: every message is then tried (none of the packs' grammars has one)
        self.any_first = bool(callbacks)
        try:
            self.messages = _message_rules(self.structure)
        except NotRegularError as why:
            self.why["start"] = str(why)
        for rule in self.messages:
            try:
                firsts, _ = _firsts(self.structure.rule(rule))
            except (NotRegularError, RecursionError) as why:
                self.why[rule] = str(why)
                firsts = set(self.order)
            for terminal in self.order:  # the lexer's order: the derivation is the same on every run
                if terminal in firsts:
                    self.by_first.setdefault(terminal, []).append(rule)

    def _prepare(self, rule: str) -> tuple[_Sub, str, bool] | None:
        """A message's nodes walked with Lark's table, the expression's end, and whether it is
        exact (None: not regular here)."""
        start: Configs = frozenset({((self.table.start,), ())})
        try:
            # a repetition once in the expression (x+) when the lexer tries the same terminals at
            # its first and its later iterations, else twice (x, then x*)
            for self.structure.merge_repeats in (True, False):
                node = _Sub(rule, False, self.structure.rule(rule))
                walk = _Walk(self.table)
                ends = frozenset(c for c in walk.walk(node, start) if self.table.accepts(c))
                if walk.exact:
                    break
            return node, self.emitter.skip(walk.ignores(ends)) + r"\Z", walk.exact
        except (NotRegularError, RecursionError) as why:
            self.why[rule] = str(why)
            return None

    def derive(self) -> Derivation:
        exact: dict[str, bool] = {}
        plans: dict[str, Plan] = {}
        expressions: dict[str, dict[str, str]] = {}
        for rule in self.messages:
            firsts = [f for f in self.order if self.any_first or rule in self.by_first.get(f, ())]
            prepared = self._prepare(rule) if firsts else None
            if prepared is None:
                continue
            node, end, exact[rule] = prepared  # the same nodes for every first terminal
            for first in firsts:
                try:
                    expression = self.emitter.emit(node, first) + end
                    kept_regex.compile(expression)  # refused here, not on a line
                except (NotRegularError, re.error) as why:
                    self.why[rule] = str(why)
                    continue
                expressions.setdefault(rule, {})[first] = expression
            if rule in expressions:
                plans[rule] = _plan(node.inner)  # after emit: it names the groups the plan reads
        scan = "|".join(f"(?P<{name}>{self.emitter.pattern(name)})" for name in self.order)
        return Derivation(
            messages=list(self.messages),
            why=dict(self.why),
            any_first=self.any_first,
            ignore=list(self.table.ignore),
            scan=scan,
            by_first=self.by_first,
            exact=exact,
            plans=plans,
            expressions=expressions,
        )


def derive(source: str) -> Derivation:
    """The grammar ``source``'s recogniser, derived afresh from Lark's loaded grammar."""
    return _Deriver(source).derive()


@functools.cache
def _derivation_key() -> str | None:
    """What the kept derivations are computed from besides the grammars and Lark: this module (its
    derivation) and the interpreter (its regular expression parser). None when this module's text
    cannot be read: nothing is then kept (a stale derivation must never be read back)."""
    try:
        code = Path(__file__).read_bytes()
    except OSError:
        return None
    return digest([grammars_key(), code, sys.version])


def derivation(source: str) -> Derivation:
    """The grammar ``source``'s derivation: read back from disk, else derived and kept."""
    key = _derivation_key()
    if key is None:
        return derive(source)
    return cached(f"recogniser-{source}", key, lambda: derive(source).data(), _derivation_from_data)


# -- a grammar's recogniser ---------------------------------------------------------------------------


class _Compiled(NamedTuple):
    """A message's expression for one first terminal, and how a match of it is read back."""

    pattern: re.Pattern[str]
    exact: bool  # its refusal is Lark's too
    read: _Reader


class Recogniser:
    """One grammar's compiled messages, built from its :class:`Derivation`. ``read`` gives what
    Lark's parse would (a Parsed), or None when the expressions refuse the line, and whether that
    refusal is Lark's too.

    The first token is lexed as Lark's lexer lexes it in the start state (one scan over the first
    terminals of every message, in the lexer's order); only the messages that can start with it are
    tried (Lark's parser goes on with those only), each compiled on first use, with its expression
    for that first terminal: a short log pays for the few messages it holds. Which messages are
    tried, and whether a refusal is final, depends on the grammar and the line only."""

    def __init__(self, source: str, derived: Derivation) -> None:
        self.source = source
        self.derived = derived
        self.messages = derived.messages
        self.by_first = derived.by_first
        self._ignore = frozenset(derived.ignore)
        self._irregular = "start" in derived.why  # no message can be told from the others
        self.scan = kept_regex.compile(derived.scan) if derived.scan else None
        # (message, first terminal) -> its expression; a message's reader, shared by its expressions
        self._compiled: dict[tuple[str, str], _Compiled | None] = {}
        self._readers: dict[str, _Reader] = {}

    def _expression(self, rule: str, first: str) -> _Compiled | None:
        key = (rule, first)
        if key not in self._compiled:  # follow's threads may both compile one: the same result
            expression = self.derived.expressions.get(rule, {}).get(first)
            compiled = None
            if expression is not None:
                if rule not in self._readers:
                    self._readers[rule] = _reader(self.derived.plans[rule])
                compiled = _Compiled(kept_regex.compile(expression), self.derived.exact[rule], self._readers[rule])
            self._compiled[key] = compiled
        return self._compiled[key]

    def first_terminal(self, text: str) -> str | None:
        """The first token's terminal as Lark's lexer reads it (ignored terminals skipped)."""
        if self.scan is None:
            return None
        pos = 0
        while True:
            m = self.scan.match(text, pos)
            if m is None or m.lastgroup not in self._ignore or m.end() == pos:
                return None if m is None else m.lastgroup
            pos = m.end()

    def read(self, text: str) -> tuple[Parsed | None, bool]:
        """(what Lark's parse gives, as far as the expressions know; whether they decided: True
        when they matched, or when every message that can start as the line does compiled exactly)."""
        if self._irregular:
            return None, False
        first = self.first_terminal(text)
        if first is None:
            return None, self.scan is not None
        decided = not self.derived.any_first
        for rule in self.messages if self.derived.any_first else self.by_first.get(first, ()):
            compiled = self._expression(rule, first)
            if compiled is None:
                decided = False
                continue
            decided = decided and compiled.exact
            m = compiled.pattern.match(text)
            if m is not None:
                parsed = Parsed(rule)
                compiled.read(m, text, parsed)
                return parsed, True
        return None, decided

    @property
    def rules(self) -> list[str]:
        """The messages compiled."""
        return [r for r in self.messages if r in self.derived.expressions and r not in self.derived.why]

    @property
    def irregular(self) -> dict[str, str]:
        """The messages left to Lark, and why."""
        return dict(self.derived.why)

    @property
    def complete(self) -> bool:
        """True when every refusal is Lark's too (every message compiled, exactly)."""
        derived = self.derived
        return (
            not derived.why
            and not derived.any_first
            and all(derived.exact.get(r, False) and r in derived.expressions for r in derived.messages)
        )


def _firsts(node: _Node) -> tuple[set[str], bool]:
    """The terminals a node's text can start with, and whether it can be empty."""
    if isinstance(node, _Term):
        return {node.name}, False
    if isinstance(node, _Seq):
        found: set[str] = set()
        for item in node.items:
            first, empty = _firsts(item)
            found |= first
            if not empty:
                return found, False
        return found, True
    if isinstance(node, _Sub):
        return _firsts(node.inner)
    if isinstance(node, _Alt):
        found, can_be_empty = set(), False
        for option in node.options:
            first, empty = _firsts(option)
            found |= first
            can_be_empty = can_be_empty or empty
        return found, can_be_empty
    first, empty = _firsts(node.body)
    return first, empty or not node.at_least_one


def _message_rules(structure: _Structure) -> list[str]:
    found: list[str] = []
    for rule in structure.by_origin["start"]:
        if len(rule.expansion) != 1 or rule.expansion[0].is_term:
            raise NotRegularError("start is not one message rule per option")
        found.append(str(rule.expansion[0].name))
    return found


@functools.cache
def recogniser(source: str) -> Recogniser:
    return Recogniser(source, derivation(source))


def recognise(source: str, text: str) -> Parsed | None:
    """What the grammar ``source`` reads in ``text`` (as :func:`grammars.parse` gives it): the
    compiled expressions' match, else Lark's parse when their refusal is not final (a message that
    did not compile, or compiled inexactly, can start as the line does). The same text always goes
    the same way: the choice depends on the grammar and the text, never on what was read before.
    A reading is kept for texts that repeat (each rank prints a message, a library one per layer:
    56 % of the texts asked about in the real logs); a Parsed is never changed once built, so it
    is shared."""
    key = (source, text)
    if key in _READ:
        return _READ[key]
    parsed = _recognise(source, text)
    if len(text) <= _MEMO_CHARS:
        if len(_READ) >= _MEMO_ENTRIES:
            _READ.clear()  # a bound on memory; what repeats is read again soon enough
        _READ[key] = parsed
    return parsed


_READ: dict[tuple[str, str], Parsed | None] = {}
_MEMO_ENTRIES = 4096
_MEMO_CHARS = 512  # at most ~2 MB of texts kept


def _recognise(source: str, text: str) -> Parsed | None:
    try:
        parsed, decided = recogniser(source).read(text)
    except _Mismatch:
        return parse(source, text)
    return parsed if decided else parse(source, text)
