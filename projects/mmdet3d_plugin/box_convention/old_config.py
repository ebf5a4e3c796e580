"""The config text a 0.x checkpoint carries, read without running it.

mmcv 1.x saved the whole config, formatted, in ``meta['config']``: plain
assignments whose values are ``dict(...)`` calls, lists and numbers
(``Config.pretty_text``). :func:`read_config_text` evaluates those
literals with :mod:`ast` only, so nothing of the file runs (its
``custom_imports`` are not imported); a value that is not a literal is
:data:`NOT_LITERAL`. :func:`find_head` finds the model's box head in such
a dict or in a loaded 1.x config, by the state-dict prefix of its weights.
"""
import ast
from typing import Any, Dict, Optional


class _NotLiteral:
    """A config value that is not a literal (an expression, a name)."""

    def __repr__(self) -> str:
        return 'NOT_LITERAL'


#: What :func:`read_config_text` gives for a value it does not evaluate.
NOT_LITERAL = _NotLiteral()


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_literal(item) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            return NOT_LITERAL
        return {_literal(k): _literal(v)
                for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == 'dict' and not node.args \
            and all(kw.arg is not None for kw in node.keywords):
        return {kw.arg: _literal(kw.value) for kw in node.keywords}
    if isinstance(node, ast.UnaryOp) and isinstance(
            node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    return NOT_LITERAL


def read_config_text(text: str) -> Dict[str, Any]:
    """The top-level assignments of a config's text, literals evaluated.

    Args:
        text (str): ``meta['config']`` of a 0.x checkpoint.

    Returns:
        dict: ``{name: value}``; values that are not literals are
        :data:`NOT_LITERAL`.

    Raises:
        ValueError: If the text is not Python.
    """
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise ValueError(
            f"checkpoint meta['config']: not a Python config text "
            f'({e.msg}, line {e.lineno}).') from e
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = _literal(node.value)
    return names


def find_head(model: Any, prefix: str) -> Optional[dict]:
    """The head config of the module whose state-dict keys start with
    ``prefix``.

    Args:
        model (dict): The config's ``model``.
        prefix (str): The head's state-dict prefix, e.g. ``'bbox_head.'``
            or ``'pts_bbox_head.'``.

    Returns:
        dict | None: The head's config dict, None if ``model`` has none
        at that path.
    """
    node = model
    for part in prefix.rstrip('.').split('.'):
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return None
        node = node[part]
    return node
