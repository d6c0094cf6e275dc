"""tests/tools/heldout_check.py: a held-out case that repeats a known thread or a known capture is
not unseen (the issue-24 method: scored before it is seen, on cases the engine never met)."""

import json

from tests.tools.heldout_check import main, seen_before, sources_of


def _case(root, name, source, files):
    d = root / name
    d.mkdir(parents=True)
    (d / "case.json").write_text(json.dumps({"source": source, "truth": {"category": "healthy"}}))
    for fname, text in files.items():
        (d / fname).write_text(text)
    return d


def test_a_source_with_or_without_its_scheme_is_one_thread():
    assert sources_of("github.com/leptonai/gpud, file pkg/x at commit 1") == {"github.com/leptonai/gpud"}
    assert sources_of("https://www.github.com/NVIDIA/nccl/issues/1837 (description).") == \
        {"github.com/nvidia/nccl/issues/1837"}


def test_a_thread_named_in_words_is_its_address():
    # x-018's 'github.com/data-infra/cube-studio issue #29' came back as ../issues/29 in round x20
    assert sources_of("github.com/data-infra/cube-studio issue #29 (description)") == \
        {"github.com/data-infra/cube-studio", "github.com/data-infra/cube-studio/issues/29"}
    assert "github.com/nvidia/nccl/pull/12" in sources_of("github.com/NVIDIA/nccl PR #12")


def test_cases_that_repeat_a_known_thread_or_capture_are_named(tmp_path, capsys):
    known, held = tmp_path / "known", tmp_path / "held"
    _case(known, "ref-1", "github.com/a/b/issues/1 (whole file)", {"kern.log": "NVRM: Xid 79\n"})
    _case(held, "01-same-thread", "https://github.com/a/b/issues/1.", {"dmesg.txt": "other\n"})
    _case(held, "02-same-bytes", "https://example.org/forum/77", {"dmesg.txt": "\nNVRM: Xid 79\n\n"})
    _case(held, "03-new", "https://github.com/a/b/issues/2", {"dmesg.txt": "NVRM: Xid 48\n"})
    found = dict((c.rsplit("/", 1)[-1], why) for c, why in seen_before(str(held), [str(known)]))
    assert sorted(found) == ["01-same-thread", "02-same-bytes"]
    assert "github.com/a/b/issues/1" in found["01-same-thread"] and "kern.log" in found["02-same-bytes"]
    assert main([str(held), str(known)]) == 1
    out = tmp_path / "sources.txt"
    assert main([str(held), str(known), "--sources-out", str(out)]) == 0
    assert "github.com/a/b/issues/1\n" in out.read_text()
