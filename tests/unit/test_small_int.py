"""Numbers read from log text are ASCII digits of a sane length: str.isdigit() also says yes
to '²', and int() refuses a number of 4300 digits. Each place that read such a number now goes
through textio.small_int and keeps going instead of raising."""

import pytest

from gpu_runbook.infiniband.names import natural
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog.text import task_list
from gpu_runbook.plan.envfile import explain
from gpu_runbook.findings import small_int

HUGE = "9" * 5000


@pytest.mark.parametrize("text,want", [("0", 0), ("42", 42), ("007", 7), ("9" * 18, int("9" * 18)),
                                       ("9" * 19, None), ("²", None), ("٣", None), ("", None), ("-1", None),
                                       (" 1", None), ("1\n", None), (None, None), (12, None), (HUGE, None)])
def test_small_int(text, want):
    assert small_int(text) == want


def test_slurm_task_lists_skip_what_is_not_a_count():
    assert task_list("3,5-7") == [3, 5, 6, 7]
    assert task_list("²,1-²,%s,%s-%s,4" % (HUGE, "1", HUGE)) == [4]


def test_hca_names_sort_naturally_whatever_their_digits():
    names = ["mlx5_10", "mlx5_2", "mlx5_²", "mlx5_" + HUGE, "ib0"]
    assert sorted(names, key=natural)[0] == "ib0"  # before: int('²') raised
    assert sorted(["mlx5_10", "mlx5_2", "mlx5_1"], key=natural) == ["mlx5_1", "mlx5_2", "mlx5_10"]


def test_an_nccl_tests_row_with_a_giant_size_does_not_end_the_file():
    header = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong\n")
    big = "        %s     2     float     sum      -1    10.91    0.00    0.00      3    10.70    0.00    0.00      0\n" % HUGE
    sup = "           ²     2     float     sum      -1    10.91    0.00    0.00      ²    10.70    0.00    0.00      0\n"
    row = "        1024     256     float     sum      -1    10.91    0.00    0.00      5    10.70    0.00    0.00      0\n"
    job, findings = parse_job_logs({"nccl-tests.log": "# nThread 1 nGpus 1\n" + header + big + sup + row})
    # before: int() of the giant size raised, and the rest of the file (the corrupt row) was lost
    assert job["nccl_tests"]["wrong_rows"] == 1 and job["nccl_tests"]["result_rows"] == 1
    assert "nccl_tests_wrong_results" in [f["kind"] for f in findings]


def test_retry_count_explained_when_the_timeout_is_not_a_number():
    # before: int('²') raised inside explain(), which then said nothing at all
    for bad in ("²", HUGE):
        text = explain("NCCL_IB_RETRY_CNT", "7", {"NCCL_IB_TIMEOUT": bad})
        assert text and "retries" in text and "(7 + 1)" in text
