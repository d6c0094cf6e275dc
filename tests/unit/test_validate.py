"""What a value from outside may be (validate.py): whole-string matches, nothing that reads
as an option, no control characters, every refusal naming its option."""

import pytest

from gpu_runbook.validate import check, check_path, check_text, problems

GOOD = {
    "node": ["gpu-r3-n01", "node7.cluster.local", "n_1"],
    "hostlist": ["gpu-r3-n[01-04],gpu-r4-n07", "n1"],
    "job_id": ["12345", "12345_7", "12345+1"],
    "incident": ["INC-42", "gr-20261202114210", "JIRA:OPS.7"],
    "hca": ["mlx5_0", "mlx5_11"],
    "ib_port": ["mlx5_0/1", "mlx5_3"],
    "pci": ["0000:3b:00.0", "00000000:3B:00.0"],
    "unit": ["openibd", "dcgm-exporter", "nvidia-fabricmanager.service", "getty@tty1.service"],
}
HOSTILE = ["-rf", "--all", "; id", "$(id)", "`id`", "a b", "a\nb", "*", "../x", "a\x00b", "x" * 9000, ""]


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_good_values_pass_and_hostile_ones_are_refused_naming_the_option(kind):
    for value in GOOD[kind]:
        assert check(kind, "opt", value) is None, (kind, value)
    for value in HOSTILE:
        why = check(kind, "the_option", value)
        if kind == "hostlist" and value == "a b":
            continue  # 'n1, n2' as people type it: never reaches a command
        assert why and why.startswith("the_option "), (kind, value)
        assert "\n" not in why and "\x00" not in why and len(why) < 300


def test_a_trailing_newline_is_not_a_name():
    # re.match(r'^...$') accepts 'openibd\n'; these checks match the whole string
    for kind, value in (("unit", "openibd\n"), ("node", "n1\n"), ("job_id", "1\n"), ("incident", "INC-1\n")):
        assert check(kind, "x", value), kind


def test_text_refuses_control_characters_and_length_only():
    assert check_text("reason", "Xid 79 on GPU 3 (0000:9a:00.0); -rf * $(x) `y` a'b\"c") is None
    for bad in ("a\nb", "a\x1b]8;;http://x\x07b", "a\x00b", "a\u202eb", "a\x9bb"):
        assert "reason holds control characters" in check_text("reason", bad)
    assert "at most 512" in check_text("reason", "x" * 513, cap=512)


def test_paths_refuse_control_characters_only():
    assert check_path("dir", "../../etc/passwd") is None  # a path is the operator's: where is not checked here
    assert check_path("dir", "/tmp/a\nb")
    assert check_path("dir", "/tmp/a\x00b")
    assert check_path("dir", "/" + "a" * 5000)


def test_problems_checks_list_elements_and_skips_unset_options():
    params = {"units": ["openibd", "-rf"], "incident": None, "name": "", "dir": "/tmp/x"}
    out = problems(params, {"units": "unit", "incident": "incident", "name": "node", "dir": "path"})
    assert len(out) == 1 and out[0].startswith("units '-rf'")
    assert problems({"units": [""]}, {"units": "unit"}), "an empty argv word"
