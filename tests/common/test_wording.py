"""Counted nouns in the lines people read."""

import pytest

from determined.common.wording import counted


@pytest.mark.parametrize("n, noun, expected", [
    (1, "batch", "1 batch"), (2, "batch", "2 batches"), (0, "batch", "0 batches"),
    (1, "step", "1 step"), (3, "step", "3 steps"), (1, "restart", "1 restart"),
    (2, "restart", "2 restarts"), (2, "index", "2 indexes"),
])
def test_counted_agrees_with_the_number(n, noun, expected):
    assert counted(n, noun) == expected


def test_counted_takes_an_irregular_plural():
    assert counted(2, "child", "children") == "2 children"
    assert counted(1, "child", "children") == "1 child"
