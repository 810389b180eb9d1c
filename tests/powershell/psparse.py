"""Reading Basil's PowerShell module with a real PowerShell parser (tree-sitter's PowerShell grammar),
for the module's checks: syntax errors, functions and their parameters, comment-based help, the REST
calls the cmdlets make and the hashtables they send."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter
import tree_sitter_powershell

PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))

# PowerShell's approved verbs (Get-Verb, PowerShell 7), by group.
_VERB_GROUPS = {
    "common": (
        "Add",
        "Clear",
        "Close",
        "Copy",
        "Enter",
        "Exit",
        "Find",
        "Format",
        "Get",
        "Hide",
        "Join",
        "Lock",
        "Move",
        "New",
        "Open",
        "Optimize",
        "Pop",
        "Push",
        "Redo",
        "Remove",
        "Rename",
        "Reset",
        "Resize",
        "Search",
        "Select",
        "Set",
        "Show",
        "Skip",
        "Split",
        "Step",
        "Switch",
        "Undo",
        "Unlock",
        "Watch",
    ),
    "communications": (
        "Connect",
        "Disconnect",
        "Read",
        "Receive",
        "Send",
        "Write",
    ),
    "data": (
        "Backup",
        "Checkpoint",
        "Compare",
        "Compress",
        "Convert",
        "ConvertFrom",
        "ConvertTo",
        "Dismount",
        "Edit",
        "Expand",
        "Export",
        "Group",
        "Import",
        "Initialize",
        "Limit",
        "Merge",
        "Mount",
        "Out",
        "Publish",
        "Restore",
        "Save",
        "Sync",
        "Unpublish",
        "Update",
    ),
    "diagnostic": (
        "Debug",
        "Measure",
        "Ping",
        "Repair",
        "Resolve",
        "Test",
        "Trace",
    ),
    "lifecycle": (
        "Approve",
        "Assert",
        "Build",
        "Complete",
        "Confirm",
        "Deny",
        "Deploy",
        "Disable",
        "Enable",
        "Install",
        "Invoke",
        "Register",
        "Request",
        "Restart",
        "Resume",
        "Start",
        "Stop",
        "Submit",
        "Suspend",
        "Uninstall",
        "Unregister",
        "Wait",
    ),
    "other": ("Use",),
    "security": (
        "Block",
        "Grant",
        "Protect",
        "Revoke",
        "Unblock",
        "Unprotect",
    ),
}
APPROVED_VERBS = frozenset(v for group in _VERB_GROUPS.values() for v in group)

Node = tree_sitter.Node


def parse(source: bytes) -> tree_sitter.Tree:
    return PARSER.parse(source)


def syntax_errors(source: bytes) -> list[str]:
    """Every ERROR or MISSING node of *source*, as 'line:column: text'."""
    found: list[str] = []
    for node in walk(parse(source).root_node):
        if node.type == "ERROR" or node.is_missing:
            line, column = node.start_point
            found.append(f"{line + 1}:{column + 1}: {text(node)[:60]!r}")
    return found


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8")


def unquote(literal: str) -> str:
    literal = literal.strip()
    if len(literal) >= 2 and literal[0] == literal[-1] and literal[0] in "'\"":
        return literal[1:-1]
    return literal


def string_values(node: Node) -> list[str]:
    """The string literals under *node*, unquoted, in order."""
    return [unquote(text(n)) for n in walk(node) if n.type == "string_literal"]


def hash_keys(node: Node) -> list[str]:
    """The keys of a hashtable literal's own entries (not of nested hashtables)."""
    keys: list[str] = []
    for entry in walk(node):
        if entry.type != "hash_entry" or _enclosing(entry, "hash_literal_expression") != node:
            continue
        key = next(c for c in entry.children if c.type == "key_expression")
        keys.append(unquote(text(key)))
    return keys


def _enclosing(node: Node, kind: str) -> Node | None:
    parent = node.parent
    while parent is not None and parent.type != kind:
        parent = parent.parent
    return parent


@dataclass
class ApiCall:
    """One ``Invoke-BasilApi`` call: its method, its path as a template, the keys it sends."""

    function: str
    method: str
    path: str
    body_keys: list[str] | None = None
    query_keys: list[str] = field(default_factory=list)


@dataclass
class Function:
    name: str
    node: Node
    help: str
    parameters: list[str]
    attributes: str

    @property
    def source(self) -> str:
        return text(self.node)


def functions(tree: tree_sitter.Tree) -> list[Function]:
    found: list[Function] = []
    for node in walk(tree.root_node):
        if node.type != "function_statement":
            continue
        name = text(next(c for c in node.children if c.type == "function_name"))
        comments = [text(c) for c in walk(node) if c.type == "comment" and text(c).startswith("<#")]
        params = next((n for n in walk(node) if n.type == "param_block"), None)
        parameters = (
            [text(v).lstrip("$") for s in walk(params) if s.type == "script_parameter"
             for v in s.children if v.type == "variable"]
            if params is not None else []
        )  # fmt: skip
        attributes = (
            text(next((c for c in params.children if c.type == "attribute_list"), params))
            if params is not None
            else ""
        )
        found.append(Function(name, node, comments[0] if comments else "", parameters, attributes))
    return found


_SUBEXPRESSION = re.compile(r"\$\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_:]*\}?")


def template(path: str) -> str:
    """``/pods/$(ConvertTo-BasilSegment $Pod)/recommendations`` -> ``/pods/{}/recommendations``."""
    return _VARIABLE.sub("{}", _SUBEXPRESSION.sub("{}", path))


def _assigned(function: Node, variable: str, kind: str) -> Node | None:
    """The value of type *kind* that ``$variable = ...`` assigns in *function*, if any."""
    for node in walk(function):
        if node.type != "assignment_expression":
            continue
        left = next(c for c in node.children if c.type == "left_assignment_expression")
        if text(left).strip().lower() != variable.lower():
            continue
        value = next((n for n in walk(node) if n.type == kind), None)
        if value is not None:
            return value
    return None


def _added_keys(function: Node, variable: str) -> list[str]:
    """Keys added to a hashtable later: ``$body['key'] = ...`` or ``$body.key = ...``."""
    keys: list[str] = []
    pattern = re.compile(rf"^\{variable}(?:\['([^']+)'\]|\[\"([^\"]+)\"\]|\.([A-Za-z_]\w*))$", re.I)
    for node in walk(function):
        if node.type == "left_assignment_expression":
            found = pattern.match(text(node).strip())
            if found:
                keys.append(next(g for g in found.groups() if g))
    return keys


def api_calls(function: Function) -> list[ApiCall]:
    calls: list[ApiCall] = []
    for node in walk(function.node):
        if node.type != "command" or text(node.child_by_field_name("command_name") or node).split()[0] != (
            "Invoke-BasilApi"
        ):
            continue
        elements = node.child_by_field_name("command_elements")
        assert elements is not None, text(node)
        args: dict[str, Node] = {}
        pending: str | None = None
        for element in elements.children:
            if element.type == "command_parameter":
                pending = text(element).lstrip("-").lower()
            elif element.type != "command_argument_sep" and pending is not None:
                args[pending] = element
                pending = None
        method = text(args["method"]).strip()
        path_node = args["path"]
        path_text = text(path_node).strip()
        if path_text.startswith("$") and not path_text.startswith("$("):
            assigned = _assigned(function.node, path_text, "string_literal")
            assert assigned is not None, f"{function.name}: no string assigned to {path_text}"
            path_text = text(assigned)
        call = ApiCall(function.name, method.upper(), template(unquote(path_text)))
        for name, target in (("body", "body_keys"), ("query", "query_keys")):
            if name not in args:
                continue
            value = args[name]
            literal = next((n for n in walk(value) if n.type == "hash_literal_expression"), None)
            keys: list[str]
            if literal is not None:
                keys = hash_keys(literal)
            else:
                variable = text(value).strip()
                assigned = _assigned(function.node, variable, "hash_literal_expression")
                assert assigned is not None, f"{function.name}: no hashtable assigned to {variable}"
                keys = hash_keys(assigned) + _added_keys(function.node, variable)
            setattr(call, target, keys)
        calls.append(call)
    return calls


def read(path: Path) -> tree_sitter.Tree:
    return parse(path.read_bytes())
