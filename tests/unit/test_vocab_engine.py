"""Issue 24: the engine reads every message of every emitter's vocabulary as its table says.

Each matchable row of each generated table (vocab/<emitter>.py) is printed as its emitter
prints it and given to the engine as a capture is (both line readers): a fault row must come
out as a finding of the row's category, a benign one (its table says why) as nothing at warning
or above and nothing "unexplained". Where the engine's dedicated readers read a message, they
and the table agree; where none does, the table is the reader (vocab.match_line). The same
check prints the coverage table: tests/tools/vocab/coverage.py."""

import pytest

from gpu_runbook import vocab
from tests.tools.vocab.coverage import coverage
from tests.unit.test_vocab_tables import GENERATED


@pytest.mark.parametrize("name", GENERATED)
def test_the_engine_reads_every_vocabulary_row_as_its_table_says(name):
    (row,), bad = coverage([name], failures=10)
    assert row["matchable"] > 0
    assert row["agree"] == row["matchable"], "\n".join(
        "%s:%s %s/%s: %r -> %s" % (r["file"], r["line"], r["kind"], r["category"], line[:160], said or "nothing")
        for _n, r, line, said in bad)


def test_an_unmatchable_row_is_never_matched():
    # a row without enough literal text would match any line: the coverage counts it, the reader skips it
    assert not vocab.matchable("%s: %s") and not vocab.matchable("error %d")
