"""Human-strategy measures, hand-checked on small puzzles."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.measure.strategy import footholds, probe_path, propagation_rounds, strategy_profile
from nonolab.sat.linesolver import propagation_fixpoint
from nonolab.sat.puzzles import Puzzle

# 1 1 1      rows [3], [1], [1 1]; columns [3], [1], [1 1]
# 1 0 0
# 1 0 1
CORNER = Puzzle.from_grid([[1, 1, 1], [1, 0, 0], [1, 0, 1]])

# 0 0 0 0    rows [], [], [2], [1 1]; columns [1] x 4: unique, not line-solvable
# 0 0 0 0
# 0 1 1 0
# 1 0 0 1
STALL = Puzzle.from_grid([[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]])


def test_footholds_by_hand():
    fh = footholds(CORNER)
    # row 0 ([3] in 3) and row 2 ([1 1] in 3) are fixed whole, likewise columns 0 and 2;
    # the middle row and column ([1] in 3) fix nothing: 8 cells, all but the centre
    assert set(fh.cells) == {(r, c) for r in range(3) for c in range(3)} - {(1, 1)}
    assert fh.lines == (("row", 0), ("row", 2), ("col", 0), ("col", 2))
    assert fh.line_cells == (3, 3, 3, 3)


def test_chain_by_hand():
    rounds, state = propagation_rounds(CORNER)
    # round 1: the 8 footholds; round 2: the centre, from row 1 or column 1; round 3: nothing
    assert rounds == [8, 1]
    assert state.to_grid() == CORNER.solution
    prof = strategy_profile(CORNER)
    assert prof["chain_rounds"] == 2
    assert prof["chain_cells_per_round"] == 4.5
    assert prof["foothold_lines"] == 4
    assert prof["probe_stalls"] == 0
    assert prof["first_stall_share"] is None and prof["hardest_step_options"] is None


def test_stall_by_hand():
    # footholds: the two empty rows (8 cells); then no line fixes anything: one round
    rounds, state = propagation_rounds(STALL)
    assert rounds == [8]
    assert state.n_known() == 8
    path = probe_path(STALL)
    # the path stalls once, with the 8 cells of rows 2-3 unknown. Each of them set to its wrong
    # value contradicts by line reasoning (e.g. (2, 1) empty: row 2 = 0011, so columns give
    # row 3 = 1100, not [1 1]), so all 8 cells are productive; the first one completes the grid
    assert path == type(path)(stalls=1, productive=(8,), known_at_stall=(8,), solved=True)
    prof = strategy_profile(STALL)
    assert prof["first_stall_share"] == 0.5
    assert prof["hardest_step_options"] == 8


def test_two_solutions_stall_with_no_way_forward():
    # the 2x2 diagonal: both values of every cell propagate without contradiction and the
    # branches disagree everywhere, so no probe is productive
    path = probe_path(Puzzle.from_grid([[1, 0], [0, 1]]))
    assert path.stalls == 1 and path.productive == (0,) and not path.solved


grids = st.integers(2, 6).flatmap(
    lambda h: st.integers(2, 6).flatmap(
        lambda w: st.lists(
            st.lists(st.integers(0, 1), min_size=w, max_size=w), min_size=h, max_size=h
        )
    )
)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(grids)
def test_rounds_reach_the_line_fixpoint(grid):
    # parallel rounds end where the sequential propagation ends, round 1 = the footholds,
    # and the path never contradicts the solution
    p = Puzzle.from_grid(grid)
    rounds, state = propagation_rounds(p)
    fix = propagation_fixpoint(p)
    assert state.to_cells() == fix.to_cells()
    assert (rounds[0] if rounds else 0) == len(footholds(p).cells)
    assert sum(rounds) == fix.n_known()
    for r, row in enumerate(state.to_cells()):
        for c, v in enumerate(row):
            assert v in (-1, grid[r][c])
    path = probe_path(p)
    assert (path.stalls == 0) == fix.is_complete()
