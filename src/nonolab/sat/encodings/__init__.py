"""CNF encodings of Nonograms.

Every encoding is a function ``encode(puzzle) -> Encoding``. Cell (r, c) is always variable
``r * width + c + 1`` (true = filled), so a model decodes the same way whatever the encoding;
auxiliary variables follow. Clause order is part of an encoding's definition, because CDCL
statistics depend on it.

Registered encodings (see :data:`ENCODINGS`): ``block_start`` (the paper's), ``order``
(ladder encoding, for large puzzles) and ``regular`` (unrolled line automata: unit propagation
is the complete line solver).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nonolab.sat.puzzles import Grid, Puzzle


@dataclass
class Encoding:
    """A CNF for one puzzle.

    ``clauses``: list of clauses (lists or tuples of non-zero DIMACS ints), in the encoding's
    order.
    ``nvars``: highest variable used. ``height``/``width``: grid shape; cells are variables
    ``1..height*width`` in row-major order. ``name``: encoding name. ``aux``: optional map from
    a descriptive key (e.g. ``("row", i, block, start)``) to its variable, for debugging.
    """

    name: str
    height: int
    width: int
    nvars: int
    clauses: list[Sequence[int]]
    aux: dict[tuple, int] = field(default_factory=dict)

    def cell_var(self, r: int, c: int) -> int:
        """Return the variable of cell (r, c)."""
        return r * self.width + c + 1

    @property
    def n_cells(self) -> int:
        """Number of cell variables (height * width)."""
        return self.height * self.width

    def decode(self, model: Sequence[int]) -> Grid:
        """Return the grid (0/1) read from a solver model (a list of signed literals)."""
        true = {lit for lit in model if lit > 0}
        return tuple(
            tuple(int(self.cell_var(r, c) in true) for c in range(self.width))
            for r in range(self.height)
        )

    def blocking_clause(self, model: Sequence[int]) -> list[int]:
        """Return the clause that excludes this model's grid (over cell variables only)."""
        n = self.n_cells
        return [-lit for lit in model if 0 < abs(lit) <= n]

    def to_dimacs(self) -> str:
        """Return the CNF as DIMACS text (``p cnf`` header, one clause a line)."""
        lines = [f"c nonolab encoding={self.name} height={self.height} width={self.width}"]
        lines.append(f"p cnf {self.nvars} {len(self.clauses)}")
        lines.extend(" ".join(map(str, cl)) + " 0" for cl in self.clauses)
        return "\n".join(lines) + "\n"


EncodeFn = Callable[[Puzzle], Encoding]

#: name -> encoding function; filled by the submodules on import (see :func:`get_encoding`).
ENCODINGS: dict[str, EncodeFn] = {}


def register(name: str) -> Callable[[EncodeFn], EncodeFn]:
    """Decorator: register an encoding function under ``name``."""

    def deco(fn: EncodeFn) -> EncodeFn:
        ENCODINGS[name] = fn
        return fn

    return deco


def get_encoding(name: str) -> EncodeFn:
    """Return the encoding function called ``name``; raise ``KeyError`` listing the known ones."""
    _load_all()
    try:
        return ENCODINGS[name]
    except KeyError:
        raise KeyError(f"unknown encoding {name!r}; known: {sorted(ENCODINGS)}") from None


def _load_all() -> None:
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def resolve_encodings(spec: str | Sequence[str]) -> list[str]:
    """Return the encoding names a config value asks for: ``"registered"`` means every
    registered encoding (``block_start``, the paper's, first; the rest by name), a list is
    checked against the registry and returned as it is."""
    _load_all()
    if spec == "registered":
        return sorted(ENCODINGS, key=lambda e: (e != "block_start", e))
    names = [spec] if isinstance(spec, str) else list(spec)
    for name in names:
        get_encoding(name)
    return names
