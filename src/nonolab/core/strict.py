"""Strict readers of the input files' text formats: JSON without repeated keys or non-standard
constants, YAML without repeated keys, and identifiers in one Unicode form.

A JSON object or YAML mapping that names a key twice is read by :mod:`json` and PyYAML as the
last value, silently; every input reader of nonolab (log lines, puzzle file, presets, config)
goes through :func:`json_loads` or :func:`yaml_load` instead, so a repeated key is a ledger row
or an error naming the key. Identifiers (participant and puzzle ids) are compared in Unicode
normal form C (:func:`normalise_id`): a name typed on one system and saved on another (NFC and
NFD) is one id.
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Any

import yaml


class DuplicateKeyError(ValueError):
    """A JSON object or YAML mapping names a key more than once."""


def _reject_constant(name: str) -> float:
    if name in ("NaN", "Infinity", "-Infinity"):
        raise ValueError(f"non-standard JSON constant {name}")
    return math.nan  # pragma: no cover


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Return the dict of a JSON object's ``(key, value)`` pairs; raise
    :class:`DuplicateKeyError` naming the first key given twice (``object_pairs_hook``)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"duplicate key {key!r} in a JSON object")
            seen.add(key)
    return out


#: a decoder that refuses repeated keys and NaN/Infinity
STRICT_DECODER = json.JSONDecoder(object_pairs_hook=unique_pairs, parse_constant=_reject_constant)


def json_loads(text: str) -> Any:
    """Return the value of JSON ``text``; raise ``ValueError`` (:class:`DuplicateKeyError` for
    a repeated key, ``json.JSONDecodeError`` for bad JSON, also ``NaN``/``Infinity``)."""
    return json.loads(text, object_pairs_hook=unique_pairs, parse_constant=_reject_constant)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that names a key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                continue  # the base constructor reports an unhashable key
            if key in seen:
                line = key_node.start_mark.line + 1
                raise DuplicateKeyError(
                    f"line {line}: duplicate key {key!r} (first on line {seen[key]})"
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def yaml_load(text: str) -> Any:
    """Return the value of YAML ``text`` read with the safe loader; raise
    :class:`DuplicateKeyError` (a ``ValueError``) naming the line of a repeated key and
    ``yaml.YAMLError`` for anything else that is not YAML."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)


def normalise_id(value: str) -> str:
    """Return the identifier ``value`` in Unicode normal form C (``"e\\u0301"`` -> ``"é"``)."""
    return unicodedata.normalize("NFC", value)


def lookalikes(ids: list[str]) -> list[tuple[str, str, str]]:
    """Return ``(first, second, kind)`` for each pair of distinct raw ids in ``ids`` (in order)
    that a reader could take for one: ``kind`` is ``"unicode"`` when their NFC forms are equal,
    ``"case"`` when they differ only in letter case (after NFC), ``"confusable"`` when they
    share a confusable skeleton (:func:`nonolab.core.confusables.skeletons`: characters of
    another script drawn alike, invisible characters, compatibility forms). Each later id is
    paired with the first earlier id it resembles."""
    from nonolab.core.confusables import skeletons

    out: list[tuple[str, str, str]] = []
    by_nfc: dict[str, str] = {}
    by_fold: dict[str, str] = {}
    by_skeleton: dict[str, str] = {}
    for raw in ids:
        nfc = normalise_id(raw)
        fold = nfc.casefold()
        keys = skeletons(nfc)
        if nfc in by_nfc:
            if by_nfc[nfc] != raw:
                out.append((by_nfc[nfc], raw, "unicode"))
            continue
        if fold in by_fold:
            out.append((by_fold[fold], raw, "case"))
        else:
            seen = next((by_skeleton[k] for k in keys if k in by_skeleton), None)
            if seen is not None:
                out.append((seen, raw, "confusable"))
        by_nfc[nfc] = raw
        by_fold.setdefault(fold, raw)
        for k in keys:
            by_skeleton.setdefault(k, raw)
    return out


__all__ = [
    "STRICT_DECODER",
    "DuplicateKeyError",
    "json_loads",
    "lookalikes",
    "normalise_id",
    "unique_pairs",
    "yaml_load",
]
