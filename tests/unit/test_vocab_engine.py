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


def test_a_benign_message_quoted_inside_an_error_does_not_explain_the_line():
    # docker quotes the container hook's stderr inside its own error: the benign row ("Auto-detected
    # mode as '%s'", nvidia-container-toolkit internal/info/auto.go) matches only the quoted tail
    alone = "Auto-detected mode as 'legacy'"
    quoted = ("docker: Error response from daemon: failed to create task for container: error running hook #0: "
              "error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'")
    m = vocab.match_line(alone)
    assert m is not None and m[1]["kind"] == vocab.BENIGN
    assert vocab.match_line(quoted) is None


def test_a_benign_message_beside_words_of_success_is_still_explained():
    # 'passed', 'successfully' around the message: the error word is part of a success report
    line = "SUCCESS: nhc: Health check passed: check_gpu_xid: GPU XID error check passed."
    m = vocab.match_line(line)
    assert m is None or m[1]["kind"] == vocab.BENIGN
    line = "[2024-05-01 10:00:00] ERROR Auto-detected mode as 'legacy'"
    assert vocab.match_line(line) is None
