"""module_utils/gpu_runbook/infiniband/reload.py: what ib_restart method=modules takes out of the
kernel, in which order, and what blocks it -- read from /proc/modules as the kernel writes it."""

from gpu_runbook.infiniband.reload import (
    parse_module_table, reload_argv, reload_plan, unit_presence, unload_order)

# an inbox rdma-core node (Ubuntu 22.04 HWE), trimmed: the 'used by' column ends with a comma
PROC = """\
mlx5_ib 466944 0 - Live 0x0000000000000000
ib_uverbs 200704 2 rdma_ucm,mlx5_ib, Live 0x0000000000000000
mlx5_fwctl 16384 0 - Live 0x0000000000000000
mlx5_core 2412544 2 mlx5_ib,mlx5_fwctl, Live 0x0000000000000000
mlxfw 36864 1 mlx5_core, Live 0x0000000000000000
ib_core 466944 8 rdma_cm,ib_ipoib,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,nvidia_peermem, Live 0x0000000000000000
nvidia_peermem 16384 0 - Live 0x0000000000000000
"""


def test_the_used_by_column_is_read():
    t = parse_module_table(PROC)
    assert t["mlx5_core"] == {"refs": 2, "used_by": ["mlx5_ib", "mlx5_fwctl"]}
    assert t["mlx5_ib"] == {"refs": 0, "used_by": []}
    assert "rdma_ucm" in t["ib_uverbs"]["used_by"]


def test_odd_lines_are_skipped_never_raised_on():
    t = parse_module_table("\n  \nbad;name 1 0 - Live\nfoo 1 x - Live\nbar-baz\n" + "\x00" * 5)
    assert t == {"foo": {"refs": None, "used_by": []}, "bar_baz": {"refs": None, "used_by": []}}
    assert parse_module_table(None) == {}


def test_users_of_mlx5_core_come_out_first_and_ib_core_users_stay():
    plan = reload_plan(parse_module_table(PROC), skip=("nvidia_peermem",))
    assert plan == {"unload": ["mlx5_fwctl", "mlx5_ib", "mlx5_core"], "blocked": []}
    steps = reload_argv("/sbin/modprobe", plan["unload"], True)
    assert [s[1:] for s in steps] == [["-r", "nvidia_peermem"], ["-r", "mlx5_fwctl"], ["-r", "mlx5_ib"],
                                      ["-r", "mlx5_core"], ["mlx5_core"], ["mlx5_ib"], ["mlx5_fwctl"],
                                      ["nvidia_peermem"]]


def test_a_user_of_a_user_comes_out_before_it():
    t = parse_module_table("mlx5_core 1 1 mlx5_ib, Live 0\nmlx5_ib 1 1 mlx5_dpll, Live 0\nmlx5_dpll 1 0 - Live 0\n")
    assert reload_plan(t)["unload"] == ["mlx5_dpll", "mlx5_ib", "mlx5_core"]


def test_unknown_users_vm_drivers_and_stray_references_block_by_name():
    t = parse_module_table(PROC.replace("mlx5_ib,mlx5_fwctl,", "mlx5_ib,mlx5_vdpa,acme_mon,")
                           .replace("mlx5_ib 466944 0", "mlx5_ib 466944 3"))
    plan = reload_plan(t, skip=("nvidia_peermem",))
    names = [b for b, _w in plan["blocked"]]
    words = " ".join(w for _b, w in plan["blocked"])
    assert names == ["mlx5_users", "module_in_use"]
    assert "acme_mon, mlx5_vdpa use mlx5_core" in words and "mlx5_ib (3 reference(s)" in words


def test_peermem_using_the_driver_blocks_when_it_is_not_reloaded_apart():
    t = parse_module_table("mlx5_core 1 1 mlx5_ib, Live 0\nmlx5_ib 1 1 nvidia_peermem, Live 0\n"
                           "nvidia_peermem 1 0 - Live 0\n")
    assert reload_plan(t, skip=("nvidia_peermem",))["blocked"] == []
    assert "nvidia_peermem" in reload_plan(t)["blocked"][0][1]


def test_no_mlx5_core_module_and_a_loop_are_refusals():
    assert reload_plan({})["blocked"][0][0] == "mlx5_not_loaded"
    t = {"mlx5_core": {"refs": 1, "used_by": ["mlx5_ib"]}, "mlx5_ib": {"refs": 1, "used_by": ["mlx5_fwctl"]},
         "mlx5_fwctl": {"refs": 1, "used_by": ["mlx5_ib"]}}
    assert unload_order(t, ["mlx5_core", "mlx5_ib", "mlx5_fwctl"]) == ([], ["mlx5_core", "mlx5_fwctl", "mlx5_ib"])
    assert [b for b, _w in reload_plan(t)["blocked"]] == ["mlx5_users"]


def test_systemctl_cat_says_whether_the_unit_exists():
    assert unit_presence(0, "# /lib/systemd/system/openibd.service\n[Unit]\n", "") is True
    assert unit_presence(1, "", "No files found for openibd.service.\n") is False
    assert unit_presence(1, "", "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                               "Failed to connect to bus: Host is down") is None
    assert unit_presence(0, "", "") is None
